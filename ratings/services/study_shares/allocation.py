"""A participant's share: planned from one unlocked read of the free slots, each slot claimed on its own row."""

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import NamedTuple

from django.db import connections, transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from common.compiled_reads import CompiledRead
from corpus.models import Clip
from ratings import projection
from ratings.models import Assignment, AssignmentItem, CaptionPair
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent, Study, StudySlot
from ratings.services.campaigns import assignment_share_items_create
from ratings.services.study_shares import checks as share_checks
from ratings.services.study_shares.release import expired_shares_release_if_due
from ratings.services.study_shares.slots import (
    is_pairwise,
    participant_deadline,
    slot_subject,
    spread_positions,
    study_locked,
)


@dataclass(frozen=True)
class Allocation:
    items: list[AssignmentItem]
    is_full: bool
    participant: Participant  # as it stands after the allocation


class _Open(NamedTuple):
    """An item with a free slot, as the share's plan sees it: its subject, its clip and the free slot it aims at.

    A named tuple: the plan makes one per item of the study (a thousand and more) on every start."""

    subject: int
    clip_id: int
    slot_id: int


class _ContendedError(Exception):
    """The share came out short while other participants were claiming slots: claim again, waiting for them."""


def _coverage(study: Study) -> list[tuple[int, int | None, int, int | None]]:
    """(clip, pair, slots taken, lowest free slot or None) of every item of the study.

    One query, counted by the database (one row per item, not per slot), read without any lock: participants
    starting at the same moment plan at the same time and only the claim of the slots decides who gets which."""
    return _COVERAGE.tuples(study_id=study.pk)


def _coverage_read(study_id: int):
    return (
        StudySlot.objects.filter(study_id=study_id)
        .order_by()
        .values("clip_id", "pair_id")
        .annotate(
            taken=Count("pk", filter=Q(participant__isnull=False)),
            free_slot=Min("pk", filter=Q(participant__isnull=True)),
        )
    )


# Read on every press of "start" (refused ones too), twice in a contended share: compiled once.
_COVERAGE = CompiledRead(_coverage_read, study_id=-2_100_000_361)


def _free_subjects(study: Study, rng: random.Random, coverage: list | None = None) -> list[_Open]:
    """Every item with a free slot, least covered first (ties at random), each with its lowest free slot.
    Which of an item's free slots is taken does not matter (a slot's number only keeps an item's slots distinct)."""
    open_subjects = [
        (taken, rng.random(), _Open(slot_subject(clip_id, pair_id), clip_id, free_slot))
        for clip_id, pair_id, taken, free_slot in (_coverage(study) if coverage is None else coverage)
        if free_slot is not None
    ]
    open_subjects.sort(key=itemgetter(0, 1))
    return [row for _, _, row in open_subjects]


def share_allocate(*, participant: Participant, now: datetime | None = None) -> Allocation:
    """Reserve the participant's share (idempotent: a participant who has one gets it back).

    No lock on the study: the participant's row is locked (two tabs starting at once get one share) and each slot
    is claimed on its own row, skipping rows another start holds at that moment (it takes the next item of the
    plan instead). Only a share that comes out short while others were claiming is planned again under the study's
    lock, waiting for them: a share is never smaller than the free items allow."""
    now = now or timezone.now()
    expired_shares_release_if_due(study=participant.study, now=now)
    try:
        with transaction.atomic():
            return _allocate(participant, now=now, wait=False)
    except _ContendedError:
        with transaction.atomic():
            study_locked(participant.study)
            return _allocate(participant, now=now, wait=True)


# The participant's assignment, read on every press of "start" (refused ones too): compiled once. One per campaign
# and rater; order_by("pk"), not the assignments' default order, which joins the campaign.
def _assignment_read(campaign_id: int, rater_id: int):
    return Assignment.objects.filter(campaign_id=campaign_id, rater_id=rater_id).order_by("pk")[:1]


_ASSIGNMENT = CompiledRead(_assignment_read, campaign_id=-2_100_000_321, rater_id=-2_100_000_322)


_PARTICIPANT_LOCK = CompiledRead(
    lambda participant_id: Participant.objects.select_for_update().filter(pk=participant_id).order_by(),
    participant_id=-2_100_000_371,
)


def _participant_locked(participant: Participant) -> Participant:
    """The participant's row, locked and read again; its study (with the campaign) and user are the caller's.

    Only the participant's own columns: the study and its campaign were read with the participant at the start
    of this request (what a share needs of them does not change while the study is published), and the join
    was a good part of the start's CPU."""
    locked = _PARTICIPANT_LOCK.first(participant_id=participant.pk)
    if locked is None:
        raise Participant.DoesNotExist(f"participant {participant.pk} is gone")
    locked.study = participant.study
    locked.user = participant.user
    return locked


