"""The dataset page and the import pages: a new dataset from uploaded audio, references, AudioCaps-F; who may use
them."""

import io
import json
import wave
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import ExpertAnnotation
from annotation.services.dataset_uploads import data_file_upload_create, dataset_upload_create, dataset_upload_import
from annotation.services.file_imports import file_import_kind_get
from corpus.models import Caption, Clip, Dataset, DatasetUpload
from corpus.services import import_uploads
from corpus.services.import_uploads import dataset_from_audio_create
from corpus.services.importing import ImportDataError
from corpus.services.references_import import references_import
from corpus.services.system_captions import system_submission_create, system_submission_import_pending
from tests.annotation.audio_helpers import media_files
from tests.annotation.import_posts import post_and_follow
from tests.annotation.table_counts import all_table_counts

pytestmark = pytest.mark.django_db

CAPTIONS_CSV = """file_name,caption_1,caption_2
tone_a.wav,a high tone rings,"a beep, steady"
tone_b,a low hum drones,a low tone
"""


def wav_bytes(*, seconds: float, rate: int = 16000, channels: int = 1) -> bytes:
    """A WAV written by the stdlib, so its length is known independently of the product's decoder."""
    frames = int(seconds * rate)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(bytes(range(256)) * (frames * 2 * channels // 256) + b"\0" * (frames * 2 * channels % 256))
    return buffer.getvalue()


def zip_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", "admin"))
    return client


@pytest.fixture
def post_new_dataset(django_capture_on_commit_callbacks):
    """POST the new-dataset form; the task the page queues on commit runs (eagerly, as Celery does in tests) before
    the redirect is followed to the upload's page."""

    def post(client, *, name: str, audio: list[SimpleUploadedFile], captions=None):
        data = {"name": name, "description": "uploaded in a test", "audio": audio}
        if captions is not None:
            data["captions"] = captions
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("annotation:dataset_new"), data)
        if response.status_code != 302:
            return response
        upload = DatasetUpload.objects.latest("created_at")
        assert response["Location"] == reverse("annotation:dataset_upload", args=[upload.pk])
        return client.get(response["Location"])

    return post


def counts_without_uploads() -> dict[str, int]:
    """Row counts of every importer table; the upload's own record stays (with its problems) by design."""
    return {label: count for label, count in all_table_counts().items() if label != "corpus.DatasetUpload"}


def test_zip_of_wavs_and_a_csv_make_a_dataset_with_clips_audio_and_references(
    admin_client, media_root, post_new_dataset
):
    archive = zip_of(
        {
            "set/tone_a.wav": wav_bytes(seconds=1.5),
            "set/tone_b.wav": wav_bytes(seconds=0.75, rate=8000, channels=2),
            "set/.DS_Store": b"not audio, skipped",
            "__MACOSX/set/._tone_a.wav": b"resource fork, skipped",
        }
    )
    response = post_new_dataset(
        admin_client,
        name="uploaded-set",
        audio=[SimpleUploadedFile("set.zip", archive, content_type="application/zip")],
        captions=SimpleUploadedFile("captions.csv", CAPTIONS_CSV.encode()),
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    dataset = Dataset.objects.get(name="uploaded-set")
    assert dataset.description == "uploaded in a test"
    clips = {clip.external_id: clip for clip in Clip.objects.filter(dataset=dataset)}
    assert sorted(clips) == ["tone_a.wav", "tone_b.wav"]
    assert clips["tone_a.wav"].duration_seconds == pytest.approx(1.5)
    assert (clips["tone_b.wav"].sample_rate, clips["tone_b.wav"].channels) == (8000, 2)
    assert clips["tone_b.wav"].duration_seconds == pytest.approx(0.75)
    assert all(clip.audio and clip.rater_audio for clip in clips.values())
    references = {
        external_id: list(
            clip.captions.filter(role=Caption.Role.REFERENCE).order_by("position").values_list("text", flat=True)
        )
        for external_id, clip in clips.items()
    }
    assert references == {
        "tone_a.wav": ["a high tone rings", "a beep, steady"],
        "tone_b.wav": ["a low hum drones", "a low tone"],
    }
    # the stored audio is the uploaded file, byte for byte
    with clips["tone_a.wav"].audio.open("rb") as handle:
        assert handle.read() == wav_bytes(seconds=1.5)
    page = response.content.decode()
    assert reverse("annotation:dataset", args=[dataset.pk]) in page
    assert '<td>reference captions</td><td class="num">4</td>' in page
    upload = DatasetUpload.objects.get()
    # two steps per file: decoded, then stored with its rater copy
    assert (upload.status, upload.dataset, upload.audio_done, upload.audio_total) == ("imported", dataset, 4, 4)
    # the uploaded files were kept only until the import ended: what is stored is the clips' audio and rater copies
    assert len(media_files(media_root)) == 4
    assert not any("dataset-uploads" in str(path) for path in media_files(media_root))
    status = admin_client.get(reverse("annotation:dataset_upload_status", args=[upload.pk])).json()
    assert status["busy"] is False


def test_several_audio_files_without_captions(admin_client, media_root, post_new_dataset):
    response = post_new_dataset(
        admin_client,
        name="loose-files",
        audio=[
            SimpleUploadedFile("one.wav", wav_bytes(seconds=0.5)),
            SimpleUploadedFile("two.wav", wav_bytes(seconds=0.25)),
        ],
    )
    assert response.status_code == 200
    clips = Clip.objects.filter(dataset__name="loose-files").order_by("external_id")
    assert [(clip.external_id, round(clip.duration_seconds, 3)) for clip in clips] == [
        ("one.wav", 0.5),
        ("two.wav", 0.25),
    ]
    assert not Caption.objects.filter(clip__in=clips).exists()


def test_a_malformed_csv_names_its_row_and_creates_nothing(admin_client, media_root, post_new_dataset):
    before = counts_without_uploads()
    bad_csv = "file_name,caption_1,caption_2\ntone_a.wav,fine,also fine\ntone_b.wav,,missing second\n"
    response = post_new_dataset(
        admin_client,
        name="never-made",
        audio=[
            SimpleUploadedFile(
                "set.zip", zip_of({"tone_a.wav": wav_bytes(seconds=1), "tone_b.wav": wav_bytes(seconds=1)})
            )
        ],
        captions=SimpleUploadedFile("captions.csv", bad_csv.encode()),
    )
    page = response.content.decode()
    assert "Nothing was imported: 1 problem" in page
    assert "captions.csv: row 3: caption_1 of &quot;tone_b.wav&quot; is empty" in page
    assert DatasetUpload.objects.get().status == "failed"
    assert counts_without_uploads() == before
    assert media_files(media_root) == []  # neither clips' audio nor the uploaded files are left


def test_a_caption_row_for_a_file_not_uploaded_is_refused(admin_client, media_root, post_new_dataset):
    response = post_new_dataset(
        admin_client,
        name="never-made",
        audio=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=1))],
        captions=SimpleUploadedFile("captions.csv", CAPTIONS_CSV.encode()),
    )
    assert "captions.csv: row 3: &quot;tone_b&quot; names no uploaded audio file" in response.content.decode()
    assert not Dataset.objects.filter(name="never-made").exists()


