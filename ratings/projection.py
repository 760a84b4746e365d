"""The rater projection: everything a rater receives is built here, from the rater's own assignments.

A rater must learn nothing about a caption's author, its system, the pair's split, which items are gold
or which clip or dataset they hear, and that holds for the *order* of what they receive as much as for
its content: rows listed by caption id put the human caption first (references are imported first), rows
listed by pair id group the splits (pairs are generated split by split). So rater-side pages, the rater
API, workbooks and zips never read rows in database order; they take them from here:

- studies: in the order the rater started them (first item opened), then those not started by title;
- items: by their position in the rater's own shuffled order (studies in the order above); where a rater
  resumes and an item's neighbours (previous, next unfinished) follow that order too;
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

from django.db.models import Case, Count, Min, Q, Value, When

from common.compiled_reads import CompiledRead
from corpus.models import Caption
from ratings.models import Assignment, AssignmentItem, PairwiseVote, ThumbsRating

LEFT, RIGHT, NONE = "left", "right", "none"
SIDES = (LEFT, RIGHT, NONE)  # what a rater may answer on a pair


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


def assignment_next_item(*, assignment: Assignment) -> AssignmentItem | None:
    """The first unfinished item in the rater's order (where a rater resumes)."""
    return _open_in_order(assignment.items.all()).first()


def next_open_token(items) -> str | None:
    """The token of the first unfinished item among `items` (one assignment's) in the rater's order, in one query."""
    return _open_in_order(items).values_list("token", flat=True).first()


def _open_in_order(items):
    return items.filter(completed_at__isnull=True).order_by("position")


def next_open_after(*, item: AssignmentItem):
    """The assignment's other unfinished items, the one a rater goes on to first: the next after `item` in the
    rater's order, else the first before it (item_place's `next_open_token`, as a queryset to read in a subquery)."""
    later_first = Case(When(position__gt=item.position, then=Value(0)), default=Value(1))
    return (
        AssignmentItem.objects.filter(assignment_id=item.assignment_id, completed_at__isnull=True)
        .exclude(pk=item.pk)
        .order_by(later_first, "position")
    )


# Read on every item page a crowd opens: compiled once per process (compiling was most of the read's CPU).
_ASSIGNMENT_ITEM_ROWS = CompiledRead(
    lambda assignment_id: AssignmentItem.objects.filter(assignment_id=assignment_id)
    .order_by("position")
    .values("pk", "token", "position", "completed_at"),
    assignment_id=-2_100_000_401,
)


def item_place(*, item: AssignmentItem) -> dict:
    """Where the item sits in its assignment, from one query over the assignment's items:
    `progress` {number (1-based), total, completed} and `neighbours` {previous_token, next_open_token}
    (the previous item; the next unfinished item after this one, else the first unfinished one before it)."""
    rows = _ASSIGNMENT_ITEM_ROWS.rows(assignment_id=item.assignment_id)
    earlier = [row for row in rows if row["position"] < item.position]
    open_others = [row for row in rows if row["completed_at"] is None and row["pk"] != item.pk]
    later_open = [row for row in open_others if row["position"] > item.position]
    next_open = (later_open or open_others or [None])[0]
    return {
        "progress": {
            "number": len(earlier) + 1,
            "total": len(rows),
            "completed": sum(1 for row in rows if row["completed_at"] is not None),
        },
        "neighbours": {
            "previous_token": earlier[-1]["token"] if earlier else None,
            "next_open_token": next_open["token"] if next_open else None,
        },
    }


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
    by_caption = {"a": pair.caption_a_id, "b": pair.caption_b_id}
    left = caption_on_left(a_on_left=item.a_on_left)
    return [by_caption[left], by_caption["b" if left == "a" else "a"]]


def item_captions(item: AssignmentItem, captions_by_id: dict[int, Caption] | None = None) -> list[RaterCaption]:
    """The item's captions as the rater sees them, in the rater's order."""
    ids = item_caption_ids(item)
    if captions_by_id is None:
        text_by_id = _caption_texts(ids)
    else:
        text_by_id = {caption_id: caption.text for caption_id, caption in captions_by_id.items()}
    keys = (LEFT, RIGHT) if item.pair_id is not None else (str(number) for number in range(1, len(ids) + 1))
    return [
        RaterCaption(key=key, text=text_by_id[caption_id], caption_id=caption_id)
        for key, caption_id in zip(keys, ids, strict=False)
        if caption_id in text_by_id
    ]


# Only the text is shown: the other columns (author, system, source) would be read and converted for nothing;
# order_by(): the model's ordering would join the clip and its dataset to sort rows that are looked up by id.
# A pair's two captions are read on every pairwise page a crowd opens: that read is compiled once per process.
_TWO_CAPTION_TEXTS = CompiledRead(
    lambda first_id, second_id: Caption.objects.filter(pk__in=[first_id, second_id]).order_by().values("pk", "text"),
    first_id=-2_100_000_402,
    second_id=-2_100_000_403,
)


def _caption_texts(ids: list[int]) -> dict[int, str]:
    if len(ids) == 2:
        rows = _TWO_CAPTION_TEXTS.rows(first_id=ids[0], second_id=ids[1])
        return {row["pk"]: row["text"] for row in rows}
    return {caption.pk: caption.text for caption in Caption.objects.only("text").order_by().in_bulk(ids).values()}


def captions_by_id_for(items_: Iterable[AssignmentItem]) -> dict[int, Caption]:
    """The captions of many items in one query."""
    return Caption.objects.order_by().in_bulk({caption_id for item in items_ for caption_id in item_caption_ids(item)})


def thumbs_rows(assignment: Assignment) -> list[tuple[AssignmentItem, list[RaterCaption]]]:
    """The THumBS items of one assignment with their captions, in the rater's order (workbooks, zips)."""
    rows = assignment_items(assignment, thumbs_only=True)
    captions_by_id = captions_by_id_for(rows)
    return [(item, item_captions(item, captions_by_id)) for item in rows]


# --- Judgements ---------------------------------------------------------------------------------------------


# The one mapping between a pair's captions (a, b) and the sides a rater sees (left, right): every reader and
# writer of votes goes through these, so the page, the stored vote and every report agree on which side was which.


def caption_on_left(*, a_on_left: bool) -> str:
    """Which caption of the pair ("a" or "b") the rater sees on the left (what a vote records as `left_side`)."""
    return "a" if a_on_left else "b"


def vote_side(*, choice: str, a_on_left: bool) -> str:
    """The side (left, right, none) a vote chose on the rater's page."""
    if choice not in ("a", "b"):
        return NONE
    return LEFT if choice == caption_on_left(a_on_left=a_on_left) else RIGHT


def side_choice(*, side: str, a_on_left: bool) -> str:
    """The vote ("a", "b" or "none") a side chosen on the rater's page stands for (the inverse of vote_side)."""
    if side not in (LEFT, RIGHT):
        return NONE
    left = caption_on_left(a_on_left=a_on_left)
    return left if side == LEFT else ("b" if left == "a" else "a")


def stored_vote_side(*, choice: str, left_side: str) -> str:
    """The side a stored vote chose, from the caption it recorded on the left; a vote that recorded none (an
    imported judgement: no page showed it) keeps its a/b choice."""
    if choice not in ("a", "b") or not left_side:
        return choice
    return vote_side(choice=choice, a_on_left=left_side == "a")


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
