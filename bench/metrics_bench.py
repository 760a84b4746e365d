"""Speed of our classic suite and SBERT against the straightforward way, on the Clotho-Eval protocol inputs.

End to end (the figures docs/metrics.md reports), each round in this one invocation, on a fresh
Clotho-Eval import (a pristine database copy per run):
- cold: `manage.py compute_metrics --dataset clotho-eval --metrics <classic suite> --wait` timed as a
  whole command (process start, planning, the temporary worker it starts, METEOR's JVM, scoring, storing);
- warm: the same command while a worker is running whose METEOR JVM is up, started as ./scripts/run starts
  it (METRICS_WARM_UP=METEOR); it scored a warm-up dataset of made-up captions first (bench_database.py), as
  a worker kept running has scored earlier runs, so its JIT is warm and its caches hold none of Clotho-Eval's;
- pycocoevalcap 1.2 on the same protocol inputs (the FENSE plan of the imported rows), as below;
the ratios are pycocoevalcap / ours per round, reported as medians with the load average; every value the
commands stored must equal pycocoevalcap's (max |delta| = 0, asserted).
Full agreement report: `manage.py agreement_report` of the classic suite + SBERT + DATE + XACE from a fresh
import (every score computed by a temporary worker), timed as a whole command.

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
     [--skip-end-to-end] [--skip-report] [--rounds N] [--warm-pool threads|solo]
     [--database-url postgresql://user:pass@host/db]
     (end to end on SQLite in a temporary folder by default; with --database-url, on throwaway databases
     <db>_bench_template / <db>_bench_run created on that PostgreSQL server)
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


# --- End to end: whole commands on a fresh import ---------------------------------------------------------


def django_on(database) -> None:
    """Set up Django in this process on the benchmark's run database (to read what the commands stored)."""
    os.environ.update(database.env())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def protocol_plan_of_imported_rows():
    """The FENSE n-gram plan of the imported Clotho-Eval rows: what compute_metrics scores, with caption ids."""
    from django.db import connections

    from corpus.models import Dataset
    from metrics_bridge.selectors.scoring_inputs import dataset_clip_rows
    from metrics_bridge.services.runs.plans import protocol_clips

    clip_rows = dataset_clip_rows(dataset=Dataset.objects.get(name="clotho-eval"))
    connections.close_all()  # each round replaces the database (on PostgreSQL: DROP ... WITH (FORCE))
    return scoring_plan(protocol_clips(clip_rows), protocol_kind="ngram")


def stored_classic_values(plan) -> dict[str, list[np.ndarray]]:
    """The values the command stored for each protocol request, in plan order (NaN where none is stored)."""
    from django.db import connections

    from metrics_bridge.models import MetricScore
    from metrics_bridge.scoring import registry
    from metrics_bridge.services.runs.plans import fense_label, reference_context
    from metrics_bridge.services.runs.reference_sets import reference_set_key

    values = {}
    for name in CLASSIC:
        scorer = registry.scorer_for(name)
        rows = MetricScore.objects.filter(metric=name, version=scorer.version)
        stored = {(c, k): v for c, k, v in rows.values_list("caption_id", "reference_set__key", "value").iterator()}
        values[name] = [
            np.array(
                [
                    stored.get(
                        (
                            request.candidate_id,
                            reference_set_key(
                                texts=tuple(request.references),
                                context=reference_context(
                                    corpus_level=scorer.corpus_level, batch_label=fense_label(batch.label)
                                ),
                            ),
                        ),
                        np.nan,
                    )
                    for request in batch.requests
                ]
            )
            for batch in plan.batches
        ]
    connections.close_all()  # the next round replaces the database
    return values


def largest_delta(ours: dict[str, list[np.ndarray]], theirs: dict[str, list[np.ndarray]]) -> float:
    worst = 0.0
    for name in CLASSIC:
        for a, b in zip(ours[name], theirs[name], strict=True):
            worst = max(worst, float(np.max(np.abs(a - b))))  # NaN (a score missing) makes it NaN
            if np.isnan(worst):
                return worst
    return worst


