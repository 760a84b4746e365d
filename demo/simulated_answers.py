"""Judgements of simulated raters (the demo's study), stored as what they are: simulated.

A simulated rater is an account nobody can sign in to (demo.dataset.simulated_users_ensure:
no usable password). It never opens a page, so the listening rule (ratings/services/listening.py), which
accepts "listened" only after the server streamed the clip's audio, cannot be met by it; faking served
bytes would make a simulated answer indistinguishable from a heard one. So its answers are written here,
and marked on every row they touch:

- ratings and votes carry `source = SIMULATED`;
- each completed item has `audio_served = {"simulated": true}` (no byte ranges: nothing was served), the
  simulated times it was shown, played through and answered, and one audit event of kind SIMULATED
  holding the answer in the rater's terms (caption numbers in the item's order, sides; ratings/projection.py).

Values are checked as the rating pages check them (judgements.caption_values_clean, the sides and choices
of a pair), and an account that can sign in is refused: a person's item never gets a simulated answer.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction

from ratings import projection
from ratings.models import AssignmentItem, Campaign, ItemEvent, PairwiseVote, Source, ThumbsRating
from ratings.services.judgements import JudgementError, caption_values_clean, thumbs_answer

SIMULATED_AUDIO_RECORD = {"simulated": True}


@dataclass
class SimulatedAnswer:
    """One item's answer: `scores` by caption id (THumBS) or `choice` "a" / "b" / "none" (a pair), and when."""

    item: AssignmentItem
    shown_at: datetime
    listened_seconds: float  # the clip played through, from shown_at
    seconds: float  # shown to answered
    scores: dict[int, dict] = field(default_factory=dict)
    choice: str = ""


def simulated_raters_check(raters) -> None:
    """JudgementError unless every rater is a simulated account (one nobody can sign in to)."""
    people = sorted(rater.username for rater in raters if rater.has_usable_password())
    if people:
        raise JudgementError(f"simulated answers are only stored for simulated accounts, not for {', '.join(people)}")


@transaction.atomic
def simulated_answers_store(*, campaign: Campaign, answers: list[SimulatedAnswer]) -> None:
    """Store the answers of simulated raters to their open items of `campaign` (see the module docstring)."""
    simulated_raters_check({answer.item.assignment.rater for answer in answers})
    ratings, votes, events, items = [], [], [], []
    for answer in answers:
        item = answer.item
        if item.assignment.campaign_id != campaign.pk or item.completed_at is not None:
            raise JudgementError(f"item {item.token} is not an open item of {campaign.name}")
        rater = item.assignment.rater
        if item.pair_id is not None:
            if answer.choice not in ("a", "b", "none"):
                raise JudgementError(f"a pair's choice is a, b or none, got {answer.choice!r}")
            votes.append(
                PairwiseVote(
                    campaign=campaign,
                    rater=rater,
                    pair_id=item.pair_id,
                    choice=answer.choice,
                    left_side=projection.caption_on_left(a_on_left=item.a_on_left),
                    source=Source.SIMULATED,
                )
            )
            rater_answer = {"side": projection.vote_side(choice=answer.choice, a_on_left=item.a_on_left)}
        else:
            if sorted(answer.scores) != sorted(item.caption_order):
                raise JudgementError(f"item {item.token}: expected scores for its {len(item.caption_order)} captions")
            values = {}
            for number, caption_id in enumerate(item.caption_order, start=1):
                clean = caption_values_clean(answer.scores[caption_id], caption_number=number)
                values[caption_id] = {**clean, "synthesized": "yes", "comment": ""}
                ratings.append(
                    ThumbsRating(
                        campaign=campaign,
                        rater=rater,
                        caption_id=caption_id,
                        **values[caption_id],
                        source=Source.SIMULATED,
                    )
                )
            rater_answer = thumbs_answer(caption_order=item.caption_order, ratings=values)
        item.first_shown_at = answer.shown_at
        item.listened_at = answer.shown_at + timedelta(seconds=answer.listened_seconds)
        item.audio_served = dict(SIMULATED_AUDIO_RECORD)
        item.completed_at = answer.shown_at + timedelta(seconds=answer.seconds)
        item.seconds_spent = answer.seconds
        item.version = 1
        items.append(item)
        events.append(ItemEvent(item=item, kind=ItemEvent.Kind.SIMULATED, version=1, answer=rater_answer))
    PairwiseVote.objects.bulk_create(votes, batch_size=500)
    ThumbsRating.objects.bulk_create(ratings, batch_size=500)
    AssignmentItem.objects.bulk_update(
        items,
        ["first_shown_at", "listened_at", "audio_served", "completed_at", "seconds_spent", "version"],
        batch_size=500,
    )
    ItemEvent.objects.bulk_create(events, batch_size=500)
