"""Judgements made on the rating pages: THumBS ratings, pairwise votes, listening and drafts.

The listening rule is enforced here, not only in the browser: an item can be submitted
only after the page reported that the clip was heard (`item_mark_listened`), and that
report is refused when it arrives sooner after the item was first shown than the clip
could have been heard.
"""

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ratings.models import AssignmentItem, Campaign, PairwiseVote, Source, ThumbsRating

TENTH = Decimal("0.1")
DRAFT_MAX_CHARACTERS = 20_000
# Slack for timer resolution and network delay when checking how long a clip was heard.
LISTENING_SLACK_FRACTION = 0.9
LISTENING_SLACK_SECONDS = 0.5
SIDES = ("left", "right", "none")


class JudgementError(ValueError):
    """A judgement was refused (message says why)."""


@dataclass(frozen=True)
class CaptionScores:
    caption_id: int
    precision: int
    recall: int
    fluency: Decimal = Decimal("0")
    conciseness: Decimal = Decimal("0")
    irrelevance: Decimal = Decimal("0")
    comment: str = ""


def listening_seconds_required(*, item: AssignmentItem) -> float:
    """Seconds of listening the rule asks for: the whole clip, or MUST_LISTEN_SECONDS if shorter."""
    duration = item.clip.duration_seconds
    must_listen = settings.MUST_LISTEN_SECONDS
    if duration is None:
        return float(must_listen)
    if must_listen > 0:
        return float(min(must_listen, duration))
    return float(duration)


def _lock(item: AssignmentItem) -> AssignmentItem:
    # of=("self",): PostgreSQL refuses FOR UPDATE on the nullable side of the outer join to `pair`.
    return (
        AssignmentItem.objects.select_for_update(of=("self",))
        .select_related("assignment__campaign", "clip", "pair")
        .get(pk=item.pk)
    )


def _check_open(item: AssignmentItem) -> None:
    if not item.assignment.campaign.is_active:
        raise JudgementError(f"campaign {item.assignment.campaign.name} is closed")


@transaction.atomic
def item_mark_shown(*, item: AssignmentItem) -> AssignmentItem:
    """Start the item's clock the first time the rater sees it."""
    item = _lock(item)
    if item.first_shown_at is None:
        item.first_shown_at = timezone.now()
        item.save(update_fields=["first_shown_at"])
    return item


@transaction.atomic
def item_mark_listened(*, item: AssignmentItem) -> AssignmentItem:
    """Record that the rater heard the clip; refused if it comes too soon after the item was shown."""
    item = _lock(item)
    if item.listened_at is not None:
        return item
    if item.first_shown_at is None:
        raise JudgementError("the item was never shown")
    now = timezone.now()
    elapsed = (now - item.first_shown_at).total_seconds()
    required = listening_seconds_required(item=item)
    if elapsed < required * LISTENING_SLACK_FRACTION - LISTENING_SLACK_SECONDS:
        raise JudgementError(f"the clip needs {required:.1f} s of listening; only {elapsed:.1f} s have passed")
    item.listened_at = now
    item.save(update_fields=["listened_at"])
    return item


@transaction.atomic
def item_draft_save(*, item: AssignmentItem, draft: dict) -> AssignmentItem:
    """Keep unsubmitted form state so a reload or a later visit restores it."""
    if not isinstance(draft, dict):
        raise JudgementError("a draft must be a JSON object")
    if len(json.dumps(draft)) > DRAFT_MAX_CHARACTERS:
        raise JudgementError(f"the draft is larger than {DRAFT_MAX_CHARACTERS} characters")
    item = _lock(item)
    if item.completed_at is not None:
        # A completed item shows its saved judgement; a save still in flight from the submitted page is stale.
        return item
    item.draft = draft
    item.save(update_fields=["draft"])
    return item


