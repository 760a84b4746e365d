"""How far a study's judgements are: slots judged, reserved and free, and answers beyond the target."""

from collections import Counter
from dataclasses import dataclass

from ratings.models import AssignmentItem
from ratings.models_study import AttentionCheck, Study, StudySlot
from ratings.services.study_shares.slots import slot_subject


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
        subject = slot_subject(clip_id, pair_id)
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
