"""Speed of our classic suite and SBERT against the straightforward way, on the Clotho-Eval protocol inputs.

Classic suite (PTB tokenization, BLEU_1..4, METEOR, ROUGE_L, CIDEr_D) over the FENSE-protocol
scoring plan of Clotho-Eval (4 batches, 11,500 requests):
- ours: metrics_bridge.scoring.classic.score_classic_suite (one tokenizer JVM call, one METEOR JVM
  scoring in a background thread while BLEU/ROUGE-L/CIDEr-D run, work done once per distinct input);
- pycocoevalcap 1.2 called as the FENSE evaluation code calls it: per batch a fresh PTBTokenizer
  for references and for candidates, then Bleu(4), a new Meteor() (a JVM start), Rouge(), Cider().
Same process, same inputs; prints wall times, the ratio, and the largest |delta| of the values.

SBERT (all-MiniLM-L6-v2): our encode-once scorer vs encoding candidate and references per request
(as FENSE's Evaluator.sentence_score does), on the embedding plan's requests; model load excluded.

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/metrics_bench.py [--shared ../shared] [--skip-classic] [--skip-sbert]
     [--sbert-sample N]   (per-request encoding of all 3,500 requests takes minutes; N requests for a quick look)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from metrics_bridge.agreement.protocol import agreement_report, clips_from_fense_items, scoring_plan  # noqa: E402
from metrics_bridge.scoring.base import ScoringContext, score_batches  # noqa: E402

CLASSIC = ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D"]


def ours_classic(plan) -> dict[str, list[np.ndarray]]:
    from metrics_bridge.scoring.classic import score_classic_suite

    results = score_classic_suite([batch.requests for batch in plan.batches], ScoringContext())
    return {name: [np.array([r.value for r in result[name]]) for result in results] for name in CLASSIC}


def pycocoevalcap_classic(plan) -> tuple[dict[str, list[np.ndarray]], dict[str, float]]:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    values: dict[str, list[np.ndarray]] = {name: [] for name in CLASSIC}
    timings = dict.fromkeys(["tokenize", "BLEU", "METEOR", "ROUGE_L", "CIDEr_D"], 0.0)

    def timed(key, function):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            result = function()
        timings[key] += time.perf_counter() - start
        return result

    for batch in plan.batches:
        gts = {i: [{"caption": r} for r in request.references] for i, request in enumerate(batch.requests)}
        res = {i: [{"caption": request.candidate}] for i, request in enumerate(batch.requests)}
        gts = timed("tokenize", lambda: PTBTokenizer().tokenize(gts))  # noqa: B023
        res = timed("tokenize", lambda: PTBTokenizer().tokenize(res))  # noqa: B023
        _, bleu = timed("BLEU", lambda: Bleu(4).compute_score(gts, res, verbose=0))  # noqa: B023
        for k in range(4):
            values[f"BLEU_{k + 1}"].append(np.array(bleu[k]))

        def meteor():
            scorer = Meteor()
            scores = scorer.compute_score(gts, res)[1]  # noqa: B023
            del scorer  # its __del__ stops the JVM, as when FENSE's helper returns
            return scores

        values["METEOR"].append(np.array(timed("METEOR", meteor)))
        values["ROUGE_L"].append(np.array(timed("ROUGE_L", lambda: Rouge().compute_score(gts, res)[1])))  # noqa: B023
        values["CIDEr_D"].append(np.array(timed("CIDEr_D", lambda: Cider().compute_score(gts, res)[1])))  # noqa: B023
    return values, timings


def accuracy_row(plan, values, name) -> str:
    report = agreement_report(plan, [list(v) for v in values[name]], metric=name).as_dict()
    return "/".join(f"{report[s]:.1f}" for s in ["HC", "HI", "HM", "MM", "total"])


def bench_classic(clips) -> None:
    plan = scoring_plan(clips, protocol_kind="ngram")
    requests = sum(len(batch.requests) for batch in plan.batches)
    print(f"classic suite: {len(plan.batches)} batches, {requests} requests")
    start = time.perf_counter()
    ours = ours_classic(plan)
    ours_seconds = time.perf_counter() - start
    # A second run in the same process (a Celery worker's next run): the METEOR JVM is up, caches are emptied.
    from metrics_bridge.scoring.classic import meteor_process, ptb_tokenizer

    ptb_tokenizer.clear_cache()
    meteor_process.shared_process()._cache.clear()
    start = time.perf_counter()
    ours_warm = ours_classic(plan)
    warm_seconds = time.perf_counter() - start
    start = time.perf_counter()
    theirs, their_timings = pycocoevalcap_classic(plan)
    theirs_seconds = time.perf_counter() - start

    print(f"  ours          {ours_seconds:7.1f} s   (score_classic_suite: 1 tokenizer JVM call, 1 METEOR JVM)")
    print(f"  pycocoevalcap {theirs_seconds:7.1f} s   " + "  ".join(f"{k} {v:.1f}" for k, v in their_timings.items()))
    print(f"  ours, warm    {warm_seconds:7.1f} s   (same, METEOR JVM already running, caches emptied)")
    print(f"  speed-up      {theirs_seconds / ours_seconds:7.1f} x   (warm JVM: {theirs_seconds / warm_seconds:.1f} x)")
    worst = 0.0
    for name in CLASSIC:
        pairs = [(a, b) for run in (ours, ours_warm) for a, b in zip(run[name], theirs[name], strict=True)]
        delta = max(float(np.max(np.abs(a - b))) for a, b in pairs)
        worst = max(worst, delta)
        print(
            f"  {name:8s} max |delta| {delta:.2e}   HC/HI/HM/MM/total ours {accuracy_row(plan, ours, name)}"
            f"  pycocoevalcap {accuracy_row(plan, theirs, name)}"
        )
    print(f"  max |delta| over all classic values: {worst:.2e}")


def bench_sbert(clips, sample: int = 0) -> None:
    from metrics_bridge.scoring import sbert

    plan = scoring_plan(clips, protocol_kind="embedding")
    requests = [request for batch in plan.batches for request in batch.requests]
    if sample:
        requests = requests[:: max(1, len(requests) // sample)][:sample]
        plan.batches = [type(plan.batches[0])(label="sample", requests=tuple(requests))]
    model = sbert.load_model()
    model.encode(["warm up"], show_progress_bar=False)
    sbert.clear_cache()
    start = time.perf_counter()
    ours = np.array(
        [
            r.value
            for batch in score_batches(sbert.SbertScorer(), [b.requests for b in plan.batches], ScoringContext())
            for r in batch["SBERT"]
        ]
    )
    ours_seconds = time.perf_counter() - start

    start = time.perf_counter()
    per_pair = []
    for request in requests:
        candidate = model.encode([request.candidate], normalize_embeddings=True, show_progress_bar=False)
        references = model.encode(list(request.references), normalize_embeddings=True, show_progress_bar=False)
        per_pair.append(float((candidate @ references.T).mean()))
    per_pair_seconds = time.perf_counter() - start
    print(f"SBERT: {len(requests)} requests")
    print(f"  encode once   {ours_seconds:7.1f} s")
    print(f"  per request   {per_pair_seconds:7.1f} s")
    delta = np.max(np.abs(ours - np.array(per_pair)))
    print(f"  speed-up      {per_pair_seconds / ours_seconds:7.1f} x   max |delta| {delta:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    parser.add_argument("--dataset", default="clotho_eval.json")
    parser.add_argument("--skip-classic", action="store_true")
    parser.add_argument("--skip-sbert", action="store_true")
    parser.add_argument("--sbert-sample", type=int, default=0, help="SBERT on every n-th request only (0: all)")
    args = parser.parse_args()
    clips = clips_from_fense_items(json.loads((Path(args.shared) / "datasets" / args.dataset).read_text()))
    if not args.skip_classic:
        bench_classic(clips)
    if not args.skip_sbert:
        bench_sbert(clips, args.sbert_sample)


if __name__ == "__main__":
    main()
