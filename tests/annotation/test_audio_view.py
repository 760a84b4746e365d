"""GET /clips/<id>/audio/: byte ranges, who may listen, and the S3 redirect."""

from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from corpus.audio import RangeNotSatisfiableError, byte_range_parse
from corpus.models import Clip
from corpus.services.audio import clip_attach_audio


@pytest.fixture
def clip_with_audio(shared_dir, media_root, clip):
    clip_attach_audio(clip=clip, file=shared_dir / "datasets" / "audio" / "34.wav", file_name="34.wav")
    return clip


@pytest.fixture
def audio_bytes(shared_dir):
    return (shared_dir / "datasets" / "audio" / "34.wav").read_bytes()


@pytest.fixture
def reader_client(client, make_user):
    client.force_login(make_user("anna", "annotator"))
    return client


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.django_db
def test_whole_file_without_range(reader_client, clip_with_audio, audio_bytes):
    response = reader_client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk]))

    assert response.status_code == 200
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "audio/wav"
    assert response["Content-Length"] == str(len(audio_bytes))
    assert _body(response) == audio_bytes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=100-199", 100, 199),
        ("bytes=0-0", 0, 0),
        ("bytes=-50", None, None),
        ("bytes=3528000-", 3528000, None),
        ("bytes=10-99999999", 10, None),
    ],
)
def test_range_requests_get_206_with_the_right_bytes(reader_client, clip_with_audio, audio_bytes, header, first, last):
    size = len(audio_bytes)
    first = size - 50 if first is None else first
    last = size - 1 if last is None else last

    response = reader_client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk]), HTTP_RANGE=header)

    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {first}-{last}/{size}"
    assert response["Content-Length"] == str(last - first + 1)
    assert response["Accept-Ranges"] == "bytes"
    assert _body(response) == audio_bytes[first : last + 1]


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["bytes=3528272-", "bytes=99999999-100000000", "bytes=-0"])
def test_unsatisfiable_range_gets_416(reader_client, clip_with_audio, audio_bytes, header):
    assert len(audio_bytes) == 3528272
    response = reader_client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk]), HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(audio_bytes)}"


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["bytes=0-10,20-30", "items=0-10", "bytes=50-10", "garbage"])
def test_ranges_the_server_may_ignore_get_the_whole_file(reader_client, clip_with_audio, audio_bytes, header):
    response = reader_client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk]), HTTP_RANGE=header)
    assert response.status_code == 200
    assert _body(response) == audio_bytes


def test_byte_range_parse_edge_cases():
    assert byte_range_parse(None, 100) is None
    assert byte_range_parse("bytes=-500", 100) == (0, 99)
    assert byte_range_parse("bytes=99-", 100) == (99, 99)
    with pytest.raises(RangeNotSatisfiableError):
        byte_range_parse("bytes=0-", 0)


@pytest.mark.django_db
def test_anonymous_users_go_to_login_and_users_without_a_role_are_refused(client, make_user, clip_with_audio):
    url = reverse("annotation:clip-audio", args=[clip_with_audio.pk])

    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")

    client.force_login(make_user("nobody"))
    assert client.get(url).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("role,status", [("annotator", 200), ("reviewer", 200), ("rater", 403)])
def test_corpus_readers_may_listen_raters_only_through_their_items(client, make_user, clip_with_audio, role, status):
    """Raters get audio by their item's own URL (ratings); a clip id URL would let them enumerate clips."""
    client.force_login(make_user(f"user-{role}", role))
    assert client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk])).status_code == status


@pytest.mark.django_db
def test_an_annotator_rating_in_an_active_campaign_on_the_dataset_is_locked_out(client, make_user, clip_with_audio):
    from ratings.models import Assignment, Campaign

    annotator = make_user("dual", "annotator", "rater")
    client.force_login(annotator)
    url = reverse("annotation:clip-audio", args=[clip_with_audio.pk])
    assert client.get(url).status_code == 200
    campaign = Campaign.objects.create(name="running", dataset=clip_with_audio.dataset, task_type="thumbs")
    Assignment.objects.create(campaign=campaign, rater=annotator)
    response = client.get(url)
    assert response.status_code == 403 and b"hidden from you until the study is closed" in response.content
    Campaign.objects.filter(pk=campaign.pk).update(is_active=False)
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_admins_may_listen_and_missing_audio_is_404(client, make_user, clip_with_audio):
    client.force_login(make_user("boss", staff=True))
    assert client.get(reverse("annotation:clip-audio", args=[clip_with_audio.pk])).status_code == 200
    silent = Clip.objects.create(dataset=clip_with_audio.dataset, external_id="silent")
    assert client.get(reverse("annotation:clip-audio", args=[silent.pk])).status_code == 404
    assert client.get(reverse("annotation:clip-audio", args=[999999])).status_code == 404


@pytest.mark.django_db
def test_with_s3_storage_the_view_redirects_to_a_presigned_url(reader_client, clip, settings):
    """Presigning is computed locally by boto3, so this needs no network."""
    settings.USES_S3_STORAGE = True
    settings.AWS_STORAGE_BUCKET_NAME = "caption-audio"
    settings.AWS_ACCESS_KEY_ID = "test-key-id"
    settings.AWS_SECRET_ACCESS_KEY = "test-secret"
    settings.AWS_S3_REGION_NAME = "eu-west-1"
    settings.AWS_S3_ENDPOINT_URL = None
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    Clip.objects.filter(pk=clip.pk).update(audio="audio/audio-test/c1-0123456789ab.wav")

    response = reader_client.get(reverse("annotation:clip-audio", args=[clip.pk]))

    assert response.status_code == 302
    location = urlparse(response["Location"])
    assert "caption-audio" in location.netloc + location.path
    assert location.path.endswith("/audio/audio-test/c1-0123456789ab.wav")
    query = parse_qs(location.query)
    # Signature version 2 or 4, depending on AWS_S3_SIGNATURE_VERSION: either way signed with the configured key.
    assert "Signature" in query or "X-Amz-Signature" in query
    assert "test-key-id" in (query.get("AWSAccessKeyId") or query["X-Amz-Credential"])[0]
    assert "no-store" in response["Cache-Control"]
