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
- Concurrency: allocation and release lock the study row (SELECT ... FOR UPDATE; SQLite serialises writers)
  and then the participant row; slots are taken with a conditional UPDATE. Whatever the locks do, the slot
  constraints (ratings/models_study.py) make over-assignment and a second slot of one item impossible.
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


def _free_subjects(
    study: Study, rng: random.Random, count: int, *, exclude_clip_ids: set[int] = frozenset()
) -> list[tuple[int, int]]:
    """Up to `count` (subject, free slot id) of the items with a free slot, least covered first, ties at random.

    One query, counted by the database (one row per item, not per slot): this runs under the study's lock, so
    every participant starting at the same moment waits for it. Which of an item's free slots is taken does not
    matter (a slot's number only keeps an item's slots distinct); the one with the lowest id is."""
    coverage = (
        StudySlot.objects.filter(study=study)
        .exclude(clip_id__in=list(exclude_clip_ids))
        .order_by()
        .values("clip_id", "pair_id")
        .annotate(
            taken=Count("pk", filter=Q(participant__isnull=False)),
            free_slot=Min("pk", filter=Q(participant__isnull=True)),
        )
        .values_list("clip_id", "pair_id", "taken", "free_slot")
    )
    open_subjects = [
        (taken, rng.random(), _subject(clip_id, pair_id), free_slot)
        for clip_id, pair_id, taken, free_slot in coverage
        if free_slot is not None
    ]
    open_subjects.sort()
    return [(subject, slot_id) for _, _, subject, slot_id in open_subjects[:count]]


def share_allocate(*, participant: Participant, now: datetime | None = None) -> Allocation:
    """Reserve the participant's share (idempotent: a participant who has one gets it back)."""
    now = now or timezone.now()
    with transaction.atomic():
        study = _locked_study(participant.study)
        participant = _locked_participant(participant)
        assignment = Assignment.objects.filter(campaign=study.campaign, rater=participant.user).first()
        if assignment is not None and assignment.items.exists():
            return Allocation(items=projection.assignment_items(assignment), is_full=False, participant=participant)
        # Shares of participants whose time ran out, or who have gone quiet, come back before anything is chosen.
        expired_shares_release(study=study, now=now, inactive_too=True)
        # Every draw (which items, their order, where the checks go) comes from the assignment's secret source
        # (ratings/projection.py): ids and the campaign's seed do not predict a participant's order.
        created = assignment is None
        assignment = assignment or Assignment.objects.create(campaign=study.campaign, rater=participant.user)
        rng = projection.assignment_random(assignment, "study-share")
        subjects, checks = _share_choose(study, rng)
        if not subjects:
            if created:  # no empty study left behind in the campaign's assignments
                assignment.delete()
            return Allocation(items=[], is_full=True, participant=participant)
        items = _share_items_create(study, assignment, [subject for subject, _ in subjects], checks, rng)
        if not participant.is_preview:
            _slots_take(study, participant, assignment, [slot_id for _, slot_id in subjects])
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


def _slots_take(study: Study, participant: Participant, assignment: Assignment, slot_ids: list[int]) -> None:
    """Give the participant the slots, each pointing at the item just made for its subject (one UPDATE)."""
    if _is_pairwise(study):
        item_of_slot = AssignmentItem.objects.filter(assignment=assignment, pair_id=OuterRef("pair_id"))
    else:
        item_of_slot = AssignmentItem.objects.filter(
            assignment=assignment, pair__isnull=True, clip_id=OuterRef("clip_id")
        )
    # order_by(): the items' default ordering would join and sort for every slot row, under the study's lock.
    taken = StudySlot.objects.filter(pk__in=slot_ids, participant__isnull=True).update(
        participant=participant, item=Subquery(item_of_slot.order_by().values("pk")[:1])
    )
    if taken != len(slot_ids):  # cannot happen under the study lock; the constraints stop it regardless
        raise RuntimeError("a slot was taken by someone else during allocation")


def _share_choose(study: Study, rng: random.Random) -> tuple[list[tuple[int, int]], list[CaptionPair]]:
    """The share's (subject, free slot) and its gold checks (pairwise), under the gold rule: no gold pair of a
    clip the share has another item of. A gold pair whose clip comes back on other items is answered by its
    text alone (its own reference reads like that clip's other captions; ratings/services/campaigns.py, GoldRule).

    The least-covered items come first; where their clips leave too few gold pairs, the gold pairs are chosen
    first and the items among the other clips, unless those have no free slot left (then fewer checks)."""
    subjects = _free_subjects(study, rng, study.items_per_participant)
    if not _is_pairwise(study) or not study.attention_checks or not subjects:
        return subjects, []
    clip_of = dict(CaptionPair.objects.filter(pk__in=[subject for subject, _ in subjects]).values_list("pk", "clip_id"))
    checks = _gold_pairs_choose(study, rng, avoid_clip_ids=set(clip_of.values()))
    if len(checks) < study.attention_checks:
        # Golds of the clips with the fewest free items first: they leave the most items to the share.
        free_by_clip = dict(
            StudySlot.objects.filter(study=study, participant__isnull=True)
            .order_by()
            .values_list("clip_id")
            .annotate(items=Count("pair_id", distinct=True))
        )
        first_checks = _gold_pairs_choose(study, rng, avoid_clip_ids=set(), free_by_clip=free_by_clip)
        other_subjects = _free_subjects(
            study, rng, study.items_per_participant, exclude_clip_ids={pair.clip_id for pair in first_checks}
        )
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


def _gold_pairs_choose(
    study: Study, rng: random.Random, *, avoid_clip_ids: set[int], free_by_clip: dict | None = None
) -> list[CaptionPair]:
    """The study's least-used gold pairs (ties at random) for one share: none of `avoid_clip_ids`, no two of one
    clip, and of distinct donors while the least-used allow (two foreign captions of one donor read alike).
    With `free_by_clip` (clip -> items with a free slot), golds of the clips with the fewest come first."""
    used = dict(
        AttentionCheck.objects.filter(campaign=study.campaign, kind=AttentionCheck.Kind.GOLD_PAIR)
        .order_by()
        .values_list("pair_id")
        .annotate(count=Count("pk"))
    )
    gold = [pair for pair in study_gold_pairs(study) if pair.clip_id not in avoid_clip_ids]
    donors = gold_donors(pair.pk for pair in gold)
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
            slot = StudySlot.objects.filter(study=study, participant__isnull=True, **lookup).order_by("number").first()
            if slot is None:
                over += 1
            else:
                plan.append((slot, item))
        if over and not partial:
            return {"slots_retaken": 0, "items_over_count": over}
        for slot, item in plan:
            slot.participant, slot.item = participant, item
            slot.save(update_fields=["participant", "item"])
        return {"slots_retaken": len(plan), "items_over_count": over}


def inactive_since(now: datetime) -> datetime:
    """Participants whose last request came before this are inactive (STUDY_INACTIVE_MINUTES)."""
    return now - timedelta(minutes=settings.STUDY_INACTIVE_MINUTES)


def expired_shares_release(*, study: Study, now: datetime, inactive_too: bool = False) -> int:
    """Time out every participant of the study whose reservation ran out and, with `inactive_too` (someone needs
    the slots now), those who made no request for STUDY_INACTIVE_MINUTES (the caller holds the study lock)."""
    from ratings.services.participants import participant_finish_if_done

    holding = Participant.objects.filter(study=study, stage=Participant.Stage.ITEMS)
    ended = Q(reserved_until__lt=now)
    if inactive_too:
        ended |= Q(updated_at__lt=inactive_since(now))
    count = 0
    for participant in holding.filter(ended):
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
