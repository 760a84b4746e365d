"""Quality control of a campaign's raters: gold items, speed, agreement, straight-lining, exclusion.

The statistics are small pure functions over plain dicts and lists (tested on hand-made
data); `campaign_rater_quality` loads a campaign's rows and applies them per rater.

- Gold pass rate: share of a rater's votes on gold pairs that match `gold_choice`.
- Median time per item: `AssignmentItem.seconds_spent` (first shown, or the previous item done, to first completion).
- Agreement, pairwise: share of the rater's votes that equal the majority choice of the
  *other* included raters on the same pair (pairs where the others tie are skipped).
- Agreement, THumBS: mean absolute difference between the rater's overall score and the
  mean overall of the other included raters on the same caption, and the Pearson
  correlation of the two over captions (None under three captions or without variation).
- Straight-lining: in the order the rater completed items, the share of answers identical
  to the previous answer, the longest run of identical answers, and whether every answer
  is the same. Pairwise answers count by side (left / right / none), since always picking
  one side is the pattern to catch; THumBS answers are the five scores of a caption.
"""

import statistics
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from ratings import projection
from ratings.models import AssignmentItem, Campaign, PairwiseVote, ThumbsRating

# Fewer shared captions than this give no meaningful correlation.
MIN_CAPTIONS_FOR_CORRELATION = 3


