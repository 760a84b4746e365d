"""The BRACE-style hallucination probe of metric_sensitivity: one source noun swapped for an unrelated noun,
and per metric how often the original scores strictly higher than its hallucination."""

import pytest

from metrics_bridge.scoring.base import ScoreResult, ScoringContext
from metrics_bridge.sensitivity.analysis import build_items, sensitivity_table
from metrics_bridge.sensitivity.perturbations import UNRELATED_BELOW, Perturber

CAPTIONS = [
    "A car horn honks twice as traffic passes",
    "A truck horn honks loudly",
    "A goat bleats in a field",
    "A goat is bleating nearby",
    "A truck drives by",
    "A dog barks at a cat",
    "A dog is barking loudly",
    "A cat meows",
]
#: made-up relatedness: "truck" is close to "car", everything else is far from it
RELATED = {("car", "truck"), ("dog", "cat")}


def fake_similarity(word, others):
    return [0.8 if (word, other) in RELATED or (other, word) in RELATED else 0.1 for other in others]


@pytest.fixture(scope="module")
def perturber():
    return Perturber(CAPTIONS, attribute_tags={}, seed=0, similarity=fake_similarity)


def test_a_source_noun_becomes_an_unrelated_noun_and_nothing_else_changes(perturber):
    references = ["Traffic rolls by and a horn sounds", "Cars drive past while a horn beeps"]
    result = perturber.hallucinate("A car horn honks twice as traffic passes", references)

    assert result is not None and result.kind == "hallucination"
    original, replacement = result.changed.split(" -> ")
    assert original in {"car", "horn", "traffic"}
    assert fake_similarity(original, [replacement])[0] < UNRELATED_BELOW
    before, after = result.original.lower().split(), result.text.lower().split()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after, strict=True)) == 1
    assert result.text == perturber.hallucinate("A car horn honks twice as traffic passes", references).text


def test_no_hallucination_without_an_unrelated_noun_of_the_same_number():
    everything_related = Perturber(
        CAPTIONS, attribute_tags={}, seed=0, similarity=lambda w, others: [0.9] * len(others)
    )
    assert everything_related.hallucinate("A dog barks at a cat", ["A dog barks"]) is None
    perturber = Perturber(CAPTIONS, attribute_tags={}, seed=0, similarity=fake_similarity)
    assert perturber.hallucinate("Wind and rain", ["Wind and rain"]) is None  # no source noun


def test_default_relatedness_comes_from_sentence_bert():
    perturber = Perturber(CAPTIONS, attribute_tags={}, seed=0)
    close, far = perturber.similarity("dog", ["puppy", "violin"])
    assert close > UNRELATED_BELOW > far


class LengthScorer:
    """Shorter candidate (in characters) = higher score; a same-length hallucination ties with its original."""

    metric_names = ("SHORT",)
    corpus_level = False

    def score_batch(self, requests, context):
        return {"SHORT": [ScoreResult(-float(len(r.candidate))) for r in requests]}


def test_the_probe_counts_strict_preferences_for_the_original_and_ties(perturber):
    clips = [("c1", CAPTIONS[:3]), ("c2", CAPTIONS[5:8])]
    items = build_items(clips, perturber)
    hallucinated = [item for item in items if "hallucination" in item.perturbed]
    assert hallucinated

    result = sensitivity_table(items, [LengthScorer()], ScoringContext())

    probe = result["hallucination"]
    assert set(result["table"]) == {"event", "source", "attribute", "relation"}
    assert probe["applied"] == len(hallucinated) and probe["captions"] == len(items)
    pairs = [(len(item.original), len(item.perturbed["hallucination"].text)) for item in hallucinated]
    assert probe["metrics"]["SHORT"] == {
        "prefers_original": 100.0 * sum(o < h for o, h in pairs) / len(pairs),
        "ties": sum(o == h for o, h in pairs),
        "n": len(pairs),
        "mean_original": pytest.approx(-sum(o for o, _ in pairs) / len(pairs)),
        "mean_hallucination": pytest.approx(-sum(h for _, h in pairs) / len(pairs)),
    }
