"""Pair generation for HC / HI / HM / MM: counts, what each split pairs, spread, determinism."""

import re
from collections import Counter

import pytest

from corpus.models import Caption
from ratings.models import CaptionPair
from ratings.services.pair_generation import PairGenerationError, pairs_generate
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db

COUNTS = {"HC": 6, "HI": 6, "HM": 6, "MM": 12}


def _signature(pairs: list[CaptionPair]) -> list[tuple]:
    return [(pair.split, pair.clip.external_id, pair.caption_a.text, pair.caption_b.text) for pair in pairs]


def test_counts_and_what_each_split_pairs():
    _, clips, systems = corpus_build(clip_count=8)
    clips, donors = clips[:6], clips[6:]
    pairs = pairs_generate(clips=clips, counts=COUNTS, seed=7, key_prefix="t", foreign_clips=donors)
    assert Counter(pair.split for pair in pairs) == COUNTS
    reference_texts = {caption.text: caption.clip_id for caption in Caption.objects.filter(role="reference")}
    donor_ids = {clip.pk for clip in donors}
    for pair in pairs:
        a, b = pair.caption_a, pair.caption_b
        assert a.clip_id == b.clip_id == pair.clip_id
        assert a.text != b.text
        assert pair.source_key.startswith(f"t-{pair.split}-")
        if pair.split == "HC":
            assert a.role == b.role == "reference"
        elif pair.split == "HI":
            assert a.role == "reference"
            # b is a donor clip's reference, copied onto this clip as a human candidate marked as a pair
            # artefact (not corpus data), pointing at what it copies.
            assert (b.role, b.author_kind, b.pair_artefact) == ("candidate", "human", True)
            assert reference_texts[b.text] in donor_ids and b.copied_from.text == b.text
            assert re.fullmatch(r"clip\d+\.wav_human_\d", b.source_label)
        elif pair.split == "HM":
            assert a.role == "reference" and b.author_kind == "machine"
        else:
            assert a.author_kind == b.author_kind == "machine" and a.system_id != b.system_id
        assert pair.gold_choice == ""
    assert len({pair.source_key for pair in pairs}) == len(pairs)
    foreign_texts = [pair.caption_b.text for pair in pairs if pair.split == "HI"]
    assert len(set(foreign_texts)) == len(foreign_texts), "each foreign caption is used once"
    assert Counter(Caption.objects.get(text=text, role="reference").clip_id for text in foreign_texts) == {
        donor.pk: 3 for donor in donors
    }, "spread over the donors"


def test_pairs_spread_round_robin_over_clips():
    _, clips, _ = corpus_build(clip_count=6)
    pairs = pairs_generate(clips=clips, counts={"HC": 14, "MM": 7}, seed=1, key_prefix="rr")
    per_clip_hc = Counter(pair.clip_id for pair in pairs if pair.split == "HC")
    assert sorted(per_clip_hc.values()) == [2, 2, 2, 2, 3, 3]
    per_clip_mm = Counter(pair.clip_id for pair in pairs if pair.split == "MM")
    assert sorted(per_clip_mm.values()) == [1, 1, 1, 1, 1, 2]


def test_same_seed_same_pairs_other_seed_other_pairs():
    _, clips, _ = corpus_build(clip_count=8)
    clips, donors = clips[:6], clips[6:]
    first = pairs_generate(clips=clips, counts=COUNTS, seed=42, key_prefix="one", foreign_clips=donors)
    caption_count = Caption.objects.count()
    second = pairs_generate(clips=clips, counts=COUNTS, seed=42, key_prefix="two", foreign_clips=donors)
    assert _signature(first) == _signature(second)
    assert Caption.objects.count() == caption_count, "HI copies are reused, not duplicated"
    third = pairs_generate(clips=clips, counts=COUNTS, seed=43, key_prefix="three", foreign_clips=donors)
    assert _signature(third) != _signature(first)


def test_changing_one_split_count_keeps_the_other_splits():
    _, clips, _ = corpus_build(clip_count=6)
    small = pairs_generate(clips=clips, counts={"HC": 3, "HM": 4}, seed=9, key_prefix="s")
    large = pairs_generate(clips=clips, counts={"HC": 3, "HM": 4, "MM": 5}, seed=9, key_prefix="l")
    assert _signature(small) == _signature([pair for pair in large if pair.split != "MM"])


