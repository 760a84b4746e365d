"""BERTScore: the product's scorer against bert_score.score() on the same packaged model and layer."""

import pytest
from bert_score import score as bert_score

from metrics_bridge.scoring import sbert
from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.bertscore import LAYER, BertScoreScorer
from metrics_bridge.scoring.registry import scorer_for

CANDIDATES = ["a dog barks loudly", "rain falls on a tin roof", "a man speaks while cars pass by"]
REFERENCES = [
    ["a dog is barking", "a loud dog barks twice", "someone plays a piano"],
    ["heavy rain falls on a metal roof", "rain pours down"],
    ["vehicles drive past as a person talks", "a man talks", "traffic noise and speech", "a car horn honks"],
]


@pytest.fixture(scope="module")
def requests():
    return [
        ScoringRequest(c, tuple(refs), candidate_id=i)
        for i, (c, refs) in enumerate(zip(CANDIDATES, REFERENCES, strict=True))
    ]


def test_f1_equals_bert_score_with_the_best_reference(requests):
    results = BertScoreScorer().score_batch(requests, ScoringContext())["BERTScore"]
    model = str(sbert.model_path())
    precision, recall, f1 = bert_score(CANDIDATES, REFERENCES, model_type=model, num_layers=LAYER, device="cpu")
    assert [r.value for r in results] == pytest.approx(f1.tolist(), abs=1e-6)
    assert [r.details["precision"] for r in results] == pytest.approx(precision.tolist(), abs=1e-5)
    # the best of the references: F1 against each reference alone, then the maximum
    for index, (candidate, references) in enumerate(zip(CANDIDATES, REFERENCES, strict=True)):
        _, _, single = bert_score(
            [candidate] * len(references), references, model_type=model, num_layers=LAYER, device="cpu"
        )
        assert results[index].value == pytest.approx(max(single.tolist()), abs=1e-6)


def test_idf_weights_come_from_the_batch_references(requests):
    scorer = BertScoreScorer(idf=True)
    assert scorer.corpus_level and "idf-refs" in scorer.version
    results = scorer.score_batch(requests, ScoringContext())["BERTScore"]
    flat = [text for refs in REFERENCES for text in refs]
    model = str(sbert.model_path())
    # bert-score's own idf option over the same sentences (idf=dict of weights from those references)
    from bert_score.utils import get_idf_dict, get_tokenizer

    idf = get_idf_dict(flat, get_tokenizer(model, use_fast=False))
    _, _, f1 = bert_score(CANDIDATES, REFERENCES, model_type=model, num_layers=LAYER, idf=idf, device="cpu")
    assert [r.value for r in results] == pytest.approx(f1.tolist(), abs=1e-6)


def test_bertscore_is_a_registered_metric_naming_its_model_and_layer():
    scorer = scorer_for("BERTScore")
    assert scorer.protocol_kind == "embedding" and not scorer.corpus_level
    assert f"-L{LAYER}-F1-bestref-idf-none-rescale-none-all-MiniLM-L6-v2(" in scorer.version
    assert "bertscore-0.3.13" in scorer.version
    assert scorer.unavailable_reason() is None