def _complete(item: AssignmentItem) -> None:
    """Stamp the first completion (the time spent counts from the first showing); later edits keep it."""
    fields = ["draft"]
    item.draft = {}
    if item.completed_at is None:
        item.completed_at = timezone.now()
        if item.first_shown_at:
            item.seconds_spent = (item.completed_at - item.first_shown_at).total_seconds()
        fields += ["completed_at", "seconds_spent"]
    item.save(update_fields=fields)


def _penalty(value, *, name: str, caption_number: int) -> Decimal:
    try:
        penalty = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise JudgementError(f"caption {caption_number}: {name} {value!r} is not a number") from None
    if not penalty.is_finite() or not Decimal("-2") <= penalty <= 0:
        raise JudgementError(f"caption {caption_number}: {name} must be between -2 and 0, got {value}")
    if penalty != penalty.quantize(TENTH):
        raise JudgementError(f"caption {caption_number}: {name} allows one decimal, got {value}")
    return penalty.quantize(TENTH)


def _score(value, *, name: str, caption_number: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise JudgementError(f"caption {caption_number}: {name} must be a whole number from 1 to 5, got {value!r}")
    return value


@transaction.atomic
def thumbs_item_submit(*, item: AssignmentItem, scores: list[CaptionScores], synthesized: str) -> list[ThumbsRating]:
    """Save one clip's THumBS ratings (one row per caption, source web) and complete the item."""
    item = _lock(item)
    _check_open(item)
    campaign = item.assignment.campaign
    if campaign.task_type != Campaign.TaskType.THUMBS:
        raise JudgementError("this item belongs to a pairwise campaign")
    if item.listened_at is None:
        raise JudgementError("listen to the clip before submitting")
    if synthesized not in ThumbsRating.Synthesized.values:
        raise JudgementError(f"'is this audio synthesized?' must be yes or no, got {synthesized!r}")
    expected = list(item.caption_order)
    given = [score.caption_id for score in scores]
    if sorted(given) != sorted(expected) or len(set(given)) != len(given):
        raise JudgementError(f"expected ratings for the item's {len(expected)} captions, got {len(given)}")
    ratings = []
    for score in scores:
        number = expected.index(score.caption_id) + 1
        rating, _ = ThumbsRating.objects.update_or_create(
            rater=item.assignment.rater,
            caption_id=score.caption_id,
            defaults={
                "campaign": campaign,
                "precision": _score(score.precision, name="precision", caption_number=number),
                "recall": _score(score.recall, name="recall", caption_number=number),
                "fluency": _penalty(score.fluency, name="fluency", caption_number=number),
                "conciseness": _penalty(score.conciseness, name="conciseness", caption_number=number),
                "irrelevance": _penalty(score.irrelevance, name="irrelevance", caption_number=number),
                "synthesized": synthesized,
                "comment": score.comment.strip(),
                "source": Source.WEB,
                "workbook_sha256": "",
            },
        )
        ratings.append(rating)
    _complete(item)
    return ratings


@transaction.atomic
def pairwise_item_submit(*, item: AssignmentItem, side: str) -> PairwiseVote:
    """Save a vote given as the side the rater preferred ("left", "right" or "none") and complete the item."""
    item = _lock(item)
    _check_open(item)
    if item.pair_id is None:
        raise JudgementError("this item is not a caption pair")
    if item.listened_at is None:
        raise JudgementError("listen to the clip before submitting")
    if side not in SIDES:
        raise JudgementError(f"choose left, right or none, got {side!r}")
    left_caption = "a" if item.a_on_left else "b"
    right_caption = "b" if item.a_on_left else "a"
    choice = {"left": left_caption, "right": right_caption, "none": "none"}[side]
    vote, _ = PairwiseVote.objects.update_or_create(
        rater=item.assignment.rater,
        pair_id=item.pair_id,
        defaults={
            "campaign": item.assignment.campaign,
            "choice": choice,
            "left_side": left_caption,
            "source": Source.WEB,
        },
    )
    _complete(item)
    return vote