def test_what_the_form_can_check_at_once_is_refused_before_anything_is_stored(
    admin_client, media_root, post_new_dataset
):
    Dataset.objects.create(name="taken")
    response = post_new_dataset(
        admin_client, name="taken", audio=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.1))]
    )
    assert response.status_code == 400
    assert "dataset name &quot;taken&quot;: a dataset of this name exists" in response.content.decode()
    response = post_new_dataset(admin_client, name="fresh", audio=[])
    assert response.status_code == 400
    assert not DatasetUpload.objects.exists()
    assert media_files(media_root) == []


def test_a_file_name_with_a_nul_character_is_refused_before_anything_is_stored(media_root):
    with pytest.raises(ImportDataError, match="must not contain a NUL character"):
        dataset_upload_create(
            dataset_name="nul-name",
            description="",
            audio_uploads=[SimpleUploadedFile("a\x00b.wav", wav_bytes(seconds=0.1))],
            captions_upload=None,
            uploaded_by=None,
        )
    assert not DatasetUpload.objects.exists() and media_files(media_root) == []


def test_a_second_delivery_of_the_task_does_nothing(media_root, make_user):
    upload = dataset_upload_create(
        dataset_name="once",
        description="",
        audio_uploads=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.2))],
        captions_upload=None,
        uploaded_by=make_user("boss", "admin"),
    )
    assert len(media_files(media_root)) == 1  # the stored upload
    assert dataset_upload_import(upload_id=upload.pk) == "imported"
    assert dataset_upload_import(upload_id=upload.pk) == "skipped"
    assert Clip.objects.filter(dataset__name="once").count() == 1


