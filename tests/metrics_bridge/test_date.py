"""DATE (MECAT) on a tiny hand-checkable set: one-hot word "embeddings" make every number checkable."""

import math

import numpy as np
import pytest

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.date import DateScorer, harmonic_mean

VOCABULARY = ["dog", "barks", "cat", "meows", "purrs", "loudly", "bird", "sings"]


def one_hot_embed(texts):
    """Token ids = vocabulary positions; each token's vector is its one-hot row."""
    encoded = []
    for text in texts:
        ids = [VOCABULARY.index(word) for word in text.split()]
        encoded.append((ids, np.eye(len(VOCABULARY))[ids]))
    return encoded


def idf(document_frequency, documents):
    return math.log((1 + documents) / (1 + document_frequency)) + 1


def test_date_by_hand():
    requests = [
        ScoringRequest("dog barks", ("dog barks",), clip_key="A"),
        ScoringRequest("cat meows", ("cat purrs",), clip_key="B"),
        ScoringRequest("dog meows", ("dog barks loudly",), clip_key="C"),
    ]
    results = DateScorer(embed=one_hot_embed).score_batch(requests, ScoringContext())["DATE"]
    # distinct texts: dog barks, cat meows, cat purrs, dog meows, dog barks loudly -> n = 5
    # document frequencies: dog 3, barks 2, cat 2, meows 2, purrs 1, loudly 1
    w_dog, w_barks, w_cat, w_meows, w_purrs, w_loudly = (
        idf(3, 5),
        idf(2, 5),
        idf(2, 5),
        idf(2, 5),
        idf(1, 5),
        idf(1, 5),
    )

    # A: identical candidate and reference; nobody beats it -> rank 0, S_dis = 1
    assert results[0].details == {"s_sim": 1.0, "s_dis": 1.0, "rank": 0, "n": 3}
    assert results[0].value == pytest.approx(1.0)

    # B: only "cat" is shared
    s_sim_b = w_cat**2 / (math.hypot(w_cat, w_meows) * math.hypot(w_cat, w_purrs))
    assert results[1].details["s_sim"] == pytest.approx(s_sim_b, abs=1e-6)
    assert results[1].details["rank"] == 0
    assert results[1].value == pytest.approx(harmonic_mean(s_sim_b, 1.0), abs=1e-6)

    # C: its reference "dog barks loudly" prefers candidate A ("dog barks") over its own "dog meows"
    reference_norm = math.sqrt(w_dog**2 + w_barks**2 + w_loudly**2)
    s_sim_c = w_dog**2 / (math.hypot(w_dog, w_meows) * reference_norm)
    score_of_a = (w_dog**2 + w_barks**2) / (math.hypot(w_dog, w_barks) * reference_norm)
    assert score_of_a > s_sim_c
    assert results[2].details["rank"] == 1
    assert results[2].details["s_dis"] == pytest.approx(1 - 1 / 3)
    assert results[2].value == pytest.approx(harmonic_mean(s_sim_c, 2 / 3), abs=1e-6)


def test_candidates_of_the_same_clip_do_not_compete():
    requests = [
        ScoringRequest("cat meows", ("cat meows loudly",), clip_key="A"),
        ScoringRequest("cat purrs", ("cat meows loudly",), clip_key="A"),  # another system, same clip
        ScoringRequest("bird sings", ("bird sings",), clip_key="B"),
    ]
    results = DateScorer(embed=one_hot_embed).score_batch(requests, ScoringContext())["DATE"]
    assert [r.details["rank"] for r in results] == [0, 0, 0]
    assert [r.details["n"] for r in results] == [2, 2, 3]


def test_multiple_references_average_the_similarity():
    single = DateScorer(embed=one_hot_embed).score_batch(
        [ScoringRequest("dog barks", ("dog barks", "cat meows"), clip_key="A")], ScoringContext()
    )["DATE"][0]
    # cosine 1 with the first reference, 0 with the second -> mean 0.5; one candidate -> S_dis = 1
    assert single.details["s_sim"] == pytest.approx(0.5)
    assert single.value == pytest.approx(harmonic_mean(0.5, 1.0))


def test_date_with_the_real_model_ranks_matching_captions_first():
    requests = [
        ScoringRequest("a dog is barking", ("a dog barks loudly",), clip_key="A"),
        ScoringRequest("heavy rain falls on a roof", ("rain is falling on a tin roof",), clip_key="B"),
        ScoringRequest("a man gives a speech", ("a man is speaking to a crowd",), clip_key="C"),
    ]
    scorer = DateScorer()
    assert scorer.corpus_level is True
    results = scorer.score_batch(requests, ScoringContext())["DATE"]
    assert [r.details["rank"] for r in results] == [0, 0, 0]
    assert all(0.5 < r.value <= 1.0 for r in results)


def test_request_without_reference_is_an_error():
    with pytest.raises(ValueError, match="request 0"):
        DateScorer(embed=one_hot_embed).score_batch([ScoringRequest("dog barks", ())], ScoringContext())
