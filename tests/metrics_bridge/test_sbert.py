"""SBERT (all-MiniLM-L6-v2, offline): values, encode-once caching; FENSE's penalty with a tiny FENSE checkpoint."""

import numpy as np
import pytest

from metrics_bridge.scoring import sbert
from metrics_bridge.scoring.base import MetricResources, ScoringContext, ScoringRequest
from metrics_bridge.scoring.fense import FenseScorer
from metrics_bridge.scoring.fluency.synthesis import normalise
from metrics_bridge.scoring.sbert import SbertScorer

CONTEXT = ScoringContext()
REQUESTS = [
    ScoringRequest(
        "a dog barks twice near a pond", ("a dog is barking", "ducks quack on the water", "a dog is barking")
    ),
    ScoringRequest("ducks quack on the water", ("a dog barks twice near a pond", "rain is falling on leaves")),
    ScoringRequest(
        "a dog barks twice near a pond",
        ("rain is falling on leaves", "thunder rumbles far away", "a bird sings", "wind"),
    ),
]


@pytest.fixture
def counted_encode(monkeypatch):
    model = sbert.load_model()
    calls = []
    original = model.encode

    def encode(sentences, *args, **kwargs):
        calls.append(list(sentences))
        return original(sentences, *args, **kwargs)

    monkeypatch.setattr(model, "encode", encode)
    sbert.clear_cache()
    yield calls
    sbert.clear_cache()


def test_sbert_is_the_mean_cosine_to_the_references():
    model = sbert.load_model()
    values = [r.value for r in SbertScorer().score_batch(REQUESTS, CONTEXT)["SBERT"]]
    for request, value in zip(REQUESTS, values, strict=True):
        candidate = model.encode([request.candidate], normalize_embeddings=True)[0]
        references = model.encode(list(request.references), normalize_embeddings=True)
        expected = float(
            np.mean([np.dot(candidate, ref) / np.linalg.norm(ref) / np.linalg.norm(candidate) for ref in references])
        )
        assert value == pytest.approx(expected, abs=1e-5)
    assert values[0] > values[2]  # the dog caption is closer to dog references than to rain/thunder


def test_each_distinct_sentence_is_encoded_once_per_process(counted_encode):
    scorer = SbertScorer()
    scorer.score_batch(REQUESTS, CONTEXT)
    distinct = {t for r in REQUESTS for t in (r.candidate, *r.references)}
    assert len(counted_encode) == 1
    assert sorted(counted_encode[0]) == sorted(distinct)
    scorer.score_batches([REQUESTS, REQUESTS[:1]], CONTEXT)
    assert len(counted_encode) == 1  # everything came from the cache
    vectors = sbert.encode_texts(["a dog is barking", "a new sentence about a cat"])
    assert counted_encode[1] == ["a new sentence about a cat"]
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# --- FENSE -------------------------------------------------------------------------------------


def write_tiny_detector(folder, error_bias: float):
    """A FENSE-format checkpoint with a 1-layer BERT whose head outputs `error_bias` for the error class."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog", "barks", "ducks", "quack", "the", "on", "water"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizer(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    )
    config.save_pretrained(folder)
    torch.manual_seed(0)
    state = {f"encoder.{key}": value for key, value in BertModel(config).state_dict().items()}
    state["clf.weight"] = torch.zeros(6, 8)
    state["clf.bias"] = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, error_bias])
    path = folder / "echecker.ckpt"
    torch.save({"model_type": str(folder), "num_classes": 6, "state_dict": state}, path)
    return path


def with_detector(path) -> ScoringContext:
    return ScoringContext(resources=MetricResources(fense_error_detector_path=str(path)))


def test_fense_is_unavailable_when_the_configured_checkpoint_is_missing(monkeypatch):
    monkeypatch.setenv("FENSE_ERROR_DETECTOR_PATH", "/ignored/scorers/read/no/environment.ckpt")
    assert FenseScorer().unavailable_reason(CONTEXT) is None  # the shipped detector; the environment is not read
    context = with_detector("/nonexistent/echecker.ckpt")
    expected = "FENSE: FENSE_ERROR_DETECTOR_PATH=/nonexistent/echecker.ckpt is not a file"
    assert FenseScorer().unavailable_reason(context) == expected
    with pytest.raises(RuntimeError, match="is not a file"):
        FenseScorer().score_batch(REQUESTS, context)


@pytest.mark.parametrize(("error_bias", "penalized"), [(5.0, True), (2.0, False), (-5.0, False)])
def test_fense_multiplies_by_one_tenth_when_the_error_probability_exceeds_0_9(
    monkeypatch, tmp_path, error_bias, penalized
):
    # sigmoid(5) = 0.993 > 0.9; sigmoid(2) = 0.881 is under the threshold
    context = with_detector(write_tiny_detector(tmp_path / "detector", error_bias))
    scorer = FenseScorer()
    assert scorer.unavailable_reason(context) is None
    assert "echecker.ckpt" in scorer.version_for(context) and "all-MiniLM-L6-v2" in scorer.version_for(context)
    assert "echecker-minilm-l6-top1-synth-disjoint:" in scorer.version_for(CONTEXT)
    similarity = [r.value for r in SbertScorer().score_batch(REQUESTS, CONTEXT)["SBERT"]]
    results = scorer.score_batch(REQUESTS, context)["FENSE"]
    for result, plain in zip(results, similarity, strict=True):
        assert result.details["penalized"] is penalized
        assert result.details["error_probability"] == pytest.approx(1 / (1 + np.exp(-error_bias)), abs=1e-6)
        assert result.value == pytest.approx(plain * 0.1 if penalized else plain, abs=1e-9)


def test_fense_preprocessing_drops_punctuation_and_lowercases():
    # FENSE's text_preprocess removes punctuation and lower-cases; spaces are collapsed (the tokenizer ignores them).
    # The error detector reads its input through this (metrics_bridge/scoring/fluency/model.py).
    assert normalise("A dog's bark, high-pitched!  Loudly.") == "a dogs bark highpitched loudly"