def test_an_upload_waiting_for_a_worker_says_so(admin_client, make_user, media_root):
    upload = dataset_upload_create(
        dataset_name="waiting",
        description="",
        audio_uploads=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.2))],
        captions_upload=None,
        uploaded_by=None,
    )
    url = reverse("annotation:dataset_upload", args=[upload.pk])
    assert "Waiting for the worker" in admin_client.get(url).content.decode()
    assert admin_client.get(reverse("annotation:dataset_upload_status", args=[upload.pk])).json()["busy"] is True
    DatasetUpload.objects.filter(pk=upload.pk).update(created_at=upload.created_at - timedelta(minutes=2))
    assert "Is the worker running?" in admin_client.get(url).content.decode()
    # a running import whose worker stopped reporting steps says so
    DatasetUpload.objects.filter(pk=upload.pk).update(
        status="running", updated_at=upload.created_at - timedelta(minutes=6)
    )
    page = admin_client.get(url).content.decode()
    assert "the worker that ran this import has stopped" in page


def test_every_file_that_is_not_audio_is_named_and_nothing_is_stored(media_root):
    uploads = [
        SimpleUploadedFile("good.wav", wav_bytes(seconds=1)),
        SimpleUploadedFile("notes.wav", b"these are not samples"),
        SimpleUploadedFile("pack.zip", zip_of({"inner/broken.flac": b"fLaC but no stream"})),
    ]
    with pytest.raises(ImportDataError) as caught:
        dataset_from_audio_create(dataset_name="never-made", audio_uploads=uploads)
    message = str(caught.value)
    assert "notes.wav: not decodable audio" in message
    assert "pack.zip: inner/broken.flac: not decodable audio" in message
    assert "good.wav" not in message
    assert not Dataset.objects.filter(name="never-made").exists()
    assert media_files(media_root) == []


def test_json_captions_are_accepted(media_root):
    captions = json.dumps({"tone_a.wav": ["first", "second"], "tone_b": "only one"}).encode()
    summary = dataset_from_audio_create(
        dataset_name="json-captions",
        audio_uploads=[
            SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.5)),
            SimpleUploadedFile("tone_b.wav", wav_bytes(seconds=0.5)),
        ],
        captions_upload=SimpleUploadedFile("captions.json", captions),
    )
    assert summary.count("reference captions", "created") == 3
    texts = Caption.objects.filter(clip__dataset__name="json-captions").order_by("clip__external_id", "position")
    assert [(caption.clip.external_id, caption.text) for caption in texts] == [
        ("tone_a.wav", "first"),
        ("tone_a.wav", "second"),
        ("tone_b.wav", "only one"),
    ]


def test_json_captions_name_the_bad_entry(media_root):
    captions = json.dumps({"tone_a.wav": ["fine"], "tone_b.wav": [3]}).encode()
    with pytest.raises(ImportDataError, match=r'captions.json: entry 2 \("tone_b.wav"\) caption 1: expected a string'):
        dataset_from_audio_create(
            dataset_name="never-made",
            audio_uploads=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.5))],
            captions_upload=SimpleUploadedFile("captions.json", captions),
        )