def worker_log_breakdown(output: str, started_at: float) -> str:
    """Where a cold run's time went, from the temporary worker's JSON-lines log (path in the command output)."""
    import re
    from datetime import datetime

    match = re.search(r"log (\S+\.log)\)", output)
    if not match or not Path(match.group(1)).exists():
        return "(no temporary worker log)"
    events = []
    for line in Path(match.group(1)).read_text(errors="replace").splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            event["at"] = datetime.fromisoformat(event["time"]).timestamp() - started_at
            events.append(event)
    first = {}
    seconds: dict[str, float] = {}
    for event in events:
        first.setdefault(event["event"], event["at"])
        if event["event"] == "chunk_done":
            seconds[event["metric"]] = seconds.get(event["metric"], 0.0) + event["seconds"]
    first_meteor = next((e["at"] for e in events if e["event"] == "chunk_claimed" and e["metric"] == "METEOR"), None)
    parts = [
        f"worker warm-up (METEOR JVM launched) at {first.get('worker_warm_up', float('nan')):.1f} s",
        f"worker ready {first.get('worker_ready', float('nan')):.1f} s",
        f"first chunk {first.get('chunk_claimed', float('nan')):.1f} s",
        f"first METEOR chunk {first_meteor if first_meteor is not None else float('nan'):.1f} s",
        f"run finished {first.get('run_finished', float('nan')):.1f} s",
        "chunk seconds " + ", ".join(f"{metric} {value:.1f}" for metric, value in seconds.items()),
    ]
    return "; ".join(parts)


def bench_whole_commands(args, *, rounds: int, with_report: bool) -> None:
    import tempfile

    from bench_database import BenchDatabase

    database = BenchDatabase(
        workdir=Path(tempfile.mkdtemp(prefix="metrics-bench-")),
        clotho_path=Path(args.shared) / "datasets" / args.dataset,
        database_url=args.database_url,
    )
    database.prepare()
    database.fresh()
    django_on(database)
    try:
        if rounds:
            bench_end_to_end(database, rounds, warm_pool=args.warm_pool)
        if with_report:
            bench_full_report(database, args)
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()


def wait_until_listening(worker, timeout: float = 300) -> None:
    """Until the standing worker's heartbeat is in the database (else the command starts its own worker)."""
    from django.db import connections

    from metrics_bridge.services.runs.workers import live_workers
    from metrics_bridge.tasks.runs import current_broker

    deadline = time.monotonic() + timeout
    while not any(row.name == worker.name for row in live_workers(broker=current_broker())):
        assert worker.alive() and time.monotonic() < deadline, worker.log_tail()
        time.sleep(0.2)
    connections.close_all()


#: The standing worker of the warm figure: as ./scripts/run starts it (two threads: one waits on the METEOR JVM
#: while the other scores in Python; deep prefetch on the polled embedded broker), or one chunk at a time (solo).
WARM_WORKER_OPTIONS = {
    "threads": {"pool": "threads", "concurrency": 2, "prefetch_multiplier": 16},
    "solo": {},
}


