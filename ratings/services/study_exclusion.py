"""Attention checks and exclusion of crowd participants.

When a participant completes their share, the checks are scored (a gold pair is passed by a vote for its
gold caption; a catch caption by precision <= 2) and the study's rules applied:
- failed checks >= `exclude_failed_checks` (0: off);
- median time per item (first shown to first submitted) below `exclude_median_seconds_below` s (0: off);
- `exclude_same_answer`: every answer identical (pairwise: the same side; THumBS: the same five scores).
Any rule that holds excludes the participant with its reason. An excluded participant keeps their answers
(and their completion status: the pay export decides what the platform does), joins the campaign's excluded
raters, so every figure and export leaves their judgements out (ratings.selectors.included_votes and
included_thumbs_ratings), and gives their slots back so the items still reach their count. An admin can
exclude or reinstate by hand; every change is a ParticipantEvent naming the admin.
"""

from django.db import transaction
from django.utils import timezone

from ratings.models import AssignmentItem, PairwiseVote, ThumbsRating
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent
from ratings.services.quality import median_or_none, pairwise_answer_sequence, straightlining, thumbs_answer_sequence
from ratings.services.study_shares import (
    participant_locked_with_study,
    slots_release_for_exclusion,
    slots_retake_for_reinstatement,
)

CATCH_PRECISION_MAX = 2


def attention_checks_evaluate(*, participant: Participant) -> list[AttentionCheck]:
    """Score the participant's checks from their stored answers (an unanswered check is failed)."""
    campaign, rater = participant.study.campaign, participant.user
    checks = list(AttentionCheck.objects.filter(campaign=campaign, rater=rater).select_related("pair").order_by("pk"))
    votes = {vote.pair_id: vote for vote in PairwiseVote.objects.filter(campaign=campaign, rater=rater)}
    ratings = {
        rating.caption_id: rating
        for rating in ThumbsRating.objects.filter(
            campaign=campaign, rater=rater, caption_id__in=[check.caption_id for check in checks if check.caption_id]
        )
    }
    now = timezone.now()
    for check in checks:
        if check.kind == AttentionCheck.Kind.GOLD_PAIR:
            vote = votes.get(check.pair_id)
            check.passed = vote is not None and vote.choice == check.pair.gold_choice
        else:
            rating = ratings.get(check.caption_id)
            check.passed = rating is not None and rating.precision <= CATCH_PRECISION_MAX
        check.evaluated_at = now
    AttentionCheck.objects.bulk_update(checks, ["passed", "evaluated_at"])
    return checks


def exclusion_reasons(*, participant: Participant) -> list[str]:
    """The study's rules that the participant's answers break (empty: none)."""
    study = participant.study
    reasons = []
    checks = attention_checks_evaluate(participant=participant)
    failed = sum(1 for check in checks if not check.passed)
    if study.exclude_failed_checks and failed >= study.exclude_failed_checks:
        reasons.append(f"failed {failed} of {len(checks)} attention checks")
    items = list(
        AssignmentItem.objects.filter(
            assignment__campaign=study.campaign, assignment__rater=participant.user, completed_at__isnull=False
        ).order_by("completed_at", "position")
    )
    median = median_or_none(item.seconds_spent for item in items)
    threshold = study.exclude_median_seconds_below
    if threshold and median is not None and median < threshold:
        reasons.append(f"median time per item {median:.1f} s, below {threshold:g} s")
    if study.exclude_same_answer:
        campaign, rater = study.campaign, participant.user
        if items and items[0].pair_id is not None:
            votes = {vote.pair_id: vote for vote in PairwiseVote.objects.filter(campaign=campaign, rater=rater)}
            answers = pairwise_answer_sequence(items, votes)
        else:
            ratings = {
                rating.caption_id: rating for rating in ThumbsRating.objects.filter(campaign=campaign, rater=rater)
            }
            answers = thumbs_answer_sequence(items, ratings)
        if straightlining(answers).all_same:
            reasons.append("the same answer on every item")
    return reasons


def exclusion_apply_rules(*, participant: Participant) -> list[str]:
    """Exclude a participant who completed their share if a rule holds; previews only get the reasons logged."""
    reasons = exclusion_reasons(participant=participant)
    if reasons and participant.is_preview:
        ParticipantEvent.objects.create(
            participant=participant, kind="rules_would_exclude", detail={"reasons": reasons}
        )
    elif reasons:
        participant_exclude(participant=participant, reasons=reasons)
    return reasons


def participant_exclude(*, participant: Participant, reasons: list[str], by=None) -> Participant:
    """Leave the participant's judgements out of every figure (kept, flagged) and free their slots."""
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if participant.is_excluded:
            return participant
        participant.excluded_at = timezone.now()
        participant.exclusion_reasons = list(reasons)
        participant.save(update_fields=["excluded_at", "exclusion_reasons", "updated_at"])
        participant.study.campaign.excluded_raters.add(participant.user)
        released = slots_release_for_exclusion(participant=participant)
        ParticipantEvent.objects.create(
            participant=participant, kind="excluded", detail={"reasons": list(reasons), **released}, by=by
        )
    return participant


def participant_reinstate(*, participant: Participant, by) -> Participant:
    """Count the participant's judgements again (logged with the admin); slots are taken back where still free."""
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if not participant.is_excluded:
            return participant
        previous = participant.exclusion_reasons
        participant.excluded_at = None
        participant.exclusion_reasons = []
        participant.save(update_fields=["excluded_at", "exclusion_reasons", "updated_at"])
        participant.study.campaign.excluded_raters.remove(participant.user)
        retaken = slots_retake_for_reinstatement(participant=participant)
        ParticipantEvent.objects.create(
            participant=participant, kind="reinstated", detail={"previous_reasons": previous, **retaken}, by=by
        )
    return participant
