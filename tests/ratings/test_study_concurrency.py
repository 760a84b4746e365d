"""Simultaneous arrivals and starts of a crowd study never over-assign (run on SQLite and on PostgreSQL).

Threads (each with its own database connection) are released together by a barrier: participants starting
their share at once, the same platform id arriving in several tabs at once. On PostgreSQL a start claims its slots
row by row (skipping rows another start holds), so starts do not wait for each other; immediate transactions
serialise them on SQLite. The slot constraints make over-assignment impossible even without the row locks, which a
test shows by taking them away.
"""

import threading
import time

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from ratings.crowd_platforms import Arrival
from ratings.models import AssignmentItem
from ratings.models_study import Participant, ParticipantEvent, StudySlot
from ratings.services.participants import (
    StageError,
    StudyBusyError,
    participant_arrive,
    participant_consent,
    participant_items_start,
    participant_start,
)
from ratings.services.study_shares import allocation, slots
from tests.ratings.study_data import pairwise_study, prolific_id, study_media  # noqa: F401 (study_media: a fixture)

# db_specific: row locks on PostgreSQL, immediate transactions on SQLite; CI runs these on both.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.db_specific,
    pytest.mark.usefixtures("study_media"),
]
THREADS = 10


def _together(count: int, work) -> tuple[list, list]:
    """Run work(index) in `count` threads released at once; (results, errors)."""
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=60)
            results[index] = work(index)
        except Exception as error:  # noqa: BLE001 - every failure is reported by the test
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, errors


def _ready_participants(study, count: int) -> list[Participant]:
    participants = []
    for index in range(count):
        participant = participant_arrive(
            study=study, arrival=Arrival("prolific", prolific_id()), address=f"10.6.{index}.1"
        )
        Participant.objects.filter(pk=participant.pk).update(stage="instructions", practice_done_at=timezone.now())
        participants.append(Participant.objects.get(pk=participant.pk))
    return participants


def _assert_exact_coverage(study, *, per_item: int) -> None:
    """What participants were given (their items, not only the slot rows): each pair to at most `per_item`
    distinct participants, and every item given is backed by a slot its participant holds."""
    given = AssignmentItem.objects.filter(assignment__campaign=study.campaign, pair__gold_choice="")
    by_pair: dict[int, list[int]] = {}
    for pair_id, rater_id in given.values_list("pair_id", "assignment__rater_id"):
        by_pair.setdefault(pair_id, []).append(rater_id)
    assert all(len(holders) <= per_item for holders in by_pair.values()), by_pair
    assert all(len(set(holders)) == len(holders) for holders in by_pair.values()), "a participant twice on an item"
    backed = set(
        StudySlot.objects.filter(study=study, participant__isnull=False).values_list("item_id", "participant__user_id")
    )
    assert {(item.pk, item.assignment.rater_id) for item in given.select_related("assignment")} == backed


def _start(participant: Participant) -> Participant:
    try:
        return participant_items_start(participant=participant)
    except StudyBusyError:
        return Participant.objects.get(pk=participant.pk)


def test_simultaneous_starts_fill_every_slot_once_and_the_rest_are_asked_to_wait():
    study = pairwise_study(name="race-starts", hc=6, judgements=2, items_per_participant=3)
    participants = _ready_participants(study, THREADS)
    results, errors = _together(THREADS, lambda index: _start(participants[index]))
    assert errors == []
    stages = sorted(participant.stage for participant in results)
    # 6 pairs x 2 judgements = 12 slots; shares of 3: four participants get one (five when the gold rule drew a
    # share among less covered items and left a last slot). The others are asked to try again later (the slots are
    # only reserved, not judged: not "full"), and stay where they were.
    started = stages.count("items")
    assert started in (4, 5) and stages.count("instructions") == THREADS - started
    assert not [participant for participant in results if participant.status != "in_progress"]
    _assert_exact_coverage(study, per_item=2)
    assert AssignmentItem.objects.filter(assignment__campaign=study.campaign, pair__gold_choice="").count() == 12
    shares = [StudySlot.objects.filter(participant=p).count() for p in Participant.objects.filter(stage="items")]
    assert max(shares) == 3 and sum(shares) == 12, "nobody over their share"


def test_the_same_id_arriving_at_once_in_several_tabs_is_one_participant():
    study = pairwise_study(name="race-arrivals")
    pid = prolific_id()
    results, errors = _together(
        THREADS,
        lambda index: participant_arrive(study=study, arrival=Arrival("prolific", pid), address="10.6.0.9").pk,
    )
    assert errors == []
    assert len(set(results)) == 1 and Participant.objects.filter(study=study).count() == 1


def test_one_step_sent_at_once_from_several_tabs_moves_the_participant_once():
    study = pairwise_study(name="race-consent")
    arrived = participant_arrive(study=study, arrival=Arrival("prolific", prolific_id()), address="10.6.0.10")
    started = participant_start(participant=arrived)
    connection.close()

    results, errors = _together(
        THREADS, lambda index: participant_consent(participant=Participant.objects.get(pk=started.pk), agreed=True)
    )

    assert [result.stage for result in results if result is not None] == [Participant.Stage.QUESTIONNAIRE]
    assert len(errors) == THREADS - 1 and all(isinstance(error, StageError) for error in errors), errors
    assert list(ParticipantEvent.objects.filter(participant=started).values_list("kind", flat=True)) == [
        "arrived",
        "started",
        "consented",
    ]


