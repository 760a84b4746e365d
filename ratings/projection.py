"""The rater projection: everything a rater receives is built here, from the rater's own assignments.

A rater must learn nothing about a caption's author, its system, the pair's split, which items are gold
or which clip or dataset they hear, and that holds for the *order* of what they receive as much as for
its content: rows listed by caption id put the human caption first (references are imported first), rows
listed by pair id group the splits (pairs are generated split by split). So rater-side pages, the rater
API, workbooks and zips never read rows in database order; they take them from here:

- studies: in the order the rater started them (first item opened), then those not started by title;
- items: by their position in the rater's own shuffled order (studies in the order above);
- captions: THumBS in the item's per-rater order, numbered 1..n; a pair by side, left then right;
- judgements (ratings, votes): walked through the rater's items in that order, so they come in it too;
- names: items by their random token, captions by number or side; never an id, a name or a label.

The shuffles behind those orders (`assignment_random`) are seeded by each assignment's random, never
shown `order_key`: ids and the campaign's seed (which a rater may know or guess) do not predict them.

Crowd participants get exactly the same projection: every function takes assignments or items, never a
user, so whoever an assignment belongs to receives it the same way.
"""

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Count, Min, Q

from annotation.models import Caption
from ratings.models import Assignment, AssignmentItem, PairwiseVote, ThumbsRating

LEFT, RIGHT, NONE = "left", "right", "none"


def assignment_random(assignment: Assignment, purpose: str) -> random.Random:
    """A random source for one assignment and one purpose (e.g. which items were added when).

    Seeded by the assignment's secret order key: the server can rebuild an order, a rater cannot predict it.
    """
    return random.Random(f"{assignment.order_key}:{purpose}")


# --- Studies --------------------------------------------------------------------------------------------


def studies(assignments) -> list[Assignment]:
    """The assignments as the rater's study list: started ones in the order the rater started them, then the
    others by title. Each carries `item_count`, `completed_count` and `started_at` (None if not started)."""
    rows = list(
        assignments.select_related("campaign").annotate(
            item_count=Count("items"),
            completed_count=Count("items", filter=Q(items__completed_at__isnull=False)),
            started_at=Min("items__first_shown_at"),
        )
    )
    return sorted(rows, key=_study_key)


def _study_key(assignment: Assignment) -> tuple:
    started = assignment.started_at
    # The order key breaks ties between equal titles: random, so it says nothing either.
    return (
        started is None,
        started.timestamp() if started else 0.0,
        assignment.campaign.rater_title.casefold(),
        assignment.order_key,
    )


def rater_assignments(*, rater, active_only: bool = False):
    """The rater's own assignments (a queryset; `studies()` puts them in order)."""
    queryset = Assignment.objects.filter(rater=rater)
    return queryset.filter(campaign__is_active=True) if active_only else queryset


# --- Items and their captions ------------------------------------------------------------------------------


def items(assignments) -> list[AssignmentItem]:
    """Every item of the assignments, studies in study order, each study's items in the rater's order."""
    study_rank = {assignment.pk: rank for rank, assignment in enumerate(studies(assignments))}
    rows = AssignmentItem.objects.filter(assignment_id__in=study_rank).select_related(
        "assignment__campaign", "clip", "pair"
    )
    return sorted(rows, key=lambda item: (study_rank[item.assignment_id], item.position))


def assignment_items(assignment: Assignment, *, thumbs_only: bool = False) -> list[AssignmentItem]:
    """One assignment's items in the rater's order."""
    rows = assignment.items.select_related("clip", "pair")
    if thumbs_only:
        rows = rows.filter(pair__isnull=True)
    return sorted(rows, key=lambda item: item.position)


@dataclass(frozen=True)
class RaterCaption:
    """A caption as the rater knows it: its number on the page ("1".."n") or its side ("left"/"right")."""

    key: str
    text: str
    # Server side only (submissions are mapped back with it); never serialized for a rater.
    caption_id: int


