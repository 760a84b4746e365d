"""CIDEr-D's document frequencies come from exactly the four corpora of the FENSE code (protocols.md §1).

A synthetic file of the Clotho-Eval format (other source labels, an extra field before the votes, fewer
MM entries, null and missing entries) is scored twice with pycocoevalcap's own Cider: once on the four
corpora, built here from the raw JSON with the protocol re-implemented independently, and once per split
(the batching this product used before). The two differ, and the product's scores equal the four-corpora
reference.
"""

import json
import random

import numpy as np
import pytest
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from metrics_bridge.agreement.protocol import agreement_report, clips_from_fense_items, scoring_plan
from metrics_bridge.scoring.base import ScoringContext, score_batches
from metrics_bridge.scoring.registry import scorer_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def synthetic_items(shared_dir):
    """40 Clotho-Eval clips relabelled: systems renamed, an extra field before the votes, MM_3/MM_4 dropped
    or null, a few HI entries missing."""
    source = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())
    rng = random.Random(12)
    items = []
    for index, item in enumerate(rng.sample(source, 40)):
        new = {"raw_name": f"synthetic_{index}.wav", "references": list(item["references"])}
        for key in ("HC", "HI", "HM", "MM_1", "MM_2"):
            entry = item.get(key)
            if entry is None or (key == "HI" and index % 7 == 0):
                continue
            a, b, source_a, source_b, votes = entry[0], entry[1], entry[2], entry[3], entry[-1]
            relabel = {"human": "annotator"}
            source_a = source_a if "human" in source_a else f"sys-{relabel.get(source_a, source_a)}"
            source_b = source_b if "human" in source_b else f"sys-{relabel.get(source_b, source_b)}"
            new[key] = [a, b, source_a, source_b, {"batch": index % 3}, votes]
        new["MM_3"] = None
        items.append(new)
    return items


def _without(references, caption):
    same = " ".join(caption.split()).casefold()
    return [r for r in references if " ".join(r.split()).casefold() != same]


def _padded(references):
    result, position = list(references), 0
    while len(result) < 4:
        result.append(references[position % len(references)])
        position += 1
    return result


def reference_corpora(items, *, per_split):
    """{corpus: [(pair key, side, candidate, references), ...]} in the FENSE code's four corpora or per split."""
    corpora = {}
    for item in items:
        references = item["references"]
        for key in sorted(k for k in item if k.split("_")[0] in ("HC", "HI", "HM", "MM")):
            entry = item[key]
            if not entry:
                continue
            split, a, b = key.split("_")[0], entry[0], entry[1]
            if split == "MM":
                passes = [_padded(references[:i] + references[i + 1 :]) for i in range(len(references))]
                sides = [("a", a, passes), ("b", b, passes)]
            else:
                refs_a = _padded(_without(references, a))
                refs_b = _padded(_without(references, b)) if split == "HC" else refs_a
                sides = [("a", a, [refs_a]), ("b", b, [refs_b])]
            for side, caption, reference_lists in sides:
                if per_split:
                    corpus = split
                else:
                    corpus = f"MM:{side}" if split == "MM" else f"HC+HI+HM:{side}"
                for refs in reference_lists:
                    corpora.setdefault(corpus, []).append((f"{item['raw_name']}:{key}", side, caption, refs))
    return corpora


def pycocoevalcap_cider(corpus):
    """pycocoevalcap 1.2: PTBTokenizer, then Cider().compute_score over the corpus (one call)."""
    gts = {i: [{"caption": r} for r in refs] for i, (_, _, _, refs) in enumerate(corpus)}
    res = {i: [{"caption": caption}] for i, (_, _, caption, _) in enumerate(corpus)}
    tokenizer = PTBTokenizer()
    _, scores = Cider().compute_score(tokenizer.tokenize(gts), tokenizer.tokenize(res))
    return [float(value) for value in scores]


def side_scores(corpora):
    """{(pair key, side): mean over the side's requests (leave-one-out passes)} from per-corpus scores."""
    values = {}
    for corpus in corpora.values():
        for (pair_key, side, _, _), score in zip(corpus, pycocoevalcap_cider(corpus), strict=True):
            values.setdefault((pair_key, side), []).append(score)
    return {key: float(np.mean(scores)) for key, scores in values.items()}


def test_cider_d_uses_the_four_fense_corpora_and_per_split_batching_differs(synthetic_items):
    four = reference_corpora(synthetic_items, per_split=False)
    assert sorted(four) == ["HC+HI+HM:a", "HC+HI+HM:b", "MM:a", "MM:b"]
    by_split = side_scores(reference_corpora(synthetic_items, per_split=True))
    by_corpus = side_scores(four)

    clips = clips_from_fense_items(synthetic_items)
    scorer = scorer_for("CIDEr_D")
    plan = scoring_plan(clips, protocol_kind=scorer.protocol_kind)
    assert [batch.label for batch in plan.batches] == ["HC+HI+HM:a", "HC+HI+HM:b", "MM:a", "MM:b"]
    results = score_batches(scorer, [batch.requests for batch in plan.batches], ScoringContext())
    batch_scores = [[result.value for result in batch["CIDEr_D"]] for batch in results]
    ours = {}
    for planned in plan.pairs:
        for side, positions in (("a", planned.side_a), ("b", planned.side_b)):
            ours[(planned.pair.pair_id, side)] = float(np.mean([batch_scores[b][i] for b, i in positions]))

    assert ours.keys() == by_corpus.keys()
    assert max(abs(ours[key] - by_corpus[key]) for key in ours) < 1e-9
    drift = [abs(by_split[key] - by_corpus[key]) for key in by_corpus]
    assert np.mean(drift) > 0.01 and max(drift) > 0.05  # per-split document frequencies are not the protocol's

    def decisions(values):
        return [
            np.sign(np.float32(values[(p.pair.pair_id, "a")]) - np.float32(values[(p.pair.pair_id, "b")]))
            for p in plan.pairs
        ]

    changed = sum(1 for x, y in zip(decisions(by_split), decisions(by_corpus), strict=True) if x != y)
    assert changed >= 1  # some pair's decision depends on the batching
    report = agreement_report(plan, batch_scores, metric="CIDEr_D")
    assert report.total.counted > 100
