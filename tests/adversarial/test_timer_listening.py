"""Attack: unlock submitting by time alone, without the audio ever being fetched (or only part of it).

Against the old main "listened" was unlocked by a timer: opening 16 items, waiting 6 s and posting
"listened" for each was accepted without any audio being fetched. Here the rater tries that, then fetching
half of a file by ranges, a HEAD request, a fetch stopped after its first chunk, and fetching everything and
posting at once. Each is refused with 400 and a message; only the whole file and the clip's duration since
its first byte unlock the item.
"""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from corpus.models import Clip
from ratings.models import AssignmentItem
from ratings.services.campaigns import campaign_setup
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give

pytestmark = pytest.mark.django_db


@pytest.fixture
def sixteen_items(make_user):
    dataset, clips, _ = corpus_build(name="timer", clip_count=16, reference_count=2, system_names=())
    for clip in clips:
        clip_audio_attach(clip, seconds=0.3)
    rater = make_user("timer-rater", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="timer-pairs", dataset=dataset, task_type="pairwise", split_counts={"HC": 16}, judgements_per_item=1,
        raters=[rater],
    )  # fmt: skip
    client = Client()
    client.force_login(rater)
    return client, list(campaign.assignments.get().items.order_by("position"))


def _listened(client, item):
    return client.post(reverse("ratings:item_listened", args=[item.token]), "{}", content_type="application/json")


def _long_ago(item, seconds: float = 60) -> None:
    """What waiting would do, without a test that sleeps: the item was opened `seconds` ago."""
    AssignmentItem.objects.filter(pk=item.pk).update(first_shown_at=timezone.now() - timedelta(seconds=seconds))


def test_opening_items_waiting_and_posting_listened_is_refused(sixteen_items):
    client, items = sixteen_items
    for item in items:
        assert client.get(reverse("ratings:item", args=[item.token])).status_code == 200
        _long_ago(item)
    for item in items:
        response = _listened(client, item)
        assert response.status_code == 400 and "has not been played yet" in response.json()["error"]
        refused = client.post(reverse("ratings:item", args=[item.token]), {"side": "left", "version": "0"})
        assert refused.status_code == 400 and "listen to the clip before submitting" in refused.content.decode()
    assert not AssignmentItem.objects.filter(listened_at__isnull=False).exists()
    assert not AssignmentItem.objects.filter(completed_at__isnull=False).exists()


def test_half_the_file_a_head_request_or_a_dropped_download_do_not_count(sixteen_items):
    client, items = sixteen_items
    item = items[0]
    client.get(reverse("ratings:item", args=[item.token]))
    audio_url = reverse("ratings:item_audio", args=[item.token])
    size = Clip.objects.get(pk=item.clip_id).rater_audio.size
    client.head(audio_url)
    assert AssignmentItem.objects.get(pk=item.pk).audio_served == {}, "HEAD sends no audio"
    half = client.get(audio_url, HTTP_RANGE=f"bytes=0-{size // 2 - 1}")
    assert half.status_code == 206 and len(b"".join(half.streaming_content)) == size // 2
    AssignmentItem.objects.filter(pk=item.pk).update(audio_first_served_at=timezone.now() - timedelta(minutes=5))
    response = _listened(client, item)
    assert response.status_code == 400 and "only 50% of the clip's audio" in response.json()["error"]
    # The same half again, and a download dropped after its first chunk (no more is counted than was read).
    client.get(audio_url, HTTP_RANGE=f"bytes=0-{size // 2 - 1}")
    dropped = client.get(audio_url, HTTP_RANGE=f"bytes={size // 2}-")
    next(iter(dropped.streaming_content))
    dropped._iterator.close()  # what the server does when the client goes away: the body is closed, unread
    served = AssignmentItem.objects.get(pk=item.pk).audio_served
    assert served["ranges"][0][0] == 0 and served["ranges"][-1][1] < size, served
    assert _listened(client, item).status_code == 400


def test_fetching_everything_and_posting_at_once_is_refused_until_the_clip_could_have_played(sixteen_items):
    client, items = sixteen_items
    item = items[1]
    Clip.objects.filter(pk=item.clip_id).update(duration_seconds=30)  # a clip too long to play during the test
    client.get(reverse("ratings:item", args=[item.token]))
    audio = client.get(reverse("ratings:item_audio", args=[item.token]))
    b"".join(audio.streaming_content)
    response = _listened(client, item)
    assert response.status_code == 400 and "needs 30.0 s of listening" in response.json()["error"]
    # 31 s later (the clip has played): accepted, and the item can be submitted.
    AssignmentItem.objects.filter(pk=item.pk).update(audio_first_served_at=timezone.now() - timedelta(seconds=31))
    assert _listened(client, item).json() == {"listened": True}
    submitted = client.post(reverse("ratings:item", args=[item.token]), {"side": "left", "version": "0"})
    assert submitted.status_code == 302


def test_byte_ranges_from_anywhere_add_up(sixteen_items):
    """A player that fetches the file in pieces, in any order, is counted once it has it all."""
    client, items = sixteen_items
    item = items[2]
    client.get(reverse("ratings:item", args=[item.token]))
    audio_url = reverse("ratings:item_audio", args=[item.token])
    size = Clip.objects.get(pk=item.clip_id).rater_audio.size
    third = size // 3
    for header in (f"bytes={third}-{2 * third}", "bytes=-" + str(size - 2 * third), f"bytes=0-{third}"):
        b"".join(client.get(audio_url, HTTP_RANGE=header).streaming_content)
    assert AssignmentItem.objects.get(pk=item.pk).audio_served["ranges"] == [[0, size]]
    AssignmentItem.objects.filter(pk=item.pk).update(audio_first_served_at=timezone.now() - timedelta(seconds=5))
    assert _listened(client, item).status_code == 200
