"""The statements every answer and every "listened" report run, compiled once per process: the rows they give equal
the ORM's own evaluation of the same querysets (an independent path: Django compiles them there), each value lands
in its own slot, and nothing is compiled again after the first use.

The row lock itself, the version checks and the refusals are exercised by test_judgements, test_stale_submits and
test_concurrent_submits (on PostgreSQL too).
"""

from datetime import timedelta
from datetime import timezone as dt_timezone
from unittest import mock

import pytest
from django.db import transaction
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from ratings.models import AssignmentItem, Campaign
from ratings.services import judgements, listening
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import CaptionScores, thumbs_item_submit
from tests.ratings.campaign_data import audio_served_give, corpus_build, headphone_pass_give, listened_give


@pytest.fixture
def items(make_user) -> list[AssignmentItem]:
    """A rater's three THumBS items in order, the first answered (so the next has a previous first submission)."""
    dataset, _, systems = corpus_build(clip_count=3)
    rater = make_user("compiled-statements", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="cs", dataset=dataset, task_type="thumbs", systems=systems[:1], human_captions_per_clip=1, raters=[rater]
    )
    ordered = list(campaign.assignments.get().items.select_related("assignment__campaign").order_by("position"))
    first = listened_give(ordered[0])
    scores = [
        CaptionScores(caption_id=caption_id, precision=4, recall=3, fluency=0, conciseness=0, irrelevance=0)
        for caption_id in first.caption_order
    ]
    thumbs_item_submit(item=first, scores=scores, synthesized="no", seen_version=first.version)
    return [AssignmentItem.objects.select_related("assignment__campaign").get(pk=item.pk) for item in ordered]


def _lock_values(item: AssignmentItem, now) -> dict:
    return {
        "item_id": item.pk,
        "campaign_id": item.assignment.campaign_id,
        "rater_id": item.assignment.rater_id,
        "now": now,
        "assignment_id": item.assignment_id,
        "position": item.position,
    }


def _orm_lock_row(item: AssignmentItem, now) -> dict:
    return judgements._lock_read(**_lock_values(item, now)).get()


@pytest.mark.django_db
def test_the_submit_lock_reads_the_row_the_orm_reads(items):
    answered, middle, last = items
    now = timezone.now()
    with transaction.atomic():
        locked, row = judgements._lock_for_submit(middle, now=now)
        reference = _orm_lock_row(middle, now)
    assert row == reference
    # and the reference is what the rows hold
    answered_at = AssignmentItem.objects.get(pk=answered.pk).completed_at
    assert row["is_open"] is True
    assert row["previous_completed_at"] == answered_at and answered_at.tzinfo is not None
    assert row["next_open_token"] == last.token
    assert (locked.version, locked.completed_at, locked.listened_at) == (middle.version, None, None)


@pytest.mark.django_db
def test_the_submit_lock_locks_the_item_row_alone(items):
    with transaction.atomic():
        judgements._lock_for_submit(items[1], now=timezone.now())
    sql = judgements._LOCK_FOR_SUBMIT._compiled_for("default").sql
    # past the last subquery is the locking statement's own FROM: the item's table alone (a joined campaign row
    # would be locked too, and every participant of a study would wait on it)
    outer = sql.rsplit('AS "next_open_token"', 1)[1]
    assert outer.startswith(' FROM "ratings_assignmentitem" WHERE') and "JOIN" not in outer


@pytest.mark.django_db
def test_each_value_of_the_submit_lock_binds_its_own_slot(items):
    answered, middle, last = items
    answered_at = AssignmentItem.objects.get(pk=answered.pk).completed_at
    with transaction.atomic():
        # the last item goes on to the first open one before it: the position was bound where it belongs
        assert judgements._lock_for_submit(last, now=timezone.now())[1]["next_open_token"] == middle.token
        # `now` before the answer: no previous submission yet
        earlier = judgements._lock_for_submit(middle, now=answered_at - timedelta(seconds=1))[1]
        assert earlier["previous_completed_at"] is None
        assert earlier == _orm_lock_row(middle, answered_at - timedelta(seconds=1))
        # a `now` an hour after the answer, given in another time zone, is the same instant (the value is adapted
        # as the backend adapts a DateTimeField's: on SQLite a naive UTC string, else a later-looking local one)
        elsewhere = (answered_at + timedelta(hours=1)).astimezone(dt_timezone(timedelta(hours=-5)))
        assert judgements._lock_for_submit(middle, now=elsewhere)[1]["previous_completed_at"] == answered_at
        Campaign.objects.filter(pk=middle.assignment.campaign_id).update(is_active=False)
        assert judgements._lock_for_submit(middle, now=timezone.now())[1]["is_open"] is False


@pytest.mark.django_db
def test_the_submit_lock_and_the_listened_reads_are_compiled_once(items):
    answered, middle, last = items
    audio_served_give(middle)
    rater_id = middle.assignment.rater_id
    with transaction.atomic():
        judgements._lock_for_submit(middle, now=timezone.now())
        listening._proof_and_taken(item=middle, rater_id=rater_id)
        listening._RATER_LOCK.rows(user_id=rater_id)
        with mock.patch.object(SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql) as as_sql:
            assert judgements._lock_for_submit(last, now=timezone.now())[1]["next_open_token"] == middle.token
            assert listening._proof_and_taken(item=last, rater_id=rater_id)[0]["pk"] == last.pk
            assert listening._RATER_LOCK.rows(user_id=rater_id) == [{"pk": rater_id}]
    assert as_sql.call_count == 0


@pytest.mark.django_db(transaction=True)
def test_the_submit_lock_is_refused_outside_a_transaction(items):
    with pytest.raises(TransactionManagementError):
        judgements._lock_for_submit(items[1], now=timezone.now())


@pytest.mark.django_db
def test_the_listened_read_gives_the_rows_the_orm_gives(items):
    answered, middle, last = items
    audio_served_give(middle, seconds_ago=5)
    rater_id = middle.assignment.rater_id
    own, taken = listening._proof_and_taken(item=middle, rater_id=rater_id)
    reference = {row["pk"]: row for row in listening._proof_and_taken_read(item_id=middle.pk, rater_id=rater_id)}
    assert own == reference[middle.pk]
    # the answered item's stretch ended long before the middle one's first byte: nothing is taken
    expected = [(row["listening_from"], row["listening_until"]) for pk, row in reference.items() if pk != middle.pk]
    assert taken == expected == []
    assert own["audio_served"]["size"] == 1000 and own["audio_first_served_at"].tzinfo is not None
    # another rater's id finds not even the item's own row
    with pytest.raises(AssignmentItem.DoesNotExist):
        listening._proof_and_taken(item=middle, rater_id=rater_id + 1)


@pytest.mark.django_db
def test_a_stretch_ending_after_the_first_byte_is_read_as_taken(items):
    answered, middle, last = items
    audio_served_give(middle, seconds_ago=5)
    first_byte = AssignmentItem.objects.get(pk=middle.pk).audio_first_served_at
    AssignmentItem.objects.filter(pk=answered.pk).update(
        listening_from=first_byte - timedelta(seconds=1), listening_until=first_byte + timedelta(seconds=1)
    )
    own, taken = listening._proof_and_taken(item=middle, rater_id=middle.assignment.rater_id)
    assert taken == [(first_byte - timedelta(seconds=1), first_byte + timedelta(seconds=1))]
    assert own["clip__duration_seconds"] == 1.5