def test_limits_on_files_and_unpacked_bytes(media_root, monkeypatch):
    monkeypatch.setattr(import_uploads, "MAX_AUDIO_FILES", 2)
    files = {f"c{index}.wav": wav_bytes(seconds=0.1) for index in range(3)}
    with pytest.raises(ImportDataError, match=r"many.zip: c2.wav: more than 2 audio files"):
        dataset_from_audio_create(
            dataset_name="never-made", audio_uploads=[SimpleUploadedFile("many.zip", zip_of(files))]
        )
    monkeypatch.setattr(import_uploads, "MAX_AUDIO_FILES", 50)
    # A zip that unpacks past the byte limit is refused from its directory, before anything is unpacked.
    monkeypatch.setattr(import_uploads, "MAX_AUDIO_BYTES", 100_000)
    bomb = zip_of({"silence.wav": b"\0" * 200_000})
    assert len(bomb) < 100_000
    with pytest.raises(ImportDataError, match=r"bomb.zip: unpacks to"):
        dataset_from_audio_create(dataset_name="never-made", audio_uploads=[SimpleUploadedFile("bomb.zip", bomb)])
    assert not Dataset.objects.exists()


def test_same_file_name_twice_and_existing_dataset_are_refused(media_root):
    twice = [
        SimpleUploadedFile(
            "a.zip", zip_of({"x/tone.wav": wav_bytes(seconds=0.1), "y/tone.wav": wav_bytes(seconds=0.2)})
        )
    ]
    with pytest.raises(ImportDataError, match=r'a.zip: y/tone.wav: another file has the same name "tone.wav"'):
        dataset_from_audio_create(dataset_name="never-made", audio_uploads=twice)
    Dataset.objects.create(name="taken")
    with pytest.raises(ImportDataError, match=r'dataset name "taken": a dataset of this name exists'):
        dataset_from_audio_create(
            dataset_name="taken", audio_uploads=[SimpleUploadedFile("t.wav", wav_bytes(seconds=0.1))]
        )


def test_files_stored_before_a_failing_commit_are_deleted(media_root, monkeypatch):
    """A failure inside the transaction, after every file and rater copy was stored, leaves no file behind."""
    real_store = import_uploads.references_store

    def store_then_fail(**kwargs):
        real_store(**kwargs)
        assert len(media_files(media_root)) == 2, "the audio and its rater copy were stored"
        raise RuntimeError("database went away")

    monkeypatch.setattr(import_uploads, "references_store", store_then_fail)
    with pytest.raises(RuntimeError):
        dataset_from_audio_create(
            dataset_name="never-made",
            audio_uploads=[SimpleUploadedFile("t.wav", wav_bytes(seconds=0.1))],
            captions_upload=SimpleUploadedFile("c.json", b'{"t.wav": ["a tone"]}'),
        )
    assert not Dataset.objects.filter(name="never-made").exists()
    assert not Caption.objects.exists()
    assert media_files(media_root) == []


def test_references_page_imports_into_an_existing_dataset(admin_client, django_capture_on_commit_callbacks):
    dataset = Dataset.objects.create(name="refs-here")
    page = admin_client.get(reverse("annotation:import_references"), {"dataset": dataset.pk})
    assert 'value="refs-here"' in page.content.decode()
    response = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        reverse("annotation:import_references"),
        {"dataset": "refs-here", "file": SimpleUploadedFile("refs.csv", CAPTIONS_CSV.encode())},
    )
    assert response.status_code == 200
    assert "Imported" in response.content.decode()
    assert sorted(Clip.objects.filter(dataset=dataset).values_list("external_id", flat=True)) == [
        "tone_a.wav",
        "tone_b",
    ]
    assert Caption.objects.filter(clip__dataset=dataset, role=Caption.Role.REFERENCE).count() == 4
    upload = DatasetUpload.objects.get()
    assert (upload.kind, upload.status, upload.dataset) == ("references", DatasetUpload.Status.IMPORTED, dataset)