def bench_end_to_end(database, rounds: int, *, warm_pool: str = "threads") -> None:
    from bench_database import load_average, timed_command

    from metrics_bridge.worker_process import WorkerProcess

    plan = protocol_plan_of_imported_rows()
    requests = sum(len(batch.requests) for batch in plan.batches)
    metrics = ",".join(CLASSIC)
    command = ["compute_metrics", "--dataset", "clotho-eval", "--metrics", metrics, "--wait"]
    print(f"end to end on {database.kind}: compute_metrics --wait of the classic suite on a fresh Clotho-Eval import")
    print(f"  (warm: a standing worker with the {warm_pool} pool, its METEOR JVM up)")
    batches = len(plan.batches)
    print(f"  (it scores the {requests} protocol requests of {batches} batches plus the all-references batch;")
    print("   pycocoevalcap scores the protocol requests only)")
    results = []
    for round_number in range(1, rounds + 1):
        database.fresh()
        load_before = load_average()
        started_at = time.time()
        cold_seconds, cold_output = timed_command(database, *command)
        assert "started a temporary worker" in cold_output, cold_output
        breakdown = worker_log_breakdown(cold_output, started_at)
        cold_values = stored_classic_values(plan)

        database.fresh()
        worker = WorkerProcess(
            name=f"bench-worker-{round_number}@localhost",
            log_path=database.workdir / f"worker-{round_number}.log",
            env=database.env(METRICS_WARM_UP="METEOR"),
            **WARM_WORKER_OPTIONS[warm_pool],
        ).start()
        try:
            wait_until_listening(worker)
            warm_up = ["compute_metrics", "--dataset", "warm-up", "--metrics", metrics, "--wait"]
            _, warm_up_output = timed_command(database, *warm_up)
            assert "worker(s) listening" in warm_up_output, warm_up_output
            warm_seconds, warm_output = timed_command(database, *command)
            assert "worker(s) listening" in warm_output, warm_output
        finally:
            worker.stop()
        warm_values = stored_classic_values(plan)

        theirs_started = time.perf_counter()
        theirs, _ = pycocoevalcap_classic(plan)
        theirs_seconds = time.perf_counter() - theirs_started
        delta = max(largest_delta(cold_values, theirs), largest_delta(warm_values, theirs))
        load = (load_before + load_average()) / 2
        results.append((cold_seconds, warm_seconds, theirs_seconds, load))
        print(
            f"  round {round_number}: cold {cold_seconds:5.1f} s   warm worker {warm_seconds:5.1f} s   "
            f"pycocoevalcap {theirs_seconds:5.1f} s   -> cold {theirs_seconds / cold_seconds:4.1f} x, "
            f"warm {theirs_seconds / warm_seconds:4.1f} x   max |delta| {delta:.1e}   load {load:.1f}"
        )
        print(f"    cold run: {breakdown}")
        assert delta == 0.0, f"stored values differ from pycocoevalcap's (max |delta| {delta})"
    cold_ratio = float(np.median([theirs / cold for cold, _, theirs, _ in results]))
    warm_ratio = float(np.median([theirs / warm for _, warm, theirs, _ in results]))
    medians = [float(np.median([result[k] for result in results])) for k in range(4)]
    print(
        f"  median of {len(results)} rounds: cold {medians[0]:.1f} s, warm {medians[1]:.1f} s, pycocoevalcap "
        f"{medians[2]:.1f} s; ratio cold {cold_ratio:.1f} x (target >= 3), warm {warm_ratio:.1f} x (target >= 5); "
        f"load average {medians[3]:.1f} on {os.cpu_count()} cores"
    )
    print("  every stored value equals pycocoevalcap's (max |delta| = 0, asserted)")


REPORT_METRICS = [*CLASSIC, "SBERT", "DATE", "XACE"]


def bench_full_report(database, args) -> None:
    from bench_database import load_average, timed_command

    reference = json.loads((Path(args.shared) / "checks" / "clotho_reference.json").read_text())["accuracy"]
    database.fresh()
    load_before = load_average()
    report_command = ["agreement_report", "--dataset", "clotho-eval", "--format", "json"]
    seconds, output = timed_command(database, *report_command, "--metrics", ",".join(REPORT_METRICS))
    load = (load_before + load_average()) / 2
    report = json.loads(output[output.index('{"dataset"') :].splitlines()[0])
    worst = max(
        abs(report["metrics"][name][split] - reference[name][split])
        for name in reference
        for split in ["HC", "HI", "HM", "MM", "total"]
    )
    print(
        f"full agreement report ({', '.join(REPORT_METRICS)}) from a fresh import, whole command: {seconds:.1f} s "
        f"(target <= 60 s on 2 cores)   load {load:.1f} on {os.cpu_count()} cores"
    )
    print(
        "  total accuracy: "
        + ", ".join(f"{name} {row['total']:.1f}" for name, row in report["metrics"].items() if name in REPORT_METRICS)
        + f"   max |delta| vs the reference table {worst:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    parser.add_argument("--dataset", default="clotho_eval.json")
    parser.add_argument("--skip-classic", action="store_true")
    parser.add_argument("--skip-sbert", action="store_true")
    parser.add_argument("--sbert-sample", type=int, default=0, help="SBERT on every n-th request only (0: all)")
    parser.add_argument("--skip-end-to-end", action="store_true")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="end-to-end rounds (medians are reported)")
    parser.add_argument("--warm-pool", choices=sorted(WARM_WORKER_OPTIONS), default="threads",
                        help="pool of the standing worker of the warm figure (threads: as ./scripts/run starts it)")
    parser.add_argument("--database-url", help="PostgreSQL server for the end-to-end databases (default: SQLite)")
    args = parser.parse_args()
    clips = clips_from_fense_items(json.loads((Path(args.shared) / "datasets" / args.dataset).read_text()))
    if not (args.skip_end_to_end and args.skip_report):
        bench_whole_commands(args, rounds=0 if args.skip_end_to_end else args.rounds, with_report=not args.skip_report)
    if not args.skip_classic:
        bench_classic(clips)
    if not args.skip_sbert:
        bench_sbert(clips, args.sbert_sample)


if __name__ == "__main__":
    main()
