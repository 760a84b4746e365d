"""Attention checks and exclusion of crowd participants.

When a participant completes their share, the checks are scored (a gold pair is passed by a vote for its
gold caption; a catch caption by precision <= 2) and the study's rules applied:
- failed checks >= `exclude_failed_checks` (0: off);
- median time per item (first shown to first submitted) below `exclude_median_seconds_below` s (0: off);
- `exclude_same_answer`: every answer identical (pairwise: the same side; THumBS: the same five scores).
Any rule that holds excludes the participant with its reason and rule code (what a code means for pay:
ratings/services/study_policy.py; these four are performance rules, so an excluded participant is still paid).
An excluded participant keeps their answers (and their completion status: the pay export decides what the
platform does), joins the campaign's excluded raters, so every figure and export leaves their judgements out
(ratings.selectors.included_votes and included_thumbs_ratings), and gives their slots back so the items still
reach their count. An admin can exclude (choosing the kind: data quality, or failed instructional checks) or
reinstate by hand; every change is a ParticipantEvent naming the admin.
"""

from django.db import transaction
from django.utils import timezone

from ratings.models import AssignmentItem, PairwiseVote, ThumbsRating
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent
from ratings.services.quality import median_or_none, pairwise_answer_sequence, straightlining, thumbs_answer_sequence
from ratings.services.study_policy import rule_kind
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


CHECK_RULES = {AttentionCheck.Kind.GOLD_PAIR: "gold_pair", AttentionCheck.Kind.CATCH_CAPTION: "catch_caption"}


def exclusion_findings(*, participant: Participant) -> list[tuple[str, str]]:
    """(rule code, reason) of each of the study's rules that the participant's answers break (empty: none).

    The codes name rules of ratings/services/study_policy.py, which says what each means for pay."""
    study = participant.study
    findings = []
    checks = attention_checks_evaluate(participant=participant)
    failed = [check for check in checks if not check.passed]
    # At or above the threshold excludes; one failure fewer keeps the participant in (and paid).
    if study.exclude_failed_checks and len(failed) >= study.exclude_failed_checks:
        findings.append((CHECK_RULES[failed[0].kind], f"failed {len(failed)} of {len(checks)} attention checks"))
    items = list(
        AssignmentItem.objects.filter(
            assignment__campaign=study.campaign, assignment__rater=participant.user, completed_at__isnull=False
        ).order_by("completed_at", "position")
    )
    median = median_or_none(item.seconds_spent for item in items)
    threshold = study.exclude_median_seconds_below
    if threshold and median is not None and median < threshold:
        findings.append(("median_time", f"median time per item {median:.1f} s, below {threshold:g} s"))
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
            findings.append(("same_answer", "the same answer on every item"))
    return findings


def exclusion_apply_rules(*, participant: Participant) -> list[str]:
    """Exclude a participant who completed their share if a rule holds; previews only get the reasons logged."""
    findings = exclusion_findings(participant=participant)
    reasons = [reason for _, reason in findings]
    if findings and participant.is_preview:
        ParticipantEvent.objects.create(
            participant=participant, kind="rules_would_exclude", detail={"reasons": reasons}
        )
    elif findings:
        participant_exclude(participant=participant, reasons=reasons, codes=[code for code, _ in findings])
    return reasons


def participant_exclude(
    *, participant: Participant, reasons: list[str], codes: list[str] = ("admin_quality",), by=None
) -> Participant:
    """Leave the participant's judgements out of every figure (kept, flagged) and free their slots.

    `codes` name the rules (ratings/services/study_policy.py) that decide the pay action; PolicyError for an
    unknown one, before anything changes."""
    codes = list(dict.fromkeys(codes))
    for code in codes:
        rule_kind(code)
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if participant.is_excluded:
            return participant
        participant.excluded_at = timezone.now()
        participant.exclusion_reasons = list(reasons)
        participant.exclusion_codes = codes
        participant.save(update_fields=["excluded_at", "exclusion_reasons", "exclusion_codes", "updated_at"])
        participant.study.campaign.excluded_raters.add(participant.user)
        released = slots_release_for_exclusion(participant=participant)
        ParticipantEvent.objects.create(
            participant=participant,
            kind="excluded",
            detail={"reasons": list(reasons), "rules": codes, **released},
            by=by,
        )
    return participant


class ReinstatementError(ValueError):
    """The participant cannot be reinstated (message says why); nothing changed."""


def participant_reinstate(*, participant: Participant, by, over_target_ok: bool = False) -> Participant:
    """Count the participant's judgements again (logged with the admin), taking back a free slot of each item
    they answered.

    When others have judged some of those items since the exclusion (their slots were given back and taken
    again), those items would get more judgements than the study's target: refused (ReinstatementError) unless
    `over_target_ok`, and then the study's coverage counts them as judgements beyond the target, so coverage and
    exports still agree."""
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if not participant.is_excluded:
            return participant
        retaken = slots_retake_for_reinstatement(participant=participant, partial=over_target_ok)
        if retaken["items_over_count"] and not over_target_ok:
            raise ReinstatementError(
                f"{retaken['items_over_count']} of this participant's items have been judged by others since the "
                "exclusion, as many times as the study asks: reinstating would count those items more often than "
                "the target. The participant stays excluded (reinstate anyway to count them beyond the target)."
            )
        previous = participant.exclusion_reasons
        participant.excluded_at = None
        participant.exclusion_reasons = []
        participant.exclusion_codes = []
        participant.save(update_fields=["excluded_at", "exclusion_reasons", "exclusion_codes", "updated_at"])
        participant.study.campaign.excluded_raters.remove(participant.user)
        ParticipantEvent.objects.create(
            participant=participant, kind="reinstated", detail={"previous_reasons": previous, **retaken}, by=by
        )
    return participant
