"""The study's items and their slots, the setup check, and the locks every share operation takes in one order."""

import random
from datetime import datetime, timedelta

from django.db import transaction

from common.compiled_reads import CompiledRead
from ratings.models import Campaign, CaptionPair
from ratings.models_study import Participant, Study, StudySlot
from ratings.services.campaigns import campaign_items


class StudySetupError(ValueError):
    """The campaign cannot be published as a study with these settings (message says why)."""


def is_pairwise(study: Study) -> bool:
    return study.campaign.task_type == Campaign.TaskType.PAIRWISE


def study_regular_items(study: Study) -> list:
    """The items participants' judgements must cover: clips (THumBS) or the pairs that are not gold (pairwise)."""
    items = campaign_items(study.campaign)
    if is_pairwise(study):
        return [pair for pair in items if not pair.gold_choice]
    return items


def study_gold_pairs(study: Study) -> list[CaptionPair]:
    return list(study.campaign.pairs.exclude(gold_choice="").order_by("pk"))


def study_setup_check(study: Study) -> None:
    """Raise StudySetupError when the campaign cannot supply shares and checks as configured."""
    regular = study_regular_items(study)
    if not regular:
        raise StudySetupError("the campaign has no items to rate (pairwise: gold pairs are checks, not items)")
    if study.attention_checks and is_pairwise(study) and len(study_gold_pairs(study)) < study.attention_checks:
        raise StudySetupError(
            f"{study.attention_checks} attention checks need as many gold HI pairs; the campaign has "
            f"{len(study_gold_pairs(study))} (create it with HI pairs as gold items)"
        )
    if study.attention_checks and not is_pairwise(study):
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


def slot_subject(clip_id: int, pair_id: int | None) -> int:
    """The item a slot belongs to: its pair (pairwise) or its clip (THumBS)."""
    return pair_id if pair_id is not None else clip_id


# Lock order, everywhere: the study row, then the participant row, then items. of=("self",): only these rows
# (PostgreSQL would otherwise also lock every joined row: the campaign, the dataset, the user).


# Both locks are taken on every arrival (the study's) and every finished share, release and exclusion: their SQL is
# compiled once per process (compiling the joined read was about a sixth of an arrival's CPU).
_STUDY_LOCK = CompiledRead(
    lambda study_id: Study.objects.select_for_update(of=("self",)).select_related("campaign").filter(pk=study_id),
    study_id=-2_100_000_611,
)
_PARTICIPANT_LOCK = CompiledRead(
    lambda participant_id: Participant.objects.select_for_update(of=("self",))
    .select_related("study__campaign", "user")
    .filter(pk=participant_id),
    participant_id=-2_100_000_612,
)


def _locked_study(study: Study) -> Study:
    locked = _STUDY_LOCK.first(study_id=study.pk)
    if locked is None:
        raise Study.DoesNotExist(f"study {study.pk} is gone")
    return locked


def participant_locked(participant: Participant) -> Participant:
    locked = _PARTICIPANT_LOCK.first(participant_id=participant.pk)
    if locked is None:
        raise Participant.DoesNotExist(f"participant {participant.pk} is gone")
    return locked


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
    return participant_locked(participant)


def spread_positions(*, count: int, length: int, rng: random.Random) -> list[int]:
    """`count` distinct indexes in range(length), one in each of `count` equal segments (checks spread evenly)."""
    count = min(count, length)
    positions = []
    for segment in range(count):
        start = segment * length // count
        end = max(start + 1, (segment + 1) * length // count)
        positions.append(rng.randrange(start, end))
    return positions
