"""Crowd shares keep the gold rule: a participant's share never holds a gold pair's clip in another item (the gold
pair would be answered by its text: its own reference reads like that clip's other captions)."""

from collections import Counter

import pytest

from ratings.models import CaptionPair
from ratings.models_study import AttentionCheck
from ratings.services.campaigns import gold_donors
from ratings.services.study_shares import checks as share_checks
from ratings.services.study_shares.slots import study_gold_pairs
from tests.ratings.campaign_data import secrets_made_repeatable
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media", "repeatable_secrets")]


@pytest.fixture
def repeatable_secrets(monkeypatch):
    """Each share is drawn from its assignment's secret order key: seeded here, so the control's shares are the same
    on every run (drawn anew, all six shares of the control missed their gold pairs' clips about once in 200,000
    runs: 32 of 240 shares over 40 seeds had no collision)."""
    secrets_made_repeatable(monkeypatch, 31)


def _study():
    # Six rated clips (two of the eight are donors), each with a gold pair and three other pairs: a share of four
    # items meets most clips, so a gold chosen without the rule often shares its clip with another item.
    return pairwise_study(clip_count=8, hc=18, gold=6, judgements=2, items_per_participant=4, attention_checks=2)


def _shares(study, participants: int) -> list[list]:
    shares = []
    for _ in range(participants):
        client, _response = prolific_arrive(study)
        walk_to_items(client, study)
        shares.append(share_items(participant_of(client)))
    return shares


def _collisions(shares) -> int:
    """Gold items whose clip comes back on another item of the same share."""
    found = 0
    for share in shares:
        clips = Counter(item.clip_id for item in share)
        gold_items = [item for item in share if item.pair.gold_choice]
        found += sum(clips[item.clip_id] > 1 for item in gold_items)
    return found


def test_no_share_holds_a_gold_pairs_clip_in_another_item():
    study = _study()
    gold_clips = set(CaptionPair.objects.exclude(gold_choice="").values_list("clip_id", flat=True))
    other_clips = set(CaptionPair.objects.filter(gold_choice="").values_list("clip_id", flat=True))
    assert gold_clips and gold_clips <= other_clips, "every gold pair's clip has other pairs: the rule has work"
    shares = _shares(study, 6)
    checks = Counter(AttentionCheck.objects.filter(kind=AttentionCheck.Kind.GOLD_PAIR).values_list("rater_id"))
    assert len(checks) == 6 and set(checks.values()) == {2}, "every share still has its two gold checks"
    assert all(len(share) == 6 for share in shares), "and its four items"
    assert _collisions(shares) == 0


def test_the_control_gold_pairs_chosen_without_the_rule_meet_their_clip_again(monkeypatch):
    chosen = share_checks.gold_pairs_choose

    def without_rule(study, rng, *, avoid_clip_ids, free_by_clip=None, pool=None):
        return chosen(study, rng, avoid_clip_ids=set(), pool=pool)

    monkeypatch.setattr(share_checks, "gold_pairs_choose", without_rule)
    shares = _shares(_study(), 6)
    assert _collisions(shares) > 0, "the control: the test sees a gold pair's clip on another item of a share"


def test_the_gold_pool_holds_every_gold_pair_with_the_donor_of_its_foreign_caption():
    """The pool is read in one query with the donors; the reference is the campaign's own lookups (the study's gold
    pairs, gold_donors), each a query of its own."""
    study = _study()
    pool = share_checks.gold_pool(study)
    reference_pairs = study_gold_pairs(study)
    assert [(pair.pk, pair.clip_id) for pair in pool.pairs] == [(pair.pk, pair.clip_id) for pair in reference_pairs]
    assert len(pool.pairs) == 6
    assert pool.donors == gold_donors(pair.pk for pair in reference_pairs)
    assert len(pool.donors) == 6 and all(pool.donors[pair.pk] != pair.clip_id for pair in pool.pairs)


def test_the_gold_pool_counts_each_pairs_use_as_the_checks_placed_so_far():
    """The pool's use per pair (counted by its one read) is the number of shares holding the pair as a check: the
    reference is the checks' own rows, counted here; a pair no share holds yet has no entry (used as 0)."""
    study = _study()
    assert share_checks.gold_pool(study).used == {}
    _shares(study, 3)
    placed = Counter(
        AttentionCheck.objects.filter(kind=AttentionCheck.Kind.GOLD_PAIR).values_list("pair_id", flat=True)
    )
    assert sum(placed.values()) == 6, "three shares of two checks each"
    assert share_checks.gold_pool(study).used == dict(placed)
