"""BLEU/METEOR/ROUGE_L/CIDEr_D equal pycocoevalcap 1.2 (its own classes, called here) to 1e-6; registry."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from metrics_bridge.agreement.protocol import clips_from_fense_items, scoring_plan
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import ScoringContext, ScoringRequest, score_batches
from metrics_bridge.scoring.classic import (
    BleuScorer,
    CiderScorer,
    MeteorScorer,
    RougeScorer,
    meteor_process,
    ptb_tokenizer,
    tokenize_batches,
)

CLASSIC = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D"]


def pycocoevalcap_scores(requests, *, meteor=True):
    """Sentence-level values straight from pycocoevalcap: tokenize the batch, then each scorer."""
    gts = {i: [{"caption": r} for r in request.references] for i, request in enumerate(requests)}
    res = {i: [{"caption": request.candidate}] for i, request in enumerate(requests)}
    tokenizer = PTBTokenizer()
    gts, res = tokenizer.tokenize(gts), tokenizer.tokenize(res)
    values = {}
    _, bleu = Bleu(4).compute_score(gts, res, verbose=0)
    for k in range(4):
        values[f"BLEU_{k + 1}"] = np.array(bleu[k])
    if meteor:  # a JVM start of several seconds
        scorer = Meteor()
        values["METEOR"] = np.array(scorer.compute_score(gts, res)[1])
        del scorer
    values["ROUGE_L"] = np.array(Rouge().compute_score(gts, res)[1])
    values["CIDEr_D"] = np.array(Cider().compute_score(gts, res)[1])
    return values


def our_scores(batches):
    values = [{} for _ in batches]
    for scorer in [BleuScorer(), MeteorScorer(), RougeScorer(), CiderScorer()]:
        for into, result in zip(values, score_batches(scorer, batches, ScoringContext()), strict=True):
            into.update({name: np.array([r.value for r in results]) for name, results in result.items()})
    return values


@pytest.fixture(scope="module")
def clotho_sample(shared_dir):
    """62 requests: 40 MM leave-one-out and 17 HC/HI/HM requests of Clotho-Eval, 3 repeats, 2 odd texts."""
    clips = clips_from_fense_items(json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text()))
    plan = scoring_plan(clips, protocol_kind="ngram")
    rng = random.Random(7)
    by_label = {batch.label: batch.requests for batch in plan.batches}
    mm = by_label["MM:a"] + by_label["MM:b"]
    sample = rng.sample(mm, 40) + rng.sample(by_label["HC+HI+HM:a"] + by_label["HC+HI+HM:b"], 17)
    odd = [
        ScoringRequest("...", sample[0].references),  # nothing left after punctuation removal
        ScoringRequest("A DOG, barking (loudly)!", ("a dog barks", "dogs bark loudly", "a dog barks", "a dog barks")),
    ]
    return sample + sample[:3] + odd  # duplicates count in CIDEr-D's document frequencies


@pytest.fixture(scope="module")
def reference_values(clotho_sample):
    return pycocoevalcap_scores(clotho_sample)


def test_sentence_values_equal_pycocoevalcap(clotho_sample, reference_values):
    (ours,) = our_scores([clotho_sample])
    for name in CLASSIC:
        assert ours[name].shape == reference_values[name].shape
        assert np.max(np.abs(ours[name] - reference_values[name])) <= 1e-6, name
    assert reference_values["CIDEr_D"].std() > 0 and reference_values["METEOR"].std() > 0


def test_each_batch_is_its_own_cider_corpus_and_texts_are_tokenized_in_one_jvm_call(clotho_sample, reference_values):
    ptb_tokenizer.clear_cache()
    first, second = clotho_sample[:25], clotho_sample[25:]
    calls_before = ptb_tokenizer.jvm_calls
    values = our_scores([first, second])
    assert ptb_tokenizer.jvm_calls - calls_before == 1
    alone = pycocoevalcap_scores(first, meteor=False)
    assert np.max(np.abs(values[0]["CIDEr_D"] - alone["CIDEr_D"])) <= 1e-6
    assert np.max(np.abs(values[0]["CIDEr_D"] - reference_values["CIDEr_D"][:25])) > 1e-3  # other corpus, other df
    joined = np.concatenate([values[0]["METEOR"], values[1]["METEOR"]])
    assert np.max(np.abs(joined - reference_values["METEOR"])) <= 1e-6


def test_tokenizer_keeps_lines_aligned_and_matches_pycocoevalcap():
    texts = ["A dog, barking loudly.", "", "Rain\rfalls\u2028on a  roof", 'The "cat" (small) meows!', "café — naïve"]
    ours = ptb_tokenizer.tokenize_texts(texts)
    assert ours[0] == "a dog barking loudly"
    assert ours[1] == ""
    assert ours[2] == "rain falls on a roof"
    expected = PTBTokenizer().tokenize({i: [{"caption": t}] for i, t in enumerate(texts) if i != 2})
    assert [ours[i] for i in (0, 1, 3, 4)] == [expected[i][0] for i in (0, 1, 3, 4)]


def test_tokenizer_prefetch_tokenizes_the_corpus_in_the_same_jvm_call():
    ptb_tokenizer.clear_cache()
    calls_before = ptb_tokenizer.jvm_calls
    corpus = ["Birds chirp, loudly!", "A CAR passes by.", "wind, strong, blows"]
    assert ptb_tokenizer.tokenize_texts(["A dog barks."], prefetch=corpus) == ["a dog barks"]
    assert ptb_tokenizer.tokenize_texts(corpus) == ["birds chirp loudly", "a car passes by", "wind strong blows"]
    assert ptb_tokenizer.jvm_calls - calls_before == 1  # the corpus came with the first call


def test_bit_parallel_lcs_equals_pycocoevalcaps_table(clotho_sample):
    from pycocoevalcap.rouge.rouge import my_lcs

    from metrics_bridge.scoring.classic.lcs import lcs_length

    rng = random.Random(3)
    pairs = [([], ["a"]), (["a"], []), (["a", "a", "a"], ["a"]), (["x"] * 70, ["x", "y"] * 40)]
    for _ in range(300):  # small vocabularies: many repeated tokens, the hard case for LCS
        vocabulary = "abcde"[: rng.randint(1, 5)]
        pairs.append(
            ([rng.choice(vocabulary) for _ in range(rng.randint(0, 80))],
             [rng.choice(vocabulary) for _ in range(rng.randint(0, 80))])
        )
    for request in clotho_sample:
        for reference in request.references:
            pairs.append((reference.lower().split(), request.candidate.lower().split()))
    for first, second in pairs:
        expected = my_lcs(first, second)
        assert lcs_length(first, second) == expected == lcs_length(second, first)


def test_a_killed_meteor_jvm_is_restarted(clotho_sample, reference_values):
    process = meteor_process.shared_process()
    process.start()
    starts = process.starts
    process._process.kill()
    process._process.wait()
    process._cache.clear()
    tokenized = tokenize_batches([clotho_sample[:5]])[0]
    assert process.score(tokenized) == pytest.approx(list(reference_values["METEOR"][:5]), abs=1e-6)
    assert process.starts == starts + 1


def test_requests_without_references_are_rejected():
    with pytest.raises(ValueError, match="no references"):
        BleuScorer().score_batch([ScoringRequest("a dog", (), candidate_id=5)], ScoringContext())


def test_registry_names_instances_and_reasons(monkeypatch, tmp_path):
    names = registry.all_metric_names()
    for name in CLASSIC + ["SPICE", "SPIDEr", "SBERT", "FENSE"]:
        assert name in names
    assert registry.scorer_for("BLEU_1") is registry.scorer_for("BLEU_4")
    assert registry.scorer_for("CIDEr_D").corpus_level and not registry.scorer_for("BLEU_2").corpus_level
    assert (
        registry.scorer_for("SBERT").protocol_kind == "embedding"
        and registry.scorer_for("METEOR").protocol_kind == "ngram"
    )
    assert "pycocoevalcap-1.2" in registry.scorer_for("METEOR").version
    with pytest.raises(KeyError, match="unknown metric 'BLEU_5'"):
        registry.scorer_for("BLEU_5")

    monkeypatch.delenv("SPICE_CORENLP_DIR", raising=False)
    monkeypatch.delenv("FENSE_ERROR_DETECTOR_PATH", raising=False)
    reasons = registry.unavailable_metrics()
    assert reasons["SPICE"] == "SPICE: Stanford CoreNLP 3.6.0 models not found in SPICE_CORENLP_DIR"
    assert reasons["SPIDEr"] == "SPIDEr: Stanford CoreNLP 3.6.0 models not found in SPICE_CORENLP_DIR"
    assert not set(CLASSIC + ["SBERT", "FENSE"]) & set(reasons)  # FENSE runs with the shipped detector
    assert set(CLASSIC + ["SBERT", "FENSE"]) <= set(registry.available_metric_names())

    monkeypatch.setenv("SPICE_CORENLP_DIR", str(tmp_path))
    (tmp_path / "stanford-corenlp-3.6.0.jar").write_bytes(b"")
    assert "SPICE" in registry.unavailable_metrics()  # the models jar is still missing


def test_importing_the_registry_and_checking_these_scorers_loads_no_model():
    names = ",".join(repr(n) for n in CLASSIC + ["SPICE", "SPIDEr", "SBERT", "FENSE"])
    code = (
        "import sys; from metrics_bridge.scoring import registry; registry.all_scorers();"
        f"[registry.scorer_for(n).unavailable_reason(None) for n in [{names}]];"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False False"
