"""Balanced shares of a crowd study: slots, allocation, release, attention checks and coverage.

Rules (so every item gets its judgements and no participant waits for work that is not there):
- Each item of the study (THumBS: a clip with the campaign's captions of it; pairwise: a caption pair that is
  not gold) has `judgements_per_item` slots, made when the study is published (`study_slots_create`).
- A participant who starts rating gets `items_per_participant` items (fewer when fewer items have a free
  slot; none: the study is full), the least-covered first (ties broken at random), each from a different
  item, in their own random order with sides and caption order shuffled. On top of these come
  `attention_checks` known-answer checks spread through the share: gold HI pairs (pairwise; the least-used
  first, none of a clip the share has another item of, fewer checks where no other is left), or, for THumBS,
  a caption of another clip in place of one of an item's captions (a catch caption that must get precision
  <= 2; in place of, so check items show as many captions as the others): a reference caption of the clip
  whose references share the fewest words with the item's, from a clip the participant never hears.
- The study's time limit counts from the participant's arrival (the countdown on every page shows it); the share
  is reserved until then, and no longer than STUDY_INACTIVE_MINUTES without a request from its holder once
  another participant needs slots (checked lazily, when a share is allocated or someone arrives). A participant
  who times out (either way), returns the study or is excluded gives their slots back: unanswered items are
  deleted (their slot is free again; a draft on one is kept in the event's detail), and an excluded participant's
  answered slots become free too, so the item still reaches its count of *included*
  judgements. Reinstating takes the slots back, and is refused when others have judged the items since (the
  items would be judged more often than the target; coverage and exports would disagree).
- Concurrency: a start locks only the participant's row (two tabs get one share) and claims each slot on its own
  row (SELECT ... FOR UPDATE SKIP LOCKED): starts at the same moment do not wait for each other, one whose slot
  is being taken moves on to the next item of its plan, and only a share that comes out short while others claim
  is planned again under the study's row lock. Release, exclusion and reinstatement lock the study row, then the
  participant row (SQLite serialises writers). Whatever the locks do, the slot constraints
  (ratings/models_study.py) and the conditional UPDATE make over-assignment and a second slot of one item
  impossible.
- Previews (admins trying the study) get a share chosen the same way but take no slot.
"""

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Min, OuterRef, Q, Subquery
from django.utils import timezone

from corpus.models import Caption
from ratings import projection
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent, Study, StudySlot
from ratings.services.campaigns import assignment_add_items, campaign_items, gold_donors

# Catch captions are drawn from at most this many other clips (the least similar one wins).
CATCH_CANDIDATE_CLIPS = 200
WORD = re.compile(r"[a-z]+")


class StudySetupError(ValueError):
    """The campaign cannot be published as a study with these settings (message says why)."""


def _is_pairwise(study: Study) -> bool:
    return study.campaign.task_type == Campaign.TaskType.PAIRWISE


def study_regular_items(study: Study) -> list:
    """The items participants' judgements must cover: clips (THumBS) or the pairs that are not gold (pairwise)."""
    items = campaign_items(study.campaign)
    if _is_pairwise(study):
        return [pair for pair in items if not pair.gold_choice]
    return items


def study_gold_pairs(study: Study) -> list[CaptionPair]:
    return list(study.campaign.pairs.exclude(gold_choice="").order_by("pk"))


def study_setup_check(study: Study) -> None:
    """Raise StudySetupError when the campaign cannot supply shares and checks as configured."""
    regular = study_regular_items(study)
    if not regular:
        raise StudySetupError("the campaign has no items to rate (pairwise: gold pairs are checks, not items)")
    if study.attention_checks and _is_pairwise(study) and len(study_gold_pairs(study)) < study.attention_checks:
        raise StudySetupError(
            f"{study.attention_checks} attention checks need as many gold HI pairs; the campaign has "
            f"{len(study_gold_pairs(study))} (create it with HI pairs as gold items)"
        )
    if study.attention_checks and not _is_pairwise(study):
        if study.attention_checks > study.items_per_participant:
            raise StudySetupError("a THumBS share cannot hold more catch captions than items")
        if study.campaign.dataset.clips.count() < 2:
            raise StudySetupError("catch captions need clips other than the rated one in the dataset")