def test_systems_limit_machine_captions():
    _, clips, systems = corpus_build(clip_count=4, system_names=("s1", "s2", "s3", "s4"))
    chosen = systems[:2]
    pairs = pairs_generate(clips=clips, counts={"HM": 8, "MM": 4}, seed=0, key_prefix="sys", systems=chosen)
    used = {caption.system_id for pair in pairs for caption in (pair.caption_a, pair.caption_b) if caption.system_id}
    assert used == {system.pk for system in chosen}
    with pytest.raises(PairGenerationError, match="only 4 MM pairs"):
        pairs_generate(clips=clips, counts={"MM": 5}, seed=0, key_prefix="sys2", systems=chosen)


def test_shortfall_writes_nothing():
    _, clips, _ = corpus_build(clip_count=3, reference_count=2)
    pairs_before, captions_before = CaptionPair.objects.count(), Caption.objects.count()
    with pytest.raises(PairGenerationError, match=r"only 2 HC pairs can be made .* 3 were asked for"):
        pairs_generate(clips=clips[:2], counts={"HI": 2, "HC": 3}, seed=0, key_prefix="x", foreign_clips=clips[2:])
    assert (CaptionPair.objects.count(), Caption.objects.count()) == (pairs_before, captions_before)


def test_hi_pairs_as_gold_items():
    _, clips, _ = corpus_build(clip_count=4)
    pairs = pairs_generate(
        clips=clips[:3], counts={"HI": 3, "HC": 1}, seed=0, key_prefix="g", gold_from_hi=True, foreign_clips=clips[3:]
    )
    assert {(pair.split, pair.gold_choice) for pair in pairs} == {("HI", "a"), ("HC", "")}


def test_hi_pairs_need_donors_outside_the_rated_clips():
    _, clips, _ = corpus_build(clip_count=3)
    with pytest.raises(PairGenerationError, match="need donor clips"):
        pairs_generate(clips=clips, counts={"HI": 1}, seed=0, key_prefix="d")
    with pytest.raises(PairGenerationError, match="also a clip the pairs are made on"):
        pairs_generate(clips=clips, counts={"HI": 1}, seed=0, key_prefix="d", foreign_clips=clips[2:])


def test_no_foreign_text_is_one_the_rated_clips_show():
    """A donor reference whose text is also a caption of a rated clip would be recognisable: never used."""
    _, clips, _ = corpus_build(clip_count=3, reference_count=2)
    rated, donor = clips[:2], clips[2]
    first, second = Caption.objects.filter(clip=donor, role="reference").order_by("position")
    Caption.objects.filter(pk=first.pk).update(text="  Reference 1 OF clip 1 ")  # equal to a rated clip's, give or take
    pairs = pairs_generate(clips=rated, counts={"HI": 1}, seed=0, key_prefix="t1", foreign_clips=[donor])
    assert pairs[0].caption_b.text == second.text
    with pytest.raises(PairGenerationError, match="only 1 HI pairs"):
        pairs_generate(clips=rated, counts={"HI": 2}, seed=0, key_prefix="t2", foreign_clips=[donor])


def test_identical_texts_are_never_paired():
    dataset, clips, _ = corpus_build(clip_count=1, reference_count=2, system_names=())
    Caption.objects.filter(clip=clips[0], position=1).update(text="reference 1 of clip 1")
    with pytest.raises(PairGenerationError, match="only 0 HC pairs"):
        pairs_generate(clips=clips, counts={"HC": 1}, seed=0, key_prefix="dup")


def test_unknown_split_and_negative_count_are_refused():
    _, clips, _ = corpus_build(clip_count=1)
    with pytest.raises(PairGenerationError, match="unknown split 'XX'"):
        pairs_generate(clips=clips, counts={"XX": 1}, seed=0, key_prefix="u")
    with pytest.raises(PairGenerationError, match="HC count must not be negative"):
        pairs_generate(clips=clips, counts={"HC": -1}, seed=0, key_prefix="u")