def median_or_none(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def majority_agreement(
    answers: dict[Hashable, dict[Hashable, str]], *, excluded: set[Hashable] = frozenset()
) -> dict[Hashable, tuple[int, int]]:
    """Per rater: (votes equal to the others' majority, votes compared). `answers[item][rater] = choice`."""
    result: dict[Hashable, list[int]] = {}
    for by_rater in answers.values():
        for rater, choice in by_rater.items():
            others = Counter(
                other_choice for other, other_choice in by_rater.items() if other != rater and other not in excluded
            )
            ranked = others.most_common(2)
            if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
                continue
            tally = result.setdefault(rater, [0, 0])
            tally[0] += int(choice == ranked[0][0])
            tally[1] += 1
    return {rater: (agreeing, compared) for rater, (agreeing, compared) in result.items()}


def pearson_or_none(first: Sequence[float], second: Sequence[float]) -> float | None:
    if len(first) < MIN_CAPTIONS_FOR_CORRELATION:
        return None
    try:
        return statistics.correlation(first, second)
    except statistics.StatisticsError:  # one side constant
        return None


@dataclass(frozen=True)
class Deviation:
    mean_absolute_difference: float | None
    correlation: float | None
    compared: int


def deviation_from_others(
    scores: dict[Hashable, dict[Hashable, float]], *, excluded: set[Hashable] = frozenset()
) -> dict[Hashable, Deviation]:
    """Per rater: how far their score is from the other included raters' mean. `scores[item][rater] = score`."""
    own: dict[Hashable, list[float]] = {}
    others_mean: dict[Hashable, list[float]] = {}
    for by_rater in scores.values():
        for rater, score in by_rater.items():
            others = [
                other_score for other, other_score in by_rater.items() if other != rater and other not in excluded
            ]
            if not others:
                continue
            own.setdefault(rater, []).append(float(score))
            others_mean.setdefault(rater, []).append(statistics.fmean(others))
    result = {}
    for rater, values in own.items():
        means = others_mean[rater]
        result[rater] = Deviation(
            mean_absolute_difference=statistics.fmean(abs(a - b) for a, b in zip(values, means, strict=True)),
            correlation=pearson_or_none(values, means),
            compared=len(values),
        )
    return result


@dataclass(frozen=True)
class Straightlining:
    repeat_share: float | None
    longest_run: int
    all_same: bool


def straightlining(answers: Sequence[Hashable]) -> Straightlining:
    """Identical consecutive answers in `answers` (in the order given)."""
    if not answers:
        return Straightlining(repeat_share=None, longest_run=0, all_same=False)
    repeats = sum(1 for previous, current in zip(answers, answers[1:], strict=False) if previous == current)
    longest = run = 1
    for previous, current in zip(answers, answers[1:], strict=False):
        run = run + 1 if previous == current else 1
        longest = max(longest, run)
    return Straightlining(
        repeat_share=repeats / (len(answers) - 1) if len(answers) > 1 else None,
        longest_run=longest,
        all_same=len(answers) > 1 and len(set(answers)) == 1,
    )


@dataclass
class RaterQuality:
    rater_id: int
    username: str
    is_excluded: bool
    assigned: int = 0
    completed: int = 0
    median_seconds: float | None = None
    gold_compared: int = 0
    gold_passed: int = 0
    agreement: float | None = None
    agreement_compared: int = 0
    mean_absolute_difference: float | None = None
    correlation: float | None = None
    straightlining: Straightlining = field(default_factory=lambda: straightlining([]))


def campaign_rater_quality(*, campaign: Campaign) -> list[RaterQuality]:
    """One row per assigned rater (excluded raters included, flagged); see the module docstring."""
    excluded = set(campaign.excluded_raters.values_list("pk", flat=True))
    rows: dict[int, RaterQuality] = {}
    for assignment in campaign.assignments.select_related("rater").order_by("rater__username"):
        rows[assignment.rater_id] = RaterQuality(
            rater_id=assignment.rater_id,
            username=assignment.rater.get_username(),
            is_excluded=assignment.rater_id in excluded,
        )
    items_by_rater: dict[int, list[AssignmentItem]] = {}
    for item in AssignmentItem.objects.filter(assignment__campaign=campaign).select_related("assignment"):
        items_by_rater.setdefault(item.assignment.rater_id, []).append(item)
    for rater_id, items in items_by_rater.items():
        row = rows[rater_id]
        row.assigned = len(items)
        row.completed = sum(1 for item in items if item.completed_at)
        row.median_seconds = median_or_none(item.seconds_spent for item in items if item.completed_at)
    completion_order = {
        rater_id: sorted(
            (item for item in items if item.completed_at), key=lambda item: (item.completed_at, item.position)
        )
        for rater_id, items in items_by_rater.items()
    }
    if campaign.task_type == Campaign.TaskType.PAIRWISE:
        _pairwise_quality(campaign, rows, excluded, completion_order)
    else:
        _thumbs_quality(campaign, rows, excluded, completion_order)
    return list(rows.values())


def _pairwise_quality(campaign, rows, excluded, completion_order) -> None:
    votes = list(PairwiseVote.objects.filter(campaign=campaign, rater_id__in=rows).select_related("pair"))
    answers: dict[int, dict[int, str]] = {}
    votes_by_rater: dict[int, dict[int, PairwiseVote]] = {}
    for vote in votes:
        answers.setdefault(vote.pair_id, {})[vote.rater_id] = vote.choice
        votes_by_rater.setdefault(vote.rater_id, {})[vote.pair_id] = vote
        if vote.pair.gold_choice:
            row = rows[vote.rater_id]
            row.gold_compared += 1
            row.gold_passed += int(vote.choice == vote.pair.gold_choice)
    for rater_id, (agreeing, compared) in majority_agreement(answers, excluded=excluded).items():
        rows[rater_id].agreement = agreeing / compared
        rows[rater_id].agreement_compared = compared
    for rater_id, items in completion_order.items():
        rows[rater_id].straightlining = straightlining(
            pairwise_answer_sequence(items, votes_by_rater.get(rater_id, {}))
        )


def _thumbs_quality(campaign, rows, excluded, completion_order) -> None:
    ratings = list(ThumbsRating.objects.filter(campaign=campaign, rater_id__in=rows))
    overall: dict[int, dict[int, float]] = {}
    ratings_by_rater: dict[int, dict[int, ThumbsRating]] = {}
    for rating in ratings:
        overall.setdefault(rating.caption_id, {})[rating.rater_id] = float(rating.overall)
        ratings_by_rater.setdefault(rating.rater_id, {})[rating.caption_id] = rating
    for rater_id, deviation in deviation_from_others(overall, excluded=excluded).items():
        rows[rater_id].mean_absolute_difference = deviation.mean_absolute_difference
        rows[rater_id].correlation = deviation.correlation
        rows[rater_id].agreement_compared = deviation.compared
    for rater_id, items in completion_order.items():
        rows[rater_id].straightlining = straightlining(
            thumbs_answer_sequence(items, ratings_by_rater.get(rater_id, {}))
        )


def pairwise_answer_sequence(items: Sequence[AssignmentItem], votes_by_pair: dict) -> list[str]:
    """One rater's answers as sides (left / right / none), in the order of `items` (straight-lining)."""
    votes = [votes_by_pair[item.pair_id] for item in items if item.pair_id in votes_by_pair]
    return [projection.stored_vote_side(choice=vote.choice, left_side=vote.left_side) for vote in votes]


def thumbs_answer_sequence(items: Sequence[AssignmentItem], ratings_by_caption: dict) -> list[tuple]:
    """One rater's answers as the five scores of each caption, items in the order given, captions in page order."""
    answers = []
    for item in items:
        for caption_id in item.caption_order:
            rating = ratings_by_caption.get(caption_id)
            if rating:
                answers.append(
                    (rating.precision, rating.recall, rating.fluency, rating.conciseness, rating.irrelevance)
                )
    return answers


@transaction.atomic
def campaign_rater_exclude(*, campaign: Campaign, rater: AbstractBaseUser, excluded: bool, by=None) -> None:
    """Leave a rater out of (or back into) the campaign's reports; their data stays.

    A crowd participant of the campaign's study goes through the study's exclusion (reasons, slots, log).
    """
    from ratings.models_study import Participant
    from ratings.services.study_exclusion import participant_exclude, participant_reinstate

    participant = Participant.objects.filter(user=rater, study__campaign=campaign).first()
    if participant is not None:
        if excluded:
            participant_exclude(participant=participant, reasons=["excluded by an admin"], by=by)
        else:
            participant_reinstate(participant=participant, by=by)
        return
    if excluded:
        campaign.excluded_raters.add(rater)
    else:
        campaign.excluded_raters.remove(rater)
