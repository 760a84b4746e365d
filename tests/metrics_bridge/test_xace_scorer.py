"""X-ACE end to end with the packaged all-MiniLM-L6-v2 model (references or an expert annotation)."""

import json

import pytest

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.xace import XaceScorer

REFERENCES = (
    "a dog barks loudly while a man speaks in the background",
    "a man talks as a dog is barking",
    "a dog barking and a person talking",
)


@pytest.fixture(scope="module")
def scorer():
    return XaceScorer()


def test_identical_caption_scores_near_one_and_unrelated_much_lower(scorer):
    requests = [
        ScoringRequest("a dog barks loudly while a man speaks in the background", REFERENCES[:1]),
        ScoringRequest("rain falls on a metal roof as thunder rumbles", REFERENCES[:1]),
    ]
    results = scorer.score_batch(requests, ScoringContext())
    identical, unrelated = results["XACE"][0].value, results["XACE"][1].value
    assert identical == pytest.approx(1.0, abs=1e-6)
    assert unrelated < 0.5 * identical
    assert results["XACE_E"][0].value == pytest.approx(1.0, abs=1e-6)
    assert set(results) == {"XACE", "XACE_E", "XACE_S", "XACE_A", "XACE_R"}


def test_details_explain_the_score(scorer):
    result = scorer.score_batch([ScoringRequest("a woman speaks while a cat meows", REFERENCES)], ScoringContext())
    details = result["XACE"][0].details
    json.dumps(details)  # storable as JSON
    assert details["reference_from"] == "reference_captions"
    assert details["variant"] == "w/o cm"
    sources = details["factors"]["source"]
    assert {m["node"] for m in sources["hallucinated"]} >= {"woman"}  # woman never matches man
    assert set(details["graphs"]) == {"candidate", "reference"}
    assert "barks" in details["graphs"]["reference"]["node"]


def test_expert_annotation_is_the_reference_when_the_clip_has_one(scorer):
    annotation = {
        "talking": {"source": ["man"], "attr": ["Loud", "Off and on"]},
        "blows": {"source": ["wind"], "attr": ["Continuous", "Outdoors"]},
    }
    context = ScoringContext(expert_annotations={"Yclip.wav": annotation})
    good = ScoringRequest("a man is talking loudly while the wind blows outdoors", (), clip_key="Yclip.wav")
    bad = ScoringRequest("a baby cries and a dog barks", (), clip_key="Yclip.wav")
    results = scorer.score_batch([good, bad], context)
    assert results["XACE"][0].details["reference_from"] == "expert_annotation"
    assert results["XACE"][0].value > results["XACE"][1].value + 0.3
    # no temporal information in an annotation without reference captions: relations stay out
    assert results["XACE"][0].details["factors"]["relation"]["included"] is False
    categories = results["XACE"][0].details["attribute_categories"]
    assert categories["Volume"]["reference_nodes"] == 1 and categories["Volume"]["precision"] > 0.5


def test_registry_knows_the_xace_metrics():
    from metrics_bridge.scoring.registry import scorer_for

    assert isinstance(scorer_for("XACE_R"), XaceScorer)
    assert scorer_for("XACE").protocol_kind == "embedding"
    assert "sbert-minilm" in scorer_for("XACE").version and "wo-cm" in scorer_for("XACE").version


def test_version_names_the_event_similarity():
    assert "+sbert-minilm-ctx+rules-extractor-2" in XaceScorer().version
    assert "+sbert-minilm+rules-extractor-2" in XaceScorer(event_context=False).version
