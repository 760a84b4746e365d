"""X-ACE end to end with the packaged all-MiniLM-L6-v2 model (references or an expert annotation)."""

import json
from pathlib import Path

import pytest

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.xace import XaceCaptionsScorer, XaceScorer, load_tag_library

TAG_LIBRARY = Path(__file__).resolve().parents[2] / "annotation" / "data" / "attribute_tags.json"

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


ANNOTATION = {
    "talking": {"source": ["man"], "attr": ["Loud", "Off and on"]},
    "blows": {"source": ["wind"], "attr": ["Continuous", "Outdoors"]},
}


def test_expert_annotation_is_the_reference_when_the_clip_has_one(scorer):
    context = ScoringContext(expert_annotations={"Yclip.wav": ANNOTATION}, attribute_tags=load_tag_library(TAG_LIBRARY))
    good = ScoringRequest("a man is talking loudly while the wind blows outdoors", (), clip_key="Yclip.wav")
    bad = ScoringRequest("a baby cries and a dog barks", (), clip_key="Yclip.wav")
    results = scorer.score_batch([good, bad], context)
    assert results["XACE"][0].details["reference_from"] == "expert_annotation"
    assert results["XACE"][0].value > results["XACE"][1].value + 0.3
    # no temporal information in an annotation without reference captions: relations are not applicable
    assert results["XACE"][0].details["factors"]["relation"]["included"] is False
    assert results["XACE_R"][0].value is None and results["XACE_R"][0].details["applicable"] is False
    categories = results["XACE"][0].details["attribute_categories"]
    assert categories["Volume"]["reference_nodes"] == 1 and categories["Volume"]["precision"] > 0.5


def test_the_gold_annotations_relations_are_the_reference_relations(scorer):
    stated = {"node": ANNOTATION, "relations": [["talking", "blows", "before"]]}
    context = ScoringContext(expert_annotations={"c": stated})
    references = ("the wind blows and then a man talks",)
    in_order = ScoringRequest("a man talks and then the wind blows", references, clip_key="c")
    reversed_order = ScoringRequest("the wind blows and then a man talks", references, clip_key="c")
    results = scorer.score_batch([in_order, reversed_order], context)
    assert results["XACE"][0].details["relations_from"] == "expert_annotation"
    assert results["XACE_R"][0].value > 0.5 and results["XACE_R"][1].value == 0.0  # the captions say the opposite
    captions_only = XaceCaptionsScorer().score_batch([in_order, reversed_order], context)
    assert captions_only["XACE_CAPTIONS"][0].details["reference_from"] == "reference_captions"
    assert captions_only["XACE_CAPTIONS_R"][0].value == 0.0 and captions_only["XACE_CAPTIONS_R"][1].value > 0.5


def test_a_factor_nobody_mentions_is_stored_as_none():
    results = XaceScorer().score_batch([ScoringRequest("a dog barks", ("a dog is barking",))], ScoringContext())
    assert results["XACE_A"][0].value is None and results["XACE_R"][0].value is None
    assert results["XACE_E"][0].value == pytest.approx(1.0)
    assert results["XACE"][0].value == pytest.approx(1.0)  # the average of the factors present


def test_the_variants_differ_only_in_the_reference_graph():
    plain = ScoringContext(attribute_tags=load_tag_library(TAG_LIBRARY))
    request = ScoringRequest("a woman speaks while a cat meows", REFERENCES)
    gold, captions = XaceScorer(), XaceCaptionsScorer()
    assert gold.uses_gold_annotations is True and captions.uses_gold_annotations is False
    assert captions.metric_names == (
        "XACE_CAPTIONS",
        "XACE_CAPTIONS_E",
        "XACE_CAPTIONS_S",
        "XACE_CAPTIONS_A",
        "XACE_CAPTIONS_R",
    )
    first, second = gold.score_batch([request], plain), captions.score_batch([request], plain)
    assert first["XACE"][0].value == pytest.approx(second["XACE_CAPTIONS"][0].value)
    assert first["XACE"][0].details["variant"] == "w/o cm"
    assert second["XACE_CAPTIONS"][0].details["variant"] == "w/o anno & cm"
    assert "anno-or-captions" in gold.version and "-captions-" in captions.version


def test_registry_knows_the_xace_metrics():
    from metrics_bridge.scoring.registry import scorer_for

    assert isinstance(scorer_for("XACE_R"), XaceScorer)
    assert isinstance(scorer_for("XACE_CAPTIONS_A"), XaceCaptionsScorer)
    assert scorer_for("XACE").protocol_kind == "embedding"
    assert "sbert-minilm" in scorer_for("XACE").version and "wo-cm" in scorer_for("XACE").version


def test_version_names_the_similarity_the_reading_and_the_libraries():
    version = XaceScorer().version
    assert "-macro-present-eq4-sbert-minilm-ctx-rules-extractor-2-all-MiniLM-L6-v2(" in version
    assert "transformers-" in version and "torch-" in version and "lemminflect-" in version
    assert "-sbert-minilm-rules-extractor-2" in XaceScorer(event_context=False).version
    assert "-macro-four-" in XaceScorer(macro="four").version
