"""Whether two events name the same sound: the weights and thresholds come from the labelled event-name pairs
(half "a"), their precision and recall on half "b" are the ones docs/annotation.md reports, and the rule needs
less meaning of events over the same seconds."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score

from metrics_bridge.agreement import event_similarity
from metrics_bridge.agreement.annotation_agreement import duplicate_events
from metrics_bridge.agreement.event_similarity import meaning
from metrics_bridge.agreement.event_similarity_tuning import pair_parts, tuning_report
from metrics_bridge.scoring import sbert

PAIRS = Path(__file__).parent / "data" / "event_name_pairs.json"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "annotation.md"


@pytest.fixture(scope="module")
def minilm():
    model = sbert.load_model()
    return lambda texts: np.asarray(model.encode(list(texts), normalize_embeddings=True, batch_size=256), np.float32)


@pytest.fixture(scope="module")
def labelled():
    return json.loads(PAIRS.read_text())["pairs"]


@pytest.fixture(scope="module")
def report(labelled, minilm):
    return tuning_report(labelled, encoder=minilm)


def test_the_labelled_set_is_a_few_hundred_pairs_of_both_kinds_in_two_halves(labelled):
    assert len(labelled) == 450
    assert sum(pair["same"] for pair in labelled) == 200
    assert {pair["half"] for pair in labelled} == {"a", "b"}
    # both halves hold both labels, and no pair is the same text twice
    for half in "ab":
        assert {pair["same"] for pair in labelled if pair["half"] == half} == {True, False}
    assert all(pair["first"] != pair["second"] for pair in labelled)


def test_the_rule_in_use_is_the_one_chosen_on_half_a(report):
    assert report["weights"] == event_similarity.MEANING_WEIGHTS
    assert report["apart"]["threshold"] == event_similarity.MEANING_APART
    assert report["together"]["threshold"] == event_similarity.MEANING_TOGETHER
    assert event_similarity.MEANING_TOGETHER < event_similarity.MEANING_APART


def test_held_out_precision_and_recall_match_sklearn_and_the_docs(labelled, minilm, report):
    held_out = [pair for pair in labelled if pair["half"] == "b"]
    scores = np.array([meaning(parts) for parts in pair_parts(held_out, encoder=minilm)])
    labels = [pair["same"] for pair in held_out]
    docs = DOCS.read_text()
    for rule in ("apart", "together"):
        predicted = scores >= report[rule]["threshold"]
        precision, recall = precision_score(labels, predicted), recall_score(labels, predicted)
        assert report[rule]["b"]["precision"] == pytest.approx(precision, abs=5e-4)
        assert report[rule]["b"]["recall"] == pytest.approx(recall, abs=5e-4)
        assert f"| {rule_name(rule)} | {report[rule]['threshold']:.2f} | {precision:.2f} | {recall:.2f} |" in docs


def rule_name(rule: str) -> str:
    return {"apart": "apart in time, or no spans", "together": "over the same seconds"}[rule]


def _two(first, second, first_spans, second_spans):
    return {
        "a": {first[0]: {"source": [first[1]], "spans": first_spans}},
        "b": {second[0]: {"source": [second[1]], "spans": second_spans}},
    }


def test_related_names_match_over_the_same_seconds_but_not_apart(minilm):
    from metrics_bridge.agreement.annotation_agreement import matched_events

    chirping, cooing = ("chirping", "bird"), ("cooing", "pigeons")  # a hypernym and its co-hyponym
    together = matched_events(_two(chirping, cooing, [[1, 6]], [[1.2, 6]]), encoder=minilm)
    assert [group["events"] for group in together["groups"]] == [{"a": ["chirping"], "b": ["cooing"]}]
    [link] = together["groups"][0]["links"]
    assert link["needed"] == event_similarity.MEANING_TOGETHER <= link["score"] < event_similarity.MEANING_APART
    apart = matched_events(_two(chirping, cooing, [[1, 3]], [[6, 9]]), encoder=minilm)
    assert len(apart["groups"]) == 2
    # a dog's bark and a door slam in the same second are two sounds
    sounds = matched_events(_two(("barking", "dog"), ("slam", "door"), [[4, 5]], [[4, 5]]), encoder=minilm)
    assert len(sounds["groups"]) == 2


def test_a_gold_annotation_holding_one_sound_twice_is_found(minilm):
    gold = {
        "rustling": {"source": ["leaves"], "spans": [[0, 8]]},
        "brushing": {"source": ["leaves"], "spans": [[0.5, 8]]},
        "barking": {"source": ["dog"], "spans": [[2, 3]]},
        "slam": {"source": ["door"], "spans": [[2, 3]]},
    }
    pairs = duplicate_events(gold, encoder=minilm)
    assert [(pair["first"], pair["second"]) for pair in pairs] == [("rustling", "brushing")]
    assert pairs[0]["score"] >= pairs[0]["needed"]
