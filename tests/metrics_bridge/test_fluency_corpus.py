"""Training text for the fluency detector that no benchmark holds (whole sentences of X-ACE captions, captions written
from AudioCaps-F annotations, files to stay disjoint from), and the command training on it with a tiny BERT."""

import json

import pytest
import torch
from django.core.management import call_command
from safetensors import safe_open

from metrics_bridge.agreement import fingerprints
from metrics_bridge.scoring.fluency import corpus, model, training

XACE = [
    {"caption": "A dog barks. A man speaks loudly.The audio", "node": {}},  # cut mid-sentence by the generator
    {"caption": "Birds chirp while a car passes by. Then a", "node": {}},
    {"caption": "Rain is falling on a roof.", "node": {}},
]
ANNOTATIONS = {
    "a.wav": {
        "barking": {"source": ["dog"], "attr": ["Loud", "In the background"]},
        "speaks": {"source": ["man"], "attr": ["Casual"]},
    },
    "b.wav": {"chirping": {"source": ["birds"], "attr": ["Nearby"]}, "footsteps": {"source": [], "attr": []}},
}


def test_only_whole_sentences_of_the_machine_captions_are_kept():
    # "A dog barks." has three words (too short to teach anything); "The audio" and "Then a" are cut off
    assert corpus.xace_sentences(XACE) == [
        "A man speaks loudly.",
        "Birds chirp while a car passes by.",
        "Rain is falling on a roof.",
    ]


def test_captions_written_from_annotations_read_as_captions_and_are_deterministic():
    captions = corpus.template_captions(ANNOTATIONS, seed=3, per_clip=4)
    assert captions == corpus.template_captions(ANNOTATIONS, seed=3, per_clip=4)
    allowed_clauses = {
        "a dog is barking", "a dog barking", "a man speaks", "birds are chirping", "birds chirping",
    }  # fmt: skip
    for caption in captions:
        text = caption
        for adverbial in ("in the background", "nearby"):
            text = text.replace(" " + adverbial, "")
        for joiner in (" followed by ", " along with ", " and then ", " before ", " after ", " while ", " with "):
            text = text.replace(joiner, "|")
        text = text.replace(" and ", "|").replace(" as ", "|")
        assert set(text.split("|")) <= allowed_clauses, caption
    # an event without a source has no subject to write ("footsteps" alone is left out)
    assert not any("footsteps" in caption for caption in captions)
    assert "birds chirping" in captions or "birds are chirping" in captions or "birds are chirping nearby" in captions


def test_a_source_is_capped_by_a_seeded_draw_that_keeps_its_order():
    captions = [f"caption {index}" for index in range(50)]
    drawn = corpus.sample(captions, 10, seed=4)
    assert len(drawn) == 10 and drawn == sorted(drawn, key=captions.index)
    assert drawn == corpus.sample(captions, 10, seed=4) and drawn != corpus.sample(captions, 10, seed=5)
    assert corpus.sample(captions, None) == captions and corpus.sample(captions[:3], 10) == captions[:3]


def test_texts_of_the_excluded_files_are_dropped_by_fingerprint(tmp_path):
    excluded = tmp_path / "benchmark.json"
    excluded.write_text(json.dumps([{"references": ["RAIN is falling, on a roof"], "HC": ["x", "y", [1]]}]))
    kept = corpus.without_texts(corpus.xace_sentences(XACE), corpus.read_excluded(excluded))
    assert kept == ["A man speaks loudly.", "Birds chirp while a car passes by."]
    labels = tmp_path / "labels.csv"
    labels.write_text("caption,fluency_issue\na man speaks loudly,0\n")
    assert corpus.without_texts(kept, corpus.read_excluded(labels)) == ["Birds chirp while a car passes by."]


@pytest.fixture
def tiny_encoder(tmp_path, monkeypatch):
    """A 2-layer BERT built from a config with a small vocabulary, in place of the packaged Sentence-BERT model."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words = sorted({word for text in [*corpus.xace_sentences(XACE), "a dog is barking man speaks"] for word in
                    fingerprints.normalise_text(text).split()})  # fmt: skip
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizer(vocab_file=str(vocab))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + len(words), hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16)  # fmt: skip
    bert = BertModel(config).eval()
    monkeypatch.setattr(model, "encoder_parts", lambda: (bert, tokenizer))
    monkeypatch.setattr(training, "encoder_parts", lambda: (bert, tokenizer))
    return bert


def test_the_command_trains_on_the_sources_without_the_excluded_texts_and_declares_them(tmp_path, tiny_encoder):
    xace, annotations, excluded = tmp_path / "graphs.json", tmp_path / "acf.json", tmp_path / "bench.json"
    xace.write_text(json.dumps(XACE))
    annotations.write_text(json.dumps(ANNOTATIONS))
    excluded.write_text(json.dumps([{"references": ["rain is falling on a roof"]}]))
    out = tmp_path / "detector.safetensors"

    def train(path):
        call_command("train_fluency_detector", str(xace), str(annotations), "--exclude", str(excluded),
                     "--out", str(path), "--seed", "2", "--epochs", "1", "--threads", "1")  # fmt: skip

    train(out)
    train(tmp_path / "again.safetensors")

    expected = corpus.without_texts(
        [*corpus.xace_sentences(XACE), *corpus.template_captions(ANNOTATIONS, seed=2)], ["rain is falling on a roof"]
    )
    declared = fingerprints.read_training_texts(out)
    assert declared.hashes == {fingerprints.text_hash(text) for text in expected}
    assert fingerprints.text_hash("Rain is falling on a roof.") not in declared.hashes
    assert "none of the texts of bench.json" in declared.description
    with safe_open(str(out), framework="pt") as first, safe_open(str(tmp_path / "again.safetensors"), "pt") as second:
        assert first.metadata()["captions_sha256"] == training.captions_digest(list(dict.fromkeys(expected)))
        assert first.metadata()["trained_layers"] == "1"
        assert all(torch.equal(first.get_tensor(key), second.get_tensor(key)) for key in first.keys())
    probabilities = model.MiniLMErrorDetector(out).error_probabilities(["a dog is barking", "a dog is barking a"])
    assert probabilities.shape == (2,) and ((probabilities > 0) & (probabilities < 1)).all()