def test_audiocaps_f_page_imports_gold_and_shows_named_errors(
    admin_client, shared_dir, media_root, django_capture_on_commit_callbacks
):
    full = json.loads((shared_dir / "datasets" / "audiocaps_f_annotations.json").read_text())
    keys = list(full)[:2]
    content = json.dumps({key: full[key] for key in keys}).encode()
    url = reverse("annotation:import_audiocaps_f")
    response = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        url,
        {"dataset": "acf-slice", "file": SimpleUploadedFile("slice.json", content)},
    )
    assert response.status_code == 200, response.content.decode()[:2000]
    gold = ExpertAnnotation.objects.filter(clip__dataset__name="acf-slice", status=ExpertAnnotation.Status.GOLD)
    assert sorted(gold.values_list("clip__file_name", flat=True)) == sorted(keys)

    before = counts_without_uploads()
    broken = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        url,
        {"dataset": "acf-slice", "file": SimpleUploadedFile("broken.json", b'{"Yabc.wav": [1, 2')},
    )
    page = broken.content.decode()
    assert "Nothing was imported" in page
    assert "broken.json: not valid JSON (line 1" in page
    assert counts_without_uploads() == before
    assert media_files(media_root) == []  # the stored upload is deleted once the import ends


def test_a_data_file_over_the_limit_is_refused_before_it_is_stored(admin_client, media_root, monkeypatch):
    monkeypatch.setattr(import_uploads, "MAX_DATA_FILE_BYTES", 10)
    response = admin_client.post(
        reverse("annotation:import_references"),
        {"dataset": "never-made", "file": SimpleUploadedFile("big.csv", b"file_name,caption_1\n" * 3)},
    )
    assert response.status_code == 400
    assert "big.csv: larger than the limit" in response.content.decode()
    assert not DatasetUpload.objects.exists() and media_files(media_root) == []


def test_audio_for_an_existing_datasets_clips(admin_client, media_root, django_capture_on_commit_callbacks):
    # Given a dataset whose clips came from a references file, without audio
    references_import(content=CAPTIONS_CSV.encode(), source_name="refs.csv", dataset_name="no-audio")
    dataset = Dataset.objects.get(name="no-audio")
    url = reverse("annotation:dataset_audio", args=[dataset.pk])
    assert url in admin_client.get(reverse("annotation:dataset", args=[dataset.pk])).content.decode()

    # When one of the files does not decode, it is named and no clip gets audio
    bad = post_and_follow(
        admin_client,
        django_capture_on_commit_callbacks,
        url,
        {"audio": [SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.5)), SimpleUploadedFile("tone_b.ogg", b"no")]},
    )
    assert "tone_b.ogg: not decodable audio" in bad.content.decode()
    assert not Clip.objects.filter(dataset=dataset).exclude(audio="").exists()

    # When a zip holds both clips' audio and a file of no clip, both clips get theirs and the stray file is listed
    archive = zip_of(
        {
            "set/tone_a.wav": wav_bytes(seconds=0.5),
            "set/tone_b.wav": wav_bytes(seconds=0.25),
            "set/other.wav": wav_bytes(seconds=0.1),
        }
    )
    good = post_and_follow(
        admin_client, django_capture_on_commit_callbacks, url, {"audio": [SimpleUploadedFile("set.zip", archive)]}
    )
    page = good.content.decode()
    assert "no clip matches other.wav" in page
    durations = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "duration_seconds"))
    assert durations == {"tone_a.wav": pytest.approx(0.5), "tone_b": pytest.approx(0.25)}
    upload = DatasetUpload.objects.latest("created_at")
    assert (upload.kind, upload.status, upload.summary["counts"]["clip audio"]["created"]) == (
        "clip_audio",
        "imported",
        2,
    )


def test_dataset_page_lists_clips_and_links_dashboards_and_imports(admin_client, media_root):
    dataset_from_audio_create(
        dataset_name="with-page",
        audio_uploads=[SimpleUploadedFile("tone_a.wav", wav_bytes(seconds=0.5))],
        captions_upload=SimpleUploadedFile("c.json", b'{"tone_a.wav": ["a tone"]}'),
    )
    dataset = Dataset.objects.get(name="with-page")
    clip = Clip.objects.get(dataset=dataset)
    page = admin_client.get(reverse("annotation:dataset", args=[dataset.pk])).content.decode()
    for url in (
        reverse("metrics_bridge:dataset_agreement", args=[dataset.pk]),
        reverse("metrics_bridge:leaderboard", args=[dataset.pk]),
        reverse("annotation:clip-audio", args=[clip.pk]),
        f"{reverse('ratings:import_judgements')}?dataset={dataset.pk}",
        f"{reverse('metrics_bridge:system_submit')}?dataset={dataset.pk}",
        f"{reverse('metrics_bridge:annotation_agreement')}?dataset={dataset.pk}",
        reverse("metrics_bridge:benchmark"),
        reverse("annotation:dataset_audio", args=[dataset.pk]),
    ):
        assert url in page, url
    assert "tone_a.wav" in page
    home = admin_client.get(reverse("annotation:home")).content.decode()
    assert reverse("annotation:dataset", args=[dataset.pk]) in home
    assert "/api/clips/" not in home


