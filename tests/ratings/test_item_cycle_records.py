"""What the item cycle records without reading it back: the served-audio record when two responses race, and an
answer's event, time spent and next item, each checked against the stored rows or the rule written out here."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem, ItemEvent
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import CaptionScores, item_answer, pairwise_item_submit, thumbs_item_submit
from ratings.services.listening import audio_served_record
from tests.ratings.campaign_data import corpus_build, headphone_pass_give, listened_give

pytestmark = pytest.mark.django_db


@pytest.fixture
def thumbs_items(make_user) -> list[AssignmentItem]:
    dataset, _, systems = corpus_build(clip_count=3)
    rater = make_user("recorder", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="rec", dataset=dataset, task_type="thumbs", systems=systems[:1], human_captions_per_clip=1, raters=[rater]
    )
    return list(campaign.assignments.get().items.order_by("position"))


def test_ranges_of_two_responses_that_read_the_same_record_both_count(thumbs_items):
    item = thumbs_items[0]
    started = timezone.now() - timedelta(seconds=5)
    first_response, second_response = (AssignmentItem.objects.get(pk=item.pk) for _ in range(2))
    audio_served_record(item=first_response, file_name="a.wav", size=100, first=0, count=40, started_at=started)
    # The second response read the row before the first one's record was written: its conditional UPDATE matches
    # nothing, and the locked path merges its range into the stored one.
    later = started + timedelta(seconds=1)
    audio_served_record(item=second_response, file_name="a.wav", size=100, first=30, count=50, started_at=later)
    item.refresh_from_db()
    assert item.audio_served == {"file": "a.wav", "size": 100, "ranges": [[0, 80]]}
    assert item.audio_first_served_at == started
    # Another file (the clip got new audio) starts the record afresh, from that response's time.
    audio_served_record(item=item, file_name="b.wav", size=10, first=5, count=5, started_at=later)
    item.refresh_from_db()
    assert (item.audio_served, item.audio_first_served_at) == (
        {"file": "b.wav", "size": 10, "ranges": [[5, 10]]},
        later,
    )


def test_an_answers_event_time_and_next_item_match_the_stored_rows(thumbs_items):
    first, second, third = (listened_give(item, seconds_ago=60 + 30 * index) for index, item in enumerate(thumbs_items))
    scores = [
        CaptionScores(
            caption_id=caption_id,
            precision=4,
            recall=5,
            fluency=Decimal("-0.5"),
            conciseness=Decimal("0"),
            irrelevance=Decimal("-1.2"),
            comment=f"  caption {number}  ",
        )
        for number, caption_id in enumerate(second.caption_order, start=1)
    ]
    AssignmentItem.objects.filter(pk=second.pk).update(first_shown_at=timezone.now() - timedelta(seconds=50))
    second.refresh_from_db(fields=["first_shown_at"])
    third_done = timezone.now() - timedelta(seconds=20)
    AssignmentItem.objects.filter(pk=third.pk).update(completed_at=third_done)

    next_token = thumbs_item_submit(item=second, scores=scores, synthesized="no", seen_version=0)

    second.refresh_from_db()
    event = ItemEvent.objects.get(item=second)
    # The event's answer is what reading the stored ratings gives (the rater's terms, stripped comments).
    assert event.answer == item_answer(item=second)
    assert event.answer["captions"][0]["comment"] == "caption 1"
    # The time spent runs from the rater's previous first submission (the third item's, later than this one's
    # first view) to this one's.
    assert second.seconds_spent == pytest.approx((second.completed_at - third_done).total_seconds())
    # The next open item: none after it (the third is done), so the first one, before it.
    assert next_token == first.token

    changed = thumbs_item_submit(
        item=second,
        scores=[*scores[:-1], CaptionScores(caption_id=scores[-1].caption_id, precision=1, recall=1)],
        synthesized="yes",
        seen_version=1,
    )
    change = ItemEvent.objects.filter(item=second).latest("pk")
    assert (change.kind, change.previous_answer, changed) == ("changed", event.answer, first.token)
    assert change.answer == item_answer(item=second)


def test_a_pairwise_answer_redirects_to_the_next_open_item_and_logs_the_side(make_user, client):
    dataset, _, _ = corpus_build(clip_count=2)
    rater = make_user("sider", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(name="pws", dataset=dataset, task_type="pairwise", split_counts={"HM": 2}, raters=[rater])
    first, second = campaign.assignments.get().items.order_by("position")
    listened_give(first)
    client.force_login(rater)
    response = client.post(reverse("ratings:item", kwargs={"token": first.token}), {"version": 0, "side": "right"})
    assert response.status_code == 302
    assert response["Location"] == reverse("ratings:item", kwargs={"token": second.token})
    first.refresh_from_db()
    assert ItemEvent.objects.get(item=first).answer == item_answer(item=first) == {"side": "right"}
    # The last open item goes on to the campaign's page.
    listened_give(second)
    last = pairwise_item_submit(item=second, side="none", seen_version=0)
    assert last is None