def _allocate(participant: Participant, *, now: datetime, wait: bool) -> Allocation:
    participant = _participant_locked(participant)
    study = participant.study
    assignment = _ASSIGNMENT.first(campaign_id=study.campaign_id, rater_id=participant.user_id)
    if assignment is not None and assignment.items.exists():
        return Allocation(items=projection.assignment_items(assignment), is_full=False, participant=participant)
    if participant.stage != Participant.Stage.INSTRUCTIONS:
        # Ended (timed out, withdrawn) between the caller's unlocked check and this lock: no share for them.
        return Allocation(items=[], is_full=False, participant=participant)
    coverage = _coverage(study)
    if all(free_slot is None for *_, free_slot in coverage):
        # Every slot reserved or judged: refused before any write (no assignment made and deleted again). Under a
        # crowd about half the presses of "start" are refused like this and pressed again later.
        return Allocation(items=[], is_full=True, participant=participant)
    # Every draw (which items, their order, where the checks go) comes from the assignment's secret source
    # (ratings/projection.py): ids and the campaign's seed do not predict a participant's order.
    created = assignment is None
    assignment = assignment or Assignment.objects.create(campaign=study.campaign, rater=participant.user)
    rng = projection.assignment_random(assignment, "study-share")
    plan = _free_subjects(study, rng, coverage)
    subjects, checks = _share_choose(study, plan, rng)
    if subjects and not participant.is_preview:
        subjects = _slots_claim(
            study, plan, subjects, avoid_clip_ids={pair.clip_id for pair in checks}, wait=wait, rng=rng
        )
    if not subjects:
        if created:  # no empty study left behind in the campaign's assignments
            assignment.delete()
        return Allocation(items=[], is_full=True, participant=participant)
    items = _share_items_create(study, assignment, subjects, checks, rng)
    if not participant.is_preview:
        _slots_take(participant, items, subjects)
    participant.stage = Participant.Stage.ITEMS
    participant.items_started_at = now
    participant.reserved_until = participant_deadline(participant)
    participant.save(update_fields=["stage", "items_started_at", "reserved_until", "updated_at"])
    ParticipantEvent.objects.create(
        participant=participant,
        kind="share_reserved",
        detail={"items": len(items), "until": str(participant.reserved_until)},
    )
    return Allocation(items=items, is_full=False, participant=participant)