@pytest.mark.parametrize("role", ["annotator", "reviewer", "rater"])
def test_import_pages_are_for_admins_only(client, make_user, role):
    client.force_login(make_user("someone", role))
    upload = DatasetUpload.objects.create(dataset_name="someone-elses")
    assert client.get(reverse("annotation:dataset_upload", args=[upload.pk])).status_code == 403
    assert client.get(reverse("annotation:dataset_upload_status", args=[upload.pk])).status_code == 403
    dataset = Dataset.objects.create(name="theirs")
    for url in (
        reverse("annotation:dataset_new"),
        reverse("annotation:import_references"),
        reverse("annotation:import_audiocaps_f"),
        reverse("annotation:dataset_audio", args=[dataset.pk]),
    ):
        assert client.get(url).status_code == 403, url
        assert client.post(url, {}).status_code == 403, url
    assert client.get(reverse("ratings:import_judgements")).status_code == 403


def test_dataset_page_roles(client, make_user):
    dataset = Dataset.objects.create(name="seen")
    url = reverse("annotation:dataset", args=[dataset.pk])
    client.force_login(make_user("rater-only", "rater"))
    assert client.get(url).status_code == 403
    client.force_login(make_user("annotator-only", "annotator"))
    page = client.get(url)
    assert page.status_code == 200
    # imports and runs are for admins: an annotator gets the corpus only
    assert reverse("ratings:import_judgements") not in page.content.decode()


def test_a_kind_of_file_nobody_registered_is_refused_and_a_worker_finding_one_says_so(media_root, make_user):
    with pytest.raises(ImportDataError, match='"spreadsheet" is not a kind of file this platform imports'):
        data_file_upload_create(
            kind="spreadsheet",
            dataset_name="never-made",
            upload=SimpleUploadedFile("x.json", b"[]"),
            uploaded_by=None,
        )
    assert not DatasetUpload.objects.exists() and media_files(media_root) == []
    # a record of a kind this process does not know (an app left out of a worker) fails by name, not silently
    upload = data_file_upload_create(
        kind="references", dataset_name="later", upload=SimpleUploadedFile("r.csv", b"x"), uploaded_by=None
    )
    DatasetUpload.objects.filter(pk=upload.pk).update(kind="spreadsheet")
    assert dataset_upload_import(upload_id=upload.pk) == DatasetUpload.Status.FAILED
    assert DatasetUpload.objects.get(pk=upload.pk).errors == [
        '"spreadsheet" is not a kind of file this platform imports'
    ]
    assert media_files(media_root) == []


def test_judgement_files_are_a_registered_kind():
    assert file_import_kind_get("judgements").page == "ratings:import_judgements"


def test_a_second_delivery_of_a_system_submission_does_nothing(make_user, media_root):
    dataset = Dataset.objects.create(name="subs")
    Clip.objects.create(dataset=dataset, external_id="a.wav", file_name="a.wav")
    submission = system_submission_create(
        uploaded_file=SimpleUploadedFile("s.csv", b"file_name,caption_predicted\na.wav,a caption\n"),
        dataset=dataset,
        system_name="sys",
        uploaded_by=None,
    )
    assert system_submission_import_pending(submission_id=submission.pk) == "imported"
    assert system_submission_import_pending(submission_id=submission.pk) == "skipped"
    assert Caption.objects.filter(system__name="sys").count() == 1