@transaction.atomic
def study_slots_create(study: Study) -> int:
    """`judgements_per_item` slots for every regular item (idempotent: existing slots are kept)."""
    existing = set(StudySlot.objects.filter(study=study).values_list("clip_id", "pair_id", "number"))
    slots = []
    for item in study_regular_items(study):
        clip_id, pair_id = (item.clip_id, item.pk) if isinstance(item, CaptionPair) else (item.pk, None)
        for number in range(1, study.campaign.judgements_per_item + 1):
            if (clip_id, pair_id, number) not in existing:
                slots.append(StudySlot(study=study, clip_id=clip_id, pair_id=pair_id, number=number))
    StudySlot.objects.bulk_create(slots, batch_size=2000)
    return len(slots)


def _subject(clip_id: int, pair_id: int | None) -> int:
    return pair_id if pair_id is not None else clip_id


# Lock order, everywhere: the study row, then the participant row, then items. of=("self",): only these rows
# (PostgreSQL would otherwise also lock every joined row: the campaign, the dataset, the user).


def _locked_study(study: Study) -> Study:
    return Study.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=study.pk)


def _locked_participant(participant: Participant) -> Participant:
    return (
        Participant.objects.select_for_update(of=("self",))
        .select_related("study__campaign", "user")
        .get(pk=participant.pk)
    )


def study_locked(study: Study) -> Study:
    """Lock the study row (call inside a transaction): arrivals and allocations of one study take turns."""
    return _locked_study(study)


def participant_deadline(participant: Participant) -> datetime:
    """When the participant's time runs out: the study's time limit from their arrival (their share is reserved
    until then; `reserved_until` when they have one, which the admin or a test may have moved)."""
    if participant.reserved_until is not None:
        return participant.reserved_until
    return participant.created_at + timedelta(minutes=participant.study.time_limit_minutes)


def participant_locked_with_study(participant: Participant) -> Participant:
    """Lock the participant's study, then the participant (call inside a transaction); the fresh participant."""
    _locked_study(participant.study)
    return _locked_participant(participant)


