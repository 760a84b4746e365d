"""The one mapping between a pair's captions (a, b) and the sides a rater sees (ratings/projection.py), checked
against the truth table written out by hand: every page, stored vote and report reads sides through it."""

import pytest

from ratings import projection
from ratings.models import AssignmentItem, CaptionPair

# (a_on_left, side the rater chose) -> (the vote stored, the caption recorded on the left, caption ids left-right)
TRUTH = [
    (True, "left", "a", "a", [11, 22]),
    (True, "right", "b", "a", [11, 22]),
    (True, "none", "none", "a", [11, 22]),
    (False, "left", "b", "b", [22, 11]),
    (False, "right", "a", "b", [22, 11]),
    (False, "none", "none", "b", [22, 11]),
]


@pytest.mark.parametrize("a_on_left,side,choice,left_side,caption_ids", TRUTH)
def test_sides_and_votes_follow_the_truth_table(a_on_left, side, choice, left_side, caption_ids):
    assert projection.side_choice(side=side, a_on_left=a_on_left) == choice
    assert projection.vote_side(choice=choice, a_on_left=a_on_left) == side
    assert projection.caption_on_left(a_on_left=a_on_left) == left_side
    assert projection.stored_vote_side(choice=choice, left_side=left_side) == side
    item = AssignmentItem(a_on_left=a_on_left)
    item.pair = CaptionPair(pk=5, caption_a_id=11, caption_b_id=22)
    assert projection.item_caption_ids(item) == caption_ids


def test_a_vote_no_page_showed_keeps_its_choice():
    # Imported judgements record no left side: they have no side to report, only a or b.
    assert [projection.stored_vote_side(choice=choice, left_side="") for choice in ("a", "b", "none")] == [
        "a",
        "b",
        "none",
    ]


def test_anything_but_a_side_is_no_preference():
    assert projection.side_choice(side="a", a_on_left=True) == "none"
    assert projection.vote_side(choice="", a_on_left=False) == "none"
