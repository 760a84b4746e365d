"""X-ACE design variants on Clotho-Eval: how each choice moves agreement with people (FENSE protocol).

Each row changes one thing against the product's XaceScorer settings (union of the reference graphs,
greedy matching, events compared bare + in context, equal factor weights, F1):
- similarity: bare-lemma events (version 1), calibrated cosines (s - b) / (1 - b), a hard threshold;
- references: per-reference S_G averaged / maximised, union recall weighted by how many references
  mention a node (node frequency), consensus precision (a candidate node's match averaged over the
  references instead of the best one);
- score: F-beta instead of F1, unequal factor weights (E, S, A, R).
Graphs come from the product's RuleExtractor and matching code; only the aggregation differs.

Phrase vectors are cached in a pickle (default /tmp/xace_variants_vectors.pkl) so reruns encode nothing.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/xace_variants_bench.py [--shared ../shared] [--cache PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metrics_bridge.agreement.protocol import agreement_report, clips_from_fense_items, scoring_plan  # noqa: E402
from metrics_bridge.scoring.xace.embedding import encode_phrases  # noqa: E402
from metrics_bridge.scoring.xace.graph import merge_graphs  # noqa: E402
from metrics_bridge.scoring.xace.matching import (  # noqa: E402
    FACTORS,
    PhraseSimilarity,
    f_measure,
    graph_phrases,
    match_graphs,
)
from metrics_bridge.scoring.xace.scorer import TagLibrary, XaceScorer  # noqa: E402
from metrics_bridge.scoring.xace.text import normalize_phrase, packaged_attribute_tags  # noqa: E402

SPLITS = ("HC", "HI", "HM", "MM")


class TransformedSimilarity(PhraseSimilarity):
    """PhraseSimilarity with calibrated ((s - b) / (1 - b)) or thresholded (s < t -> 0) cosines."""

    def __init__(self, *args, calibration: float = 0.0, threshold: float = 0.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calibration, self.threshold = calibration, threshold

    def _cosines(self, xs, ys):
        scores = super()._cosines(xs, ys)
        if self.calibration:
            scores = np.clip((scores - self.calibration) / (1 - self.calibration), 0.0, 1.0)
        if self.threshold:
            scores = np.where(scores < self.threshold, 0.0, scores)
        return scores


def combine(factor_scores: dict, weights=(1, 1, 1, 1), beta: float = 1.0) -> float:
    """Weighted macro P and R over the included factors, then F-beta (the paper: equal weights, F1)."""
    included = [(factor_scores[f], w) for f, w in zip(FACTORS, weights, strict=True) if factor_scores[f] is not None]
    if not included:
        return 0.0
    total = sum(w for _, w in included)
    precision = sum(p * w for (p, _), w in included) / total
    recall = sum(r * w for (_, r), w in included) / total
    if beta == 1.0:
        return f_measure(precision, recall)
    b2 = beta**2
    return (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall > 0 else 0.0


def factor_scores(match) -> dict:
    return {f: ((r.precision, r.recall) if r.included else None) for f, r in match.factors.items()}


def support_weighted(match, reference_graphs) -> dict:
    """Union recall with each reference node weighted by the number of references naming its event."""
    keys = [{normalize_phrase(e) for e in graph.events} for graph in reference_graphs]
    result = factor_scores(match)
    for name in ("event", "source", "attribute"):
        factor = match.factors[name]
        if not factor.included or not factor.reference_nodes:
            continue
        weights = []
        for node in factor.reference_nodes:
            event = node.node if name == "event" else node.event
            weights.append(max(1, sum(normalize_phrase(event) in k for k in keys)))
        recall = float(np.dot(weights, [n.score for n in factor.reference_nodes]) / sum(weights))
        result[name] = (factor.precision, recall)
    return result


def consensus_precision(candidate, reference_graphs, similarity) -> dict:
    """Candidate nodes' matches averaged over the references (recall from the union)."""
    union = match_graphs(candidate, merge_graphs(reference_graphs), similarity)
    per_reference = [match_graphs(candidate, graph, similarity) for graph in reference_graphs]
    result = factor_scores(union)
    for name in FACTORS:
        if result[name] is None or not union.factors[name].candidate_nodes:
            continue
        nodes = np.mean([[n.score for n in m.factors[name].candidate_nodes] for m in per_reference], axis=0)
        result[name] = (float(np.mean(nodes)), result[name][1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    parser.add_argument("--cache", default="/tmp/xace_variants_vectors.pkl")
    parser.add_argument("--quick", action="store_true", help="only the product setting and the bare-event row")
    args = parser.parse_args()
    items = json.loads((Path(args.shared) / "datasets" / "clotho_eval.json").read_text())
    plan = scoring_plan(clips_from_fense_items(items), protocol_kind="embedding")
    scorer = XaceScorer()
    tags = TagLibrary(packaged_attribute_tags())
    started = time.perf_counter()
    requests = {(r.candidate, r.references) for batch in plan.batches for r in batch.requests}
    captions = {c for c, _ in requests} | {text for _, refs in requests for text in refs}
    graphs = {caption: scorer.caption_graph(caption) for caption in captions}
    unions = {refs: merge_graphs([graphs[r] for r in refs]) for _, refs in requests}
    phrases = set(tags.names)
    for graph in [*graphs.values(), *unions.values()]:
        phrases |= graph_phrases(graph)
    vectors = pickle.loads(Path(args.cache).read_bytes()) if os.path.exists(args.cache) else {}
    missing = sorted(phrases - set(vectors))
    if missing:
        vectors.update(zip(missing, encode_phrases(missing), strict=True))
        Path(args.cache).write_bytes(pickle.dumps(vectors))

    def similarity(**kwargs):
        return TransformedSimilarity(vectors, antonyms=tags.are_antonyms, **kwargs)

    product = similarity()
    union_cache: dict = {}

    def union_scores(candidate, refs, sim=product):
        key = (candidate, refs, id(sim))
        if key not in union_cache:
            union_cache[key] = match_graphs(graphs[candidate], unions[refs], sim)
        return union_cache[key]

    def per_reference(candidate, refs, reduce):
        values = [combine(factor_scores(match_graphs(graphs[candidate], graphs[r], product))) for r in refs]
        return float(reduce(values))

    bare, calibrated, thresholded = similarity(context=False), similarity(calibration=0.2), similarity(threshold=0.2)
    rows = [
        ("product: union, events bare+context, F1", lambda c, r: combine(factor_scores(union_scores(c, r)))),
        ("events bare lemma only (version 1 S)", lambda c, r: combine(factor_scores(union_scores(c, r, bare)))),
    ]
    if not args.quick:
        rows += [
            ("calibrated cosine b=0.2", lambda c, r: combine(factor_scores(union_scores(c, r, calibrated)))),
            ("threshold cosine < 0.2 -> 0", lambda c, r: combine(factor_scores(union_scores(c, r, thresholded)))),
            ("per-reference S_G, mean", lambda c, r: per_reference(c, r, np.mean)),
            ("per-reference S_G, max", lambda c, r: per_reference(c, r, np.max)),
            (
                "union, recall weighted by node frequency",
                lambda c, r: combine(support_weighted(union_scores(c, r), [graphs[x] for x in r])),
            ),
            (
                "consensus precision (mean over refs)",
                lambda c, r: combine(consensus_precision(graphs[c], [graphs[x] for x in r], product)),
            ),
            ("F-beta, beta=0.5", lambda c, r: combine(factor_scores(union_scores(c, r)), beta=0.5)),
            ("F-beta, beta=2", lambda c, r: combine(factor_scores(union_scores(c, r)), beta=2.0)),
        ]
        for weights in ((1, 0, 0, 0), (1, 1, 0, 0), (1, 1, 1, 0), (2, 1, 1, 1), (1, 0.5, 1, 1), (1, 1, 0.5, 1)):
            rows.append(
                (
                    f"factor weights E,S,A,R={weights}",
                    lambda c, r, w=weights: combine(factor_scores(union_scores(c, r)), w),
                )
            )
    print(f"{'variant':<46}" + "".join(f"{s:>7}" for s in SPLITS) + f"{'total':>8}")
    for label, score in rows:
        memo: dict = {}
        batch_scores = []
        for batch in plan.batches:
            row = []
            for request in batch.requests:
                key = (request.candidate, request.references)
                if key not in memo:
                    memo[key] = score(*key)
                row.append(memo[key])
            batch_scores.append(row)
        table = agreement_report(plan, batch_scores).as_dict()
        print(f"{label:<46}" + "".join(f"{table.get(s)!s:>7}" for s in SPLITS) + f"{table['total']!s:>8}", flush=True)
    print(f"{time.perf_counter() - started:.0f} s, {scorer.version}")


if __name__ == "__main__":
    main()