def test_without_the_row_locks_the_slots_still_refuse_over_assignment(monkeypatch):
    """Take the row locks away: simultaneous starts may fail, but never over-assign (conditional UPDATE,
    constraints)."""
    study = pairwise_study(name="race-nolock", hc=6, judgements=2, items_per_participant=3)
    participants = _ready_participants(study, THREADS)
    monkeypatch.setattr(
        slots, "_locked_study", lambda study: type(study).objects.select_related("campaign").get(pk=study.pk)
    )
    monkeypatch.setattr(
        allocation,
        "_slots_lock",
        lambda slot_ids, wait: set(
            StudySlot.objects.filter(pk__in=slot_ids, participant__isnull=True).values_list("pk", flat=True)
        ),
    )
    plan = allocation._free_subjects

    def slow_plan(study, rng):
        planned = plan(study, rng)
        time.sleep(0.3)  # every thread has read the same free slots before any takes them
        return planned

    monkeypatch.setattr(allocation, "_free_subjects", slow_plan)
    _together(THREADS, lambda index: participant_items_start(participant=participants[index]))
    _assert_exact_coverage(study, per_item=2)
    assert StudySlot.objects.filter(study=study).count() == 12
    for participant in Participant.objects.filter(study=study):
        assert StudySlot.objects.filter(participant=participant).count() <= 3


def test_simultaneous_starts_with_room_for_all_each_get_a_whole_share():
    study = pairwise_study(name="race-room", clip_count=12, hc=30, judgements=2, items_per_participant=5)
    participants = _ready_participants(study, THREADS)
    results, errors = _together(THREADS, lambda index: participant_items_start(participant=participants[index]))
    assert errors == []
    assert [participant.stage for participant in results] == ["items"] * THREADS
    _assert_exact_coverage(study, per_item=2)
    shares = [StudySlot.objects.filter(participant=participant).count() for participant in participants]
    assert shares == [5] * THREADS, "every share whole: a slot another start held was replaced, not dropped"
    assert StudySlot.objects.filter(study=study, participant__isnull=True).count() == 60 - 5 * THREADS


def test_a_start_does_not_wait_for_another_start_in_progress(monkeypatch):
    """One start is held in the middle of its transaction, its slots claimed; a second start meanwhile completes.
    Under a study-wide lock the second would wait for the first (the test then fails on its timeout)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: SQLite serialises every writer")
    study = pairwise_study(name="race-no-wait", clip_count=12, hc=30, judgements=1, items_per_participant=5)
    first, second = _ready_participants(study, 2)
    first_claimed, first_may_go, second_done = threading.Event(), threading.Event(), threading.Event()
    create_items = allocation._share_items_create

    def held_for_the_first(study, assignment, *args):
        if assignment.rater_id == first.user_id:
            first_claimed.set()
            first_may_go.wait(timeout=60)
        return create_items(study, assignment, *args)

    monkeypatch.setattr(allocation, "_share_items_create", held_for_the_first)
    results, errors = [], []

    def start(participant, done=None):
        try:
            results.append(participant_items_start(participant=participant))
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            if done is not None:
                done.set()
            connection.close()

    first_thread = threading.Thread(target=start, args=(first,))
    first_thread.start()
    try:
        assert first_claimed.wait(timeout=30), "the first start reached its items"
        second_thread = threading.Thread(target=start, args=(second, second_done))
        second_thread.start()
        finished_meanwhile = second_done.wait(timeout=15)
    finally:
        first_may_go.set()
        first_thread.join(timeout=60)
    second_thread.join(timeout=60)
    assert finished_meanwhile, "the second start waited for the first one's transaction"
    assert errors == []
    assert sorted(participant.stage for participant in results) == ["items", "items"]
    _assert_exact_coverage(study, per_item=1)
    assert [StudySlot.objects.filter(participant=participant).count() for participant in (first, second)] == [5, 5]


def test_a_participant_can_hold_one_slot_of_an_item_only():
    study = pairwise_study(name="race-constraint")
    participant = _ready_participants(study, 1)[0]
    first, second = StudySlot.objects.filter(study=study).order_by("pair_id", "number")[:2]
    assert first.pair_id == second.pair_id
    StudySlot.objects.filter(pk=first.pk).update(participant=participant)
    with pytest.raises(IntegrityError), transaction.atomic():
        StudySlot.objects.filter(pk=second.pk).update(participant=participant)


def test_a_participant_timed_out_after_the_start_checked_their_stage_gets_no_share():
    # The start reads the participant without a lock; an admin's time-out (a plain UPDATE) can commit before the
    # share is allocated under the participant's lock. The allocation reads the stage again and gives nothing.
    study = pairwise_study(name="timed-out-start", hc=4, judgements=1, items_per_participant=2)
    [participant] = _ready_participants(study, 1)  # read at "instructions", as the start's check saw them
    Participant.objects.filter(pk=participant.pk).update(
        stage=Participant.Stage.FINISHED, status=Participant.Status.TIMED_OUT, finished_at=timezone.now()
    )
    result = participant_items_start(participant=participant)
    stored = Participant.objects.get(pk=participant.pk)
    assert (result.stage, stored.stage, stored.status) == ("finished", "finished", "timed_out")
    assert not StudySlot.objects.filter(study=study, participant__isnull=False).exists()
    assert not AssignmentItem.objects.filter(assignment__rater=participant.user).exists()