def item_caption_ids(item: AssignmentItem) -> list[int]:
    """Caption ids in the order the rater sees them: THumBS in the item's order, a pair left then right."""
    if item.pair_id is None:
        return list(item.caption_order)
    pair = item.pair
    return [pair.caption_a_id, pair.caption_b_id] if item.a_on_left else [pair.caption_b_id, pair.caption_a_id]


def item_captions(item: AssignmentItem, captions_by_id: dict[int, Caption] | None = None) -> list[RaterCaption]:
    """The item's captions as the rater sees them, in the rater's order."""
    ids = item_caption_ids(item)
    if captions_by_id is None:
        captions_by_id = Caption.objects.in_bulk(ids)
    keys = (LEFT, RIGHT) if item.pair_id is not None else (str(number) for number in range(1, len(ids) + 1))
    return [
        RaterCaption(key=key, text=captions_by_id[caption_id].text, caption_id=caption_id)
        for key, caption_id in zip(keys, ids, strict=False)
        if caption_id in captions_by_id
    ]


def captions_by_id_for(items_: Iterable[AssignmentItem]) -> dict[int, Caption]:
    """The captions of many items in one query."""
    return Caption.objects.in_bulk({caption_id for item in items_ for caption_id in item_caption_ids(item)})


def thumbs_rows(assignment: Assignment) -> list[tuple[AssignmentItem, list[RaterCaption]]]:
    """The THumBS items of one assignment with their captions, in the rater's order (workbooks, zips)."""
    rows = assignment_items(assignment, thumbs_only=True)
    captions_by_id = captions_by_id_for(rows)
    return [(item, item_captions(item, captions_by_id)) for item in rows]


# --- Judgements ---------------------------------------------------------------------------------------------


def vote_side(*, choice: str, a_on_left: bool) -> str:
    """The side (left, right, none) a vote chose on the rater's page."""
    if choice not in ("a", "b"):
        return NONE
    return LEFT if (choice == "a") == a_on_left else RIGHT


@dataclass(frozen=True)
class RaterRating:
    item: AssignmentItem
    number: int  # the caption's number on the item's page
    rating: ThumbsRating


@dataclass(frozen=True)
class RaterVote:
    item: AssignmentItem
    side: str
    vote: PairwiseVote


def _judgements_of(model, rows: list[AssignmentItem], subject: str) -> dict[tuple[int, int, int], object]:
    """The items' assignments' judgements (`model` rows) keyed by (campaign id, rater id, `subject` id)."""
    found = {}
    for campaign_id, rater_id in {(item.assignment.campaign_id, item.assignment.rater_id) for item in rows}:
        for judgement in model.objects.filter(campaign_id=campaign_id, rater_id=rater_id):
            found[(campaign_id, rater_id, getattr(judgement, f"{subject}_id"))] = judgement
    return found


def ratings(assignments) -> list[RaterRating]:
    """The THumBS ratings of the assignments, item by item in the rater's order, captions in the item's order."""
    rows = [item for item in items(assignments) if item.pair_id is None]
    found = _judgements_of(ThumbsRating, rows, "caption")
    result = []
    for item in rows:
        campaign_id, rater_id = item.assignment.campaign_id, item.assignment.rater_id
        for number, caption_id in enumerate(item.caption_order, start=1):
            rating = found.get((campaign_id, rater_id, caption_id))
            if rating is not None:
                result.append(RaterRating(item=item, number=number, rating=rating))
    return result


def votes(assignments) -> list[RaterVote]:
    """The pairwise votes of the assignments, in the rater's item order, by the side chosen."""
    rows = [item for item in items(assignments) if item.pair_id is not None]
    found = _judgements_of(PairwiseVote, rows, "pair")
    result = []
    for item in rows:
        vote = found.get((item.assignment.campaign_id, item.assignment.rater_id, item.pair_id))
        if vote is not None:
            side = vote_side(choice=vote.choice, a_on_left=item.a_on_left)
            result.append(RaterVote(item=item, side=side, vote=vote))
    return result


# --- Orders drawn when items are made ------------------------------------------------------------------------


def shuffled(values: Sequence, rng: random.Random) -> list:
    """A shuffled copy (the order a rater gets: never the database's)."""
    copy = list(values)
    rng.shuffle(copy)
    return copy
