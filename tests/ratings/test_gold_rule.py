"""The gold rule of `balanced_shares`: a rater of a gold item gets no other item of its clip."""

import random
from collections import Counter

import pytest

from ratings.services.campaigns import GoldPlacementError, GoldRule, balanced_shares


def _campaign(clips: int, pairs_per_clip: int) -> tuple[dict, frozenset]:
    """Pairs keyed (clip, n); the first pair of every clip is gold."""
    clip_of = {(clip, number): clip for clip in range(clips) for number in range(pairs_per_clip)}
    return clip_of, frozenset(key for key in clip_of if key[1] == 0)


def _rule(clip_of, gold, raters, known=None, known_gold=None, donor_of=None) -> GoldRule:
    return GoldRule(
        clip_of=clip_of,
        gold=gold,
        known_clips=known or [set() for _ in range(raters)],
        known_gold_clips=known_gold or [set() for _ in range(raters)],
        donor_of=donor_of or {},
    )


@pytest.mark.parametrize("seed", range(6))
def test_every_judgement_is_placed_and_no_gold_rater_meets_its_clip_again(seed):
    clip_of, gold = _campaign(clips=20, pairs_per_clip=6)
    raters = 10
    # Rater 0 already rates clips 0-4 elsewhere: none of their golds; rater 1 has a gold of clip 5 in an open
    # campaign: no item of clip 5 at all.
    known = [set(range(5))] + [set() for _ in range(raters - 1)]
    known_gold = [set(), {5}] + [set() for _ in range(raters - 2)]
    donor_of = {key: 100 + key[0] % 10 for key in gold}  # 8 golds a rater, 10 donors
    shares = balanced_shares(
        needs=dict.fromkeys(clip_of, 4),
        rater_count=raters,
        rng=random.Random(seed),
        gold_rule=_rule(clip_of, gold, raters, known, known_gold, donor_of),
    )
    assert Counter(key for share in shares for key in share) == dict.fromkeys(clip_of, 4)
    for index, share in enumerate(shares):
        clips = Counter(clip_of[key] for key in share)
        for key in share:
            if key in gold:
                assert clips[clip_of[key]] == 1, f"rater {index} has a gold of clip {key[0]} and another item of it"
                assert clip_of[key] not in known[index]
        assert not {clip_of[key] for key in share} & known_gold[index]
        donors = Counter(donor_of[key] for key in share if key in gold)
        assert max(donors.values(), default=1) == 1, "two golds of one donor where distinct donors were possible"
    loads = [len(share) for share in shares]
    # Loads as even as the rule lets them: raters 0 and 1 can take fewer of the items, so a few off the mean.
    assert max(loads) - min(loads) <= 3 and sum(loads) == 4 * len(clip_of)


def test_a_rule_that_cannot_be_kept_says_which_clip_and_why():
    clip_of, gold = _campaign(clips=4, pairs_per_clip=3)
    # Three raters who must all judge every pair: a gold's raters would meet its clip again.
    with pytest.raises(GoldPlacementError, match=r"item of clip \d+ needs 3 raters but only 0 of the 3"):
        balanced_shares(
            needs=dict.fromkeys(clip_of, 3), rater_count=3, rng=random.Random(1), gold_rule=_rule(clip_of, gold, 3)
        )


def test_late_raters_take_their_extra_items_among_those_the_rule_allows():
    clip_of, gold = _campaign(clips=6, pairs_per_clip=4)
    wished = dict.fromkeys(list(clip_of)[:12], 1)  # golds and other pairs of the same clips
    shares = balanced_shares(
        needs=wished,
        rater_count=1,
        rng=random.Random(3),
        gold_rule=_rule(clip_of, gold, 1),
        spare_keys=list(clip_of),
    )
    (share,) = shares
    assert len(share) == 12 and len(set(share)) == 12
    gold_clips = {clip_of[key] for key in share if key in gold}
    assert gold_clips and all(key in gold for key in share if clip_of[key] in gold_clips)
