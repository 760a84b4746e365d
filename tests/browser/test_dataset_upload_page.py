"""The new-dataset upload page in headless Chromium: WAV files and a captions CSV in, a dataset with clips and
references out; the error list for a bad captions file; the upload's page following the worker; desktop and 390 px."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Count

from annotation.services.dataset_uploads import dataset_upload_create, dataset_upload_import
from corpus.models import Caption, Clip, Dataset, DatasetUpload
from tests.annotation.test_import_pages import wav_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_upload_audio_and_captions_then_open_the_dataset_page(
    page_for, live_server, make_user, media_root, artifacts, tmp_path
):
    for name, seconds in (("rain.wav", 1.0), ("door.wav", 0.5)):
        (tmp_path / name).write_bytes(wav_bytes(seconds=seconds))
    (tmp_path / "captions.csv").write_text("file_name,caption_1\nrain.wav,rain falls on a roof\ndoor,a door slams\n")
    (tmp_path / "bad.csv").write_text("file_name,caption_1\nrain.wav,rain falls\nwind.wav,wind howls\n")
    page = page_for(make_user("organiser", staff=True))

    # Given the home page, the way to a new dataset
    page.goto(f"{live_server.url}/")
    page.click("text=New dataset from audio")
    page.wait_for_selector("h1:text('New dataset from audio')")
    page.fill("input[name='name']", "field-recordings")

    # When more files are chosen than a form may carry, the page says so before sending anything
    many = tmp_path / "many"
    many.mkdir()
    for index in range(101):
        (many / f"c{index}.wav").write_bytes(b"RIFF")
    page.set_input_files("input[name='audio']", sorted(str(path) for path in many.iterdir()))
    message = page.eval_on_selector("input[name='audio']", "input => input.validationMessage")
    assert message == "101 files chosen; a form takes at most 100: put them in a zip archive instead."
    page.click("form.import-form button[type='submit']")
    assert page.url.endswith("/datasets/new/") and not DatasetUpload.objects.exists()
    page.set_input_files("input[name='audio']", [str(tmp_path / "rain.wav"), str(tmp_path / "door.wav")])
    assert page.eval_on_selector("input[name='audio']", "input => input.validity.valid")

    # When the captions name a file that was not uploaded, the upload's page lists the row and nothing is made
    page.set_input_files("input[name='captions']", str(tmp_path / "bad.csv"))
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")
    page.wait_for_selector(".import-problems li")
    problems = page.locator(".import-problems li").all_inner_texts()
    assert problems == ['bad.csv: row 3: "wind.wav" names no uploaded audio file']
    assert not Dataset.objects.filter(name="field-recordings").exists()
    page.screenshot(path=str(artifacts / "dataset_upload_failed.png"), full_page=True)

    # When the files are chosen again with a good captions file
    page.click("text=Upload again")
    page.wait_for_selector("h1:text('New dataset from audio')")
    page.fill("input[name='name']", "field-recordings")
    page.set_input_files("input[name='audio']", [str(tmp_path / "rain.wav"), str(tmp_path / "door.wav")])
    page.set_input_files("input[name='captions']", str(tmp_path / "captions.csv"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "dataset_new_390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1200, "height": 900})
    page.screenshot(path=str(artifacts / "dataset_new_desktop.png"), full_page=True)
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")

    # Then the dataset exists with both clips, their audio and the references
    page.wait_for_selector(".upload-status strong:text('Imported')")
    dataset = Dataset.objects.get(name="field-recordings")
    clips = {clip.external_id: clip for clip in Clip.objects.filter(dataset=dataset)}
    assert sorted(clips) == ["door.wav", "rain.wav"]
    assert clips["rain.wav"].duration_seconds == pytest.approx(1.0)
    assert all(clip.audio for clip in clips.values())
    references = Caption.objects.filter(clip__dataset=dataset, role=Caption.Role.REFERENCE)
    assert sorted(references.values_list("clip__external_id", "text")) == [
        ("door.wav", "a door slams"),
        ("rain.wav", "rain falls on a roof"),
    ]
    summary = page.locator("table.import-summary").inner_text()
    assert "clips" in summary and "reference captions" in summary

    # And the dataset's page lists the clips, each name linking to its audio
    page.click("text=Open the dataset's page")
    page.wait_for_selector("h1:text('Dataset field-recordings')")
    assert page.locator("table.dataset-clips tbody tr").count() == 2
    assert page.locator("table.dataset-clips a[title='Listen']").all_inner_texts() == ["door.wav", "rain.wav"]
    page.screenshot(path=str(artifacts / "dataset_page_desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "dataset_page_390.png"), full_page=True)
    # nothing on the page is wider than the phone's screen
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_upload_page_follows_the_worker(page_for, live_server, make_user, media_root, artifacts):
    """The page of an upload still waiting refreshes itself (static/core/js/live.js) when the worker has imported it."""
    admin = make_user("organiser", staff=True)
    upload = dataset_upload_create(
        dataset_name="followed",
        description="",
        audio_uploads=[SimpleUploadedFile("tone.wav", wav_bytes(seconds=0.5))],
        captions_upload=None,
        uploaded_by=admin,
    )
    page = page_for(admin)
    page.goto(f"{live_server.url}/datasets/uploads/{upload.pk}/")
    page.wait_for_selector(".upload-status strong:text('Waiting for a worker')")
    assert dataset_upload_import(upload_id=upload.pk) == "imported"  # what the worker's task does
    page.wait_for_selector(".upload-status strong:text('Imported')")
    page.wait_for_selector("text=Open the dataset's page")
    assert page.locator("table.import-summary").inner_text().count("clips") >= 1
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "dataset_upload_done_390.png"), full_page=True)


def test_a_judgement_file_through_its_page_at_phone_width(page_for, live_server, make_user, artifacts, shared_dir):
    page = page_for(make_user("organiser", staff=True))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/ratings/staff/import/judgements/")
    page.fill("input[name='dataset']", "brace-main")
    page.set_input_files("input[name='file']", str(shared_dir / "datasets" / "brace_format" / "brace_main_sample.json"))
    page.screenshot(path=str(artifacts / "import_judgements_390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    with page.expect_navigation():
        page.click("form.import-form button[type='submit']")
    # the page stores the file, a worker (eager here) imports it, and the upload's page shows the outcome
    page.wait_for_selector(".upload-status strong:text('Imported')")
    assert page.inner_text("h1") == "Import a judgement file into brace-main"
    rows = dict(
        (row.split("\t")[0], row.split("\t")[1])
        for row in page.locator("table.import-summary tbody tr").all_inner_texts()
    )
    assert rows["pairs"] != "0" and rows["pairs"] == str(
        Dataset.objects.get(name="brace-main").clips.aggregate(n=Count("pairs"))["n"]
    )
    page.screenshot(path=str(artifacts / "import_judgements_done_390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
