"""An item's audio for its rater: the clip's rater copy, no file name; workbook links on S3: a short-lived
pre-signed URL of the copy's random key only."""

from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from corpus.models import Clip
from ratings.services.campaigns import campaign_setup
from ratings.services.rater_audio import rater_audio_redirect_url
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give

pytestmark = pytest.mark.django_db


@pytest.fixture
def rater_item(make_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    dataset, clips, _ = corpus_build(name="audio-owner", clip_count=1)
    clip_audio_attach(clips[0])
    rater = make_user("owner", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(name="aud", dataset=dataset, task_type="pairwise", split_counts={"HC": 1}, raters=[rater])
    return rater, campaign.assignments.get().items.get()


@pytest.fixture
def s3_settings(settings):
    settings.USES_S3_STORAGE = True
    settings.AWS_STORAGE_BUCKET_NAME = "caption-audio"
    settings.AWS_ACCESS_KEY_ID = "test-key-id"
    settings.AWS_SECRET_ACCESS_KEY = "test-secret"
    settings.AWS_S3_REGION_NAME = "eu-west-1"
    settings.AWS_S3_ENDPOINT_URL = None
    settings.RATER_AUDIO_URL_SECONDS = 120
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage"}}
    return settings


def test_local_audio_is_streamed_to_its_rater_without_a_file_name(client, rater_item):
    rater, item = rater_item
    client.force_login(rater)
    url = reverse("ratings:item_audio", args=[item.token])
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "audio/wav"
    assert "Content-Disposition" not in response
    assert b"".join(response.streaming_content)[:4] == b"RIFF"
    ranged = client.get(url, HTTP_RANGE="bytes=0-9")
    assert ranged.status_code == 206 and "Content-Disposition" not in ranged


def test_on_s3_a_workbook_link_gets_a_short_lived_inline_presigned_url_of_the_rater_copy(rater_item, s3_settings):
    _, item = rater_item
    Clip.objects.filter(pk=item.clip_id).update(rater_audio="rater-audio/0123456789abcdef0123456789abcdef.wav")
    location = urlparse(rater_audio_redirect_url(Clip.objects.get(pk=item.clip_id)))
    query = parse_qs(location.query)
    assert location.path.endswith("/rater-audio/0123456789abcdef0123456789abcdef.wav")
    assert query["X-Amz-Expires"] == ["120"] and query["response-content-disposition"] == ["inline"]


def test_on_s3_a_key_that_is_not_a_random_rater_copy_is_never_handed_out(rater_item, s3_settings):
    _, item = rater_item
    clip = Clip.objects.get(pk=item.clip_id)
    clip.rater_audio.name = "audio/audio-owner/clip1-0123456789ab.wav"
    assert rater_audio_redirect_url(clip) is None, "streamed through the app instead"