def _slots_lock(slot_ids: list[int], *, wait: bool) -> set[int]:
    """Lock those of the slots that are still free; without `wait`, skip the ones another transaction holds."""
    return set(
        StudySlot.objects.select_for_update(skip_locked=not wait)
        .filter(pk__in=slot_ids, participant__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _slots_claim(
    study: Study, plan: list[_Open], chosen: list[_Open], *, avoid_clip_ids: set[int], wait: bool, rng: random.Random
) -> list[_Open]:
    """Lock a free slot for each chosen item; an item whose slot was taken (or, without `wait`, is being taken)
    meanwhile is replaced by the next item of the plan (none of `avoid_clip_ids`: the gold checks' clips).

    Short of the share with free slots still in sight (held by other starts at this moment, or freed since the
    plan was read): without `wait` that is _ContendedError; with `wait` (under the study's lock, after the rows it
    waited for were committed) the plan is read again, a few times at most."""
    count = len(chosen)
    claimed: list[_Open] = []
    chosen_subjects = {row.subject for row in chosen}
    candidates = chosen + [
        row for row in plan if row.subject not in chosen_subjects and row.clip_id not in avoid_clip_ids
    ]
    for _ in range(3):
        start = 0
        while len(claimed) < count and start < len(candidates):
            wanted = candidates[start : start + count - len(claimed)]
            start += len(wanted)
            locked = _slots_lock([row.slot_id for row in wanted], wait=wait)
            claimed += [row for row in wanted if row.slot_id in locked]
        if len(claimed) == count or not _free_elsewhere(study, claimed, avoid_clip_ids):
            return claimed
        if not wait:
            raise _ContendedError
        held = {row.subject for row in claimed}
        candidates = [
            row for row in _free_subjects(study, rng) if row.subject not in held and row.clip_id not in avoid_clip_ids
        ]
    return claimed


def _free_elsewhere(study: Study, claimed: list[_Open], avoid_clip_ids: set[int]) -> bool:
    """A free slot (as this transaction sees it) of an item the share could still take."""
    free = StudySlot.objects.filter(study=study, participant__isnull=True).exclude(clip_id__in=list(avoid_clip_ids))
    subjects = [row.subject for row in claimed]
    if is_pairwise(study):
        free = free.exclude(pair_id__in=subjects)
    else:
        free = free.exclude(clip_id__in=subjects)
    return free.exists()


def _slots_take(participant: Participant, items: list[AssignmentItem], subjects: list[_Open]) -> None:
    """Give the participant the slots (locked by this transaction), each pointing at the item just made for its
    subject, in one UPDATE.

    The items' ids are known (the INSERT returned them), so each slot's item is a constant of a CASE: the subquery
    per slot this replaced was compiled on every start, a tenth of its CPU. Written here, its SQL is the same on
    every start but for the number of slots."""
    item_of_subject = {slot_subject(item.clip_id, item.pair_id): item.pk for item in items}
    slot_ids = [row.slot_id for row in subjects]
    connection = connections[StudySlot.objects.db]
    quote = connection.ops.quote_name
    meta = StudySlot._meta
    pk, participant_column = quote(meta.pk.column), quote(meta.get_field("participant").column)
    whens = " ".join(["WHEN %s THEN %s"] * len(subjects))
    params: list = [participant.pk]
    for row in subjects:
        params += [row.slot_id, item_of_subject[row.subject]]
    params += slot_ids
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {participant_column} = %s, "
        f"{quote(meta.get_field('item').column)} = CASE {pk} {whens} END "
        f"WHERE {participant_column} IS NULL AND {pk} IN ({', '.join(['%s'] * len(slot_ids))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        taken = cursor.rowcount
    if taken != len(slot_ids):  # cannot happen while the rows are locked; the constraints stop it regardless
        raise RuntimeError("a slot was taken by someone else during allocation")


def _share_choose(study: Study, plan: list[_Open], rng: random.Random) -> tuple[list[_Open], list[CaptionPair]]:
    """The share's items (from the plan) and its gold checks (pairwise), under the gold rule: no gold pair of a
    clip the share has another item of. A gold pair whose clip comes back on other items is answered by its
    text alone (its own reference reads like that clip's other captions; ratings/services/campaigns.py, GoldRule).

    The least-covered items come first; where their clips leave too few gold pairs, the gold pairs are chosen
    first and the items among the other clips, unless those have no free slot left (then fewer checks)."""
    count = study.items_per_participant
    subjects = plan[:count]
    if not is_pairwise(study) or not study.attention_checks or not subjects:
        return subjects, []
    pool = share_checks.gold_pool(study)
    checks = share_checks.gold_pairs_choose(study, rng, avoid_clip_ids={row.clip_id for row in subjects}, pool=pool)
    if len(checks) < study.attention_checks:
        # Golds of the clips with the fewest free items first: they leave the most items to the share.
        free_by_clip = Counter(row.clip_id for row in plan)
        first_checks = share_checks.gold_pairs_choose(
            study, rng, avoid_clip_ids=set(), free_by_clip=free_by_clip, pool=pool
        )
        check_clips = {pair.clip_id for pair in first_checks}
        other_subjects = [row for row in plan if row.clip_id not in check_clips][:count]
        if len(first_checks) > len(checks) and len(other_subjects) == len(subjects):
            return other_subjects, first_checks
    return subjects, checks


def _share_items_create(
    study: Study, assignment: Assignment, subjects: list[_Open], checks: list[CaptionPair], rng: random.Random
) -> list:
    subjects = projection.shuffled(subjects, rng)
    if is_pairwise(study):
        ordered = [_pair_of(subject) for subject in subjects]
        for position, pair in zip(
            spread_positions(count=len(checks), length=len(ordered) + len(checks), rng=rng), checks, strict=False
        ):
            ordered.insert(position, pair)
        items = assignment_share_items_create(assignment=assignment, items=ordered)
        gold_ids = {pair.pk for pair in checks}
        AttentionCheck.objects.bulk_create(
            AttentionCheck(
                item=item,
                campaign=study.campaign,
                rater=assignment.rater,
                kind=AttentionCheck.Kind.GOLD_PAIR,
                pair_id=item.pair_id,
            )
            for item in items
            if item.pair_id in gold_ids
        )
        return items
    items = assignment_share_items_create(assignment=assignment, items=[_clip_of(subject) for subject in subjects])
    share_checks.catch_captions_place(study, assignment, items, rng)
    return items


# The share's items are made from their ids alone (assignment_share_items_create reads a pair's id and clip, a
# clip's id): no read of the rows, which the plan's slots already name. Instances as from only(): any other field a
# later caller reads is loaded then, never a blank default.
def _pair_of(subject: _Open) -> CaptionPair:
    return CaptionPair.from_db(None, ["id", "clip_id"], [subject.subject, subject.clip_id])


def _clip_of(subject: _Open) -> Clip:
    return Clip.from_db(None, ["id"], [subject.subject])