def spread_positions(*, count: int, length: int, rng: random.Random) -> list[int]:
    """`count` distinct indexes in range(length), one in each of `count` equal segments (checks spread evenly)."""
    count = min(count, length)
    positions = []
    for segment in range(count):
        start = segment * length // count
        end = max(start + 1, (segment + 1) * length // count)
        positions.append(rng.randrange(start, end))
    return positions


# --- Allocation ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Allocation:
    items: list[AssignmentItem]
    is_full: bool
    participant: Participant  # as it stands after the allocation


@dataclass(frozen=True)
class _Open:
    """An item with a free slot, as the share's plan sees it: its subject, its clip and the free slot it aims at."""

    subject: int
    clip_id: int
    slot_id: int


class _ContendedError(Exception):
    """The share came out short while other participants were claiming slots: claim again, waiting for them."""


def _free_subjects(study: Study, rng: random.Random) -> list[_Open]:
    """Every item with a free slot, least covered first (ties at random), each with its lowest free slot.

    One query, counted by the database (one row per item, not per slot), read without any lock: participants
    starting at the same moment plan at the same time and only the claim of the slots decides who gets which.
    Which of an item's free slots is taken does not matter (a slot's number only keeps an item's slots distinct)."""
    coverage = (
        StudySlot.objects.filter(study=study)
        .order_by()
        .values("clip_id", "pair_id")
        .annotate(
            taken=Count("pk", filter=Q(participant__isnull=False)),
            free_slot=Min("pk", filter=Q(participant__isnull=True)),
        )
        .values_list("clip_id", "pair_id", "taken", "free_slot")
    )
    open_subjects = [
        (taken, rng.random(), _Open(_subject(clip_id, pair_id), clip_id, free_slot))
        for clip_id, pair_id, taken, free_slot in coverage
        if free_slot is not None
    ]
    open_subjects.sort(key=lambda row: row[:2])
    return [row for _, _, row in open_subjects]


def _expired_shares_release_if_due(*, study: Study, now: datetime) -> None:
    """Shares of participants whose time ran out, or who went quiet, come back before a share is planned. The
    study's lock is taken only when someone is due (one read otherwise), so starts do not queue behind it."""
    if Participant.objects.filter(_holding_ended(study, now, inactive_too=True)).exists():
        with transaction.atomic():
            expired_shares_release(study=_locked_study(study), now=now, inactive_too=True)


def share_allocate(*, participant: Participant, now: datetime | None = None) -> Allocation:
    """Reserve the participant's share (idempotent: a participant who has one gets it back).

    No lock on the study: the participant's row is locked (two tabs starting at once get one share) and each slot
    is claimed on its own row, skipping rows another start holds at that moment (it takes the next item of the
    plan instead). Only a share that comes out short while others were claiming is planned again under the study's
    lock, waiting for them: a share is never smaller than the free items allow."""
    now = now or timezone.now()
    _expired_shares_release_if_due(study=participant.study, now=now)
    try:
        with transaction.atomic():
            return _allocate(participant, now=now, wait=False)
    except _ContendedError:
        with transaction.atomic():
            _locked_study(participant.study)
            return _allocate(participant, now=now, wait=True)


def _allocate(participant: Participant, *, now: datetime, wait: bool) -> Allocation:
    participant = _locked_participant(participant)
    study = participant.study
    assignment = Assignment.objects.filter(campaign=study.campaign, rater=participant.user).first()
    if assignment is not None and assignment.items.exists():
        return Allocation(items=projection.assignment_items(assignment), is_full=False, participant=participant)
    if participant.stage != Participant.Stage.INSTRUCTIONS:
        # Ended (timed out, withdrawn) between the caller's unlocked check and this lock: no share for them.
        return Allocation(items=[], is_full=False, participant=participant)
    # Every draw (which items, their order, where the checks go) comes from the assignment's secret source
    # (ratings/projection.py): ids and the campaign's seed do not predict a participant's order.
    created = assignment is None
    assignment = assignment or Assignment.objects.create(campaign=study.campaign, rater=participant.user)
    rng = projection.assignment_random(assignment, "study-share")
    plan = _free_subjects(study, rng)
    subjects, checks = _share_choose(study, plan, rng)
    if subjects and not participant.is_preview:
        subjects = _slots_claim(
            study, plan, subjects, avoid_clip_ids={pair.clip_id for pair in checks}, wait=wait, rng=rng
        )
    if not subjects:
        if created:  # no empty study left behind in the campaign's assignments
            assignment.delete()
        return Allocation(items=[], is_full=True, participant=participant)
    items = _share_items_create(study, assignment, [row.subject for row in subjects], checks, rng)
    if not participant.is_preview:
        _slots_take(study, participant, assignment, [row.slot_id for row in subjects])
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
    if _is_pairwise(study):
        free = free.exclude(pair_id__in=subjects)
    else:
        free = free.exclude(clip_id__in=subjects)
    return free.exists()


def _slots_take(study: Study, participant: Participant, assignment: Assignment, slot_ids: list[int]) -> None:
    """Give the participant the slots (locked by this transaction), each pointing at the item just made for its
    subject (one UPDATE)."""
    if _is_pairwise(study):
        item_of_slot = AssignmentItem.objects.filter(assignment=assignment, pair_id=OuterRef("pair_id"))
    else:
        item_of_slot = AssignmentItem.objects.filter(
            assignment=assignment, pair__isnull=True, clip_id=OuterRef("clip_id")
        )
    # order_by(): the items' default ordering would join and sort for every slot row.
    taken = StudySlot.objects.filter(pk__in=slot_ids, participant__isnull=True).update(
        participant=participant, item=Subquery(item_of_slot.order_by().values("pk")[:1])
    )
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
    if not _is_pairwise(study) or not study.attention_checks or not subjects:
        return subjects, []
    pool = _gold_pool(study)
    checks = _gold_pairs_choose(study, rng, avoid_clip_ids={row.clip_id for row in subjects}, pool=pool)
    if len(checks) < study.attention_checks:
        # Golds of the clips with the fewest free items first: they leave the most items to the share.
        free_by_clip = Counter(row.clip_id for row in plan)
        first_checks = _gold_pairs_choose(study, rng, avoid_clip_ids=set(), free_by_clip=free_by_clip, pool=pool)
        check_clips = {pair.clip_id for pair in first_checks}
        other_subjects = [row for row in plan if row.clip_id not in check_clips][:count]
        if len(first_checks) > len(checks) and len(other_subjects) == len(subjects):
            return other_subjects, first_checks
    return subjects, checks


def _share_items_create(
    study: Study, assignment: Assignment, subjects: list[int], checks: list[CaptionPair], rng: random.Random
) -> list:
    subjects = projection.shuffled(subjects, rng)
    if _is_pairwise(study):
        pairs = CaptionPair.objects.in_bulk(subjects)
        ordered = [pairs[subject] for subject in subjects]
        for position, pair in zip(
            spread_positions(count=len(checks), length=len(ordered) + len(checks), rng=rng), checks, strict=False
        ):
            ordered.insert(position, pair)
        items = assignment_add_items(assignment=assignment, items=ordered, keep_order=True)
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
    clips = study.campaign.dataset.clips.in_bulk(subjects)
    items = assignment_add_items(assignment=assignment, items=[clips[subject] for subject in subjects], keep_order=True)
    _catch_captions_place(study, assignment, items, rng)
    return items


@dataclass(frozen=True)
class _GoldPool:
    pairs: list[CaptionPair]
    used: dict[int, int]  # gold pair -> shares that have it as a check
    donors: dict[int, int]


def _gold_pool(study: Study) -> _GoldPool:
    """The study's gold pairs with their use so far and donors, read once per share."""
    used = dict(
        AttentionCheck.objects.filter(campaign=study.campaign, kind=AttentionCheck.Kind.GOLD_PAIR)
        .order_by()
        .values_list("pair_id")
        .annotate(count=Count("pk"))
    )
    pairs = study_gold_pairs(study)
    return _GoldPool(pairs=pairs, used=used, donors=gold_donors(pair.pk for pair in pairs))


def _gold_pairs_choose(
    study: Study,
    rng: random.Random,
    *,
    avoid_clip_ids: set[int],
    free_by_clip: dict | None = None,
    pool: _GoldPool | None = None,
) -> list[CaptionPair]:
    """The study's least-used gold pairs (ties at random) for one share: none of `avoid_clip_ids`, no two of one
    clip, and of distinct donors while the least-used allow (two foreign captions of one donor read alike).
    With `free_by_clip` (clip -> items with a free slot), golds of the clips with the fewest come first."""
    pool = pool or _gold_pool(study)
    used, donors = pool.used, pool.donors
    gold = [pair for pair in pool.pairs if pair.clip_id not in avoid_clip_ids]
    gold.sort(key=lambda pair: ((free_by_clip or {}).get(pair.clip_id, 0), used.get(pair.pk, 0), rng.random()))
    chosen: list[CaptionPair] = []
    for allow_donor_again in (False, True):
        for pair in gold:
            if len(chosen) == study.attention_checks:
                return chosen
            clips = {each.clip_id for each in chosen}
            chosen_donors = {donors.get(each.pk) for each in chosen} - {None}
            if pair in chosen or pair.clip_id in clips:
                continue
            if not allow_donor_again and donors.get(pair.pk) in chosen_donors:
                continue
            chosen.append(pair)
    return chosen


def _words(texts) -> set[str]:
    return {word for text in texts for word in WORD.findall(text.lower())}


def _catch_captions_place(
    study: Study, assignment: Assignment, items: list[AssignmentItem], rng: random.Random
) -> None:
    """Put a catch caption in place of one caption of `attention_checks` items, spread through the share.

    In place of, not beside: an item with a check then shows as many captions as every other item of the
    share (a check item with one caption more would be found by counting). The caption it displaces gets one
    rating fewer from this participant; items with a single caption carry no check (it would displace the
    clip's only caption)."""
    if not study.attention_checks or not items:
        return
    items = [item for item in items if len(item.caption_order) >= 2]
    share_clip_ids = {item.clip_id for item in items}
    other_clip_ids = list(
        study.campaign.dataset.clips.exclude(pk__in=share_clip_ids).order_by("pk").values_list("pk", flat=True)
    )
    candidates = rng.sample(other_clip_ids, min(CATCH_CANDIDATE_CLIPS, len(other_clip_ids)))
    references: dict[int, list[tuple[int, str]]] = defaultdict(list)
    rows = (
        Caption.objects.corpus()
        .filter(clip_id__in=[*candidates, *share_clip_ids], role=Caption.Role.REFERENCE)
        .order_by("clip_id", "position", "pk")
    )
    for caption_id, clip_id, text in rows.values_list("pk", "clip_id", "text"):
        references[clip_id].append((caption_id, text))
    donors = [clip_id for clip_id in candidates if references.get(clip_id)]
    checks = []
    for index in spread_positions(count=study.attention_checks, length=len(items), rng=rng):
        if not donors:
            break
        item = items[index]
        own = _words(text for _, text in references.get(item.clip_id, []))
        donor = min(donors, key=lambda clip_id: (len(own & _words(t for _, t in references[clip_id])), rng.random()))
        donors.remove(donor)  # one catch caption per donor clip: the same caption never appears twice in a share
        caption_id = rng.choice(references[donor])[0]
        order = list(item.caption_order)
        order[rng.randrange(len(order))] = caption_id
        item.caption_order = order
        item.save(update_fields=["caption_order"])
        checks.append(
            AttentionCheck(
                item=item,
                campaign=study.campaign,
                rater=assignment.rater,
                kind=AttentionCheck.Kind.CATCH_CAPTION,
                caption_id=caption_id,
            )
        )
    AttentionCheck.objects.bulk_create(checks)


# --- Release ----------------------------------------------------------------------------------------


def _release(participant: Participant, *, answered_too: bool) -> dict:
    """Free the participant's slots (the caller holds the study and participant locks); delete unanswered items.

    The items are locked first, so a submission in flight either lands before (the item counts as answered)
    or finds its item gone (and is refused): never a judgement on a slot someone else holds.
    """
    items = list(
        AssignmentItem.objects.select_for_update()
        .filter(assignment__campaign=participant.study.campaign, assignment__rater=participant.user)
        .order_by("pk")
    )
    unanswered = [item.pk for item in items if item.completed_at is None]
    # An answer started but not submitted is kept in the record (the admin's participant page, the end page
    # says so) though its item goes to someone else: nothing typed is lost silently, nothing unsent counts.
    drafts = [
        {"position": item.position, "draft": item.draft} for item in items if not item.completed_at and item.draft
    ]
    slots = StudySlot.objects.filter(participant=participant)
    if not answered_too:
        slots = slots.filter(Q(item_id__in=unanswered) | Q(item__isnull=True))
    freed = slots.update(participant=None, item=None)
    AssignmentItem.objects.filter(pk__in=unanswered).delete()
    detail = {"slots_freed": freed, "unanswered_items_removed": len(unanswered)}
    if drafts:
        detail["drafts_kept"] = drafts
    return detail


def share_release(
    *, participant: Participant, status: str, kind: str, now: datetime | None = None, reason: str = ""
) -> Participant:
    """End a participation that did not complete (timed out, returned): give its unanswered items back.
    `reason` (time_limit, inactive) goes into the event's detail."""
    now = now or timezone.now()
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if participant.stage == Participant.Stage.FINISHED:
            return participant
        detail = _release(participant, answered_too=False)
        if reason:
            detail["reason"] = reason
        participant.stage = Participant.Stage.FINISHED
        participant.status = status
        participant.finished_at = now
        participant.save(update_fields=["stage", "status", "finished_at", "updated_at"])
        ParticipantEvent.objects.create(participant=participant, kind=kind, detail=detail)
    return participant


def slots_release_for_exclusion(*, participant: Participant) -> dict:
    """An excluded participant's slots go back to the pool (their answers stay, left out of every figure)."""
    with transaction.atomic():
        return _release(participant_locked_with_study(participant), answered_too=True)


def slots_retake_for_reinstatement(*, participant: Participant, partial: bool = False) -> dict:
    """A reinstated participant takes back a free slot of each item they answered; `items_over_count`: items with
    no free slot left. Then nothing is taken unless `partial` (the free slots are taken, the rest is over)."""
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        study = participant.study
        answered = AssignmentItem.objects.filter(
            assignment__campaign=study.campaign, assignment__rater=participant.user, completed_at__isnull=False
        ).exclude(attention_checks__kind=AttentionCheck.Kind.GOLD_PAIR)
        plan, over = [], 0
        for item in answered:
            if StudySlot.objects.filter(study=study, participant=participant, item=item).exists():
                continue
            lookup = {"pair_id": item.pair_id} if item.pair_id else {"clip_id": item.clip_id, "pair__isnull": True}
            # Locked: a start claims free slots without the study's lock, so a slot read as free could be taken.
            slot = (
                StudySlot.objects.select_for_update()
                .filter(study=study, participant__isnull=True, **lookup)
                .order_by("number")
                .first()
            )
            if slot is None:
                over += 1
            else:
                plan.append((slot, item))
        if over and not partial:
            return {"slots_retaken": 0, "items_over_count": over}
        for slot, item in plan:
            StudySlot.objects.filter(pk=slot.pk, participant__isnull=True).update(participant=participant, item=item)
        return {"slots_retaken": len(plan), "items_over_count": over}


def inactive_since(now: datetime) -> datetime:
    """Participants whose last request came before this are inactive (STUDY_INACTIVE_MINUTES)."""
    return now - timedelta(minutes=settings.STUDY_INACTIVE_MINUTES)


def _holding_ended(study: Study, now: datetime, *, inactive_too: bool) -> Q:
    """Participants holding a share whose reservation ran out (and, `inactive_too`, who went quiet)."""
    ended = Q(reserved_until__lt=now)
    if inactive_too:
        ended |= Q(updated_at__lt=inactive_since(now))
    return Q(study=study, stage=Participant.Stage.ITEMS) & ended


def expired_shares_release(*, study: Study, now: datetime, inactive_too: bool = False) -> int:
    """Time out every participant of the study whose reservation ran out and, with `inactive_too` (someone needs
    the slots now), those who made no request for STUDY_INACTIVE_MINUTES (the caller holds the study lock)."""
    from ratings.services.participants import participant_finish_if_done

    count = 0
    for participant in Participant.objects.filter(_holding_ended(study, now, inactive_too=inactive_too)):
        reason = "time_limit" if participant.reserved_until and participant.reserved_until < now else "inactive"
        # Everything answered but the end page never reached: that is a completion, not a timeout.
        if participant_finish_if_done(participant=participant, now=now).stage != Participant.Stage.FINISHED:
            share_release(
                participant=participant, status=Participant.Status.TIMED_OUT, kind="timed_out", now=now, reason=reason
            )
            count += 1
    return count


FREE, BUSY, FULL = "free", "busy", "full"


def study_availability(*, study: Study, now: datetime) -> str:
    """FREE: a slot is free (after releasing shares that ran out or went quiet; the caller holds the study lock);
    BUSY: none is free but some are reserved by participants still rating (they may come back: "try again
    later", no code); FULL: every slot is judged (the "study full" ending). Reservations alone never make a
    study full, so participants who reserve shares and do nothing cannot send others away with a paid code."""
    slots = StudySlot.objects.filter(study=study)
    if slots.filter(participant__isnull=True).exists():
        return FREE
    expired_shares_release(study=study, now=now, inactive_too=True)
    if slots.filter(participant__isnull=True).exists():
        return FREE
    return BUSY if slots.filter(item__completed_at__isnull=True).exists() else FULL


BEFORE_ITEMS = (
    Participant.Stage.LANDING,
    Participant.Stage.CONSENT,
    Participant.Stage.QUESTIONNAIRE,
    Participant.Stage.SCREENING,
    Participant.Stage.INSTRUCTIONS,
)


def abandoned_arrivals_time_out(*, study: Study, now: datetime) -> int:
    """Participants who stopped before their share, for longer than the time limit, are timed out (no slot to free)."""
    limit = now - timedelta(minutes=study.time_limit_minutes)
    # Arrived longer ago than the time limit (the countdown reached 0), or silent that long.
    abandoned = Participant.objects.filter(study=study, stage__in=BEFORE_ITEMS).filter(
        Q(created_at__lt=limit) | Q(updated_at__lt=limit)
    )
    count = 0
    for participant in abandoned:
        ParticipantEvent.objects.create(
            participant=participant, kind="timed_out", detail={"stage": participant.stage, "reason": "time_limit"}
        )
        count += 1
    abandoned.update(
        stage=Participant.Stage.FINISHED, status=Participant.Status.TIMED_OUT, finished_at=now, updated_at=now
    )
    return count


def expired_shares_release_now(*, study: Study) -> int:
    """Time out the participants whose reservation ran out, or who abandoned the study before their share (the
    admin page calls this before showing the study)."""
    now = timezone.now()
    abandoned_arrivals_time_out(study=study, now=now)
    if not Participant.objects.filter(study=study, stage=Participant.Stage.ITEMS, reserved_until__lt=now).exists():
        return 0
    with transaction.atomic():
        return expired_shares_release(study=_locked_study(study), now=now)


# --- Coverage -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    items: int
    judgements_needed: int
    judged: int
    reserved: int
    free: int
    items_complete: int
    # Answered items of included participants that hold no slot: a participant reinstated after others judged
    # their items again. Every figure and export counts these too (judged + beyond_target of them).
    beyond_target: int = 0

    @property
    def percent(self) -> float:
        return 100 * self.judged / self.judgements_needed if self.judgements_needed else 0.0

    @property
    def is_full(self) -> bool:
        return self.free == 0

    @property
    def counted(self) -> int:
        """Judgements every figure and export counts: those on slots and those beyond the target."""
        return self.judged + self.beyond_target


def study_coverage(*, study: Study) -> Coverage:
    """Slots judged (answer stored by a participant who holds the slot), reserved and free, and complete items."""
    judged_by_subject: Counter = Counter()
    subjects = set()
    reserved = free = 0
    rows = StudySlot.objects.filter(study=study).values_list(
        "clip_id", "pair_id", "participant_id", "item__completed_at"
    )
    for clip_id, pair_id, participant_id, completed_at in rows.order_by():
        subject = _subject(clip_id, pair_id)
        subjects.add(subject)
        if participant_id is None:
            free += 1
        elif completed_at is None:
            reserved += 1
        else:
            judged_by_subject[subject] += 1
    per_item = study.campaign.judgements_per_item
    campaign = study.campaign
    counted = (
        AssignmentItem.objects.filter(
            assignment__campaign=campaign,
            completed_at__isnull=False,
            assignment__rater__participant__study=study,
            assignment__rater__participant__is_preview=False,
        )
        .exclude(assignment__rater__in=campaign.excluded_raters.all())
        .exclude(attention_checks__kind=AttentionCheck.Kind.GOLD_PAIR)
        .count()
    )
    judged = sum(judged_by_subject.values())
    return Coverage(
        items=len(subjects),
        judgements_needed=len(subjects) * per_item,
        judged=judged,
        reserved=reserved,
        free=free,
        items_complete=sum(1 for count in judged_by_subject.values() if count >= per_item),
        beyond_target=max(0, counted - judged),
    )
