"""Metric runs: plan the work, split it into chunks, hand the chunks to the workers, follow progress.

Every step is safe to repeat: chunks are claimed and finished under a lease
(metrics_bridge/services/runs/chunks.py), scores are upserted on (metric, version, caption,
reference set), and progress is recounted from chunk rows rather than incremented. This
module never imports Celery: callers pass `enqueue`, the function that sends task messages.
"""

import itertools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from common.structured_log import log_event
from corpus.models import Dataset
from metrics_bridge.agreement.protocol import scorer_batching
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import scorer_version, uses_gold_annotations
from metrics_bridge.services.runs.contexts import scoring_context_for
from metrics_bridge.services.runs.plans import (
    PlannedBatch,
    chunk_requests_for,
    dataset_scoring_plan,
    gold_fingerprints_by_caption,
)
from metrics_bridge.services.runs.reference_sets import reference_sets_ensure

logger = logging.getLogger("captioneval.metric_runs")

#: Sends task messages for chunk ids (metrics_bridge.tasks.runs.enqueue_chunks in the app, a fake in tests).
Enqueue = Callable[[list[int]], None]

#: Requests per chunk for metrics whose scores don't depend on the rest of the batch (None: METRICS_CHUNK_SIZE).
CHUNK_SIZE = None


class MetricsMissingError(ValueError):
    """Requested metrics a report or run could not deliver: `missing` maps each name to why. A command that
    meets it exits non-zero naming them all, and prints no report that would quietly lack them."""

    def __init__(self, missing: dict[str, str]):
        self.missing = dict(missing)
        reasons = "; ".join(f"{name}: {reason}" for name, reason in self.missing.items())
        super().__init__(f"could not compute {len(self.missing)} requested metric(s): {reasons}")


def metrics_missing_check(*, requested: Iterable[str], delivered: Iterable[str], reasons: dict[str, str]) -> None:
    """Raise MetricsMissingError for every requested name not among `delivered` (with its reason, when one is known)."""
    delivered = set(delivered)
    missing = {name: reasons.get(name, "no score was computed for it") for name in requested if name not in delivered}
    if missing:
        raise MetricsMissingError(missing)


def metrics_not_computed(run: MetricRun) -> dict[str, str]:
    """The run's metrics left without scores because it did not end cleanly, each with why (empty when DONE).

    A metric counts as not computed when one of its scorer's chunks did not finish; a run that ended some
    other way (failed while planning, cancelled before any chunk) leaves all its metrics not computed."""
    if run.status == MetricRun.Status.DONE:
        return {}
    why = f"metric run {run.pk} ended {run.get_status_display().lower()}" + (f": {run.error}" if run.error else "")
    unfinished = set(run.chunks.exclude(status=MetricRunChunk.Status.DONE).values_list("metric", flat=True))
    names = [name for name in run.metrics if not unfinished or scorer_key(registry.scorer_for(name)) in unfinished]
    return {name: why for name in names}


def requested_scorers_for(metric_names: Iterable[str] | None, context) -> tuple[list, dict[str, str]]:
    """Scorers to run for the requested names (default: every available metric) and the unavailable names."""
    unavailable_all = registry.unavailable_metrics(context)
    if metric_names is None:
        wanted = [name for name in registry.all_metric_names() if name not in unavailable_all]
    else:
        unknown = [name for name in metric_names if name not in registry.all_metric_names()]
        if unknown:
            known = ", ".join(registry.all_metric_names())
            raise ValueError(f"unknown metric(s): {', '.join(unknown)} (known: {known})")
        wanted = list(metric_names)
    unavailable = {name: unavailable_all[name] for name in wanted if name in unavailable_all}
    scorers = []
    for name in wanted:
        if name in unavailable:
            continue
        scorer = registry.scorer_for(name)
        if scorer not in scorers:
            scorers.append(scorer)
    return scorers, unavailable


def scorer_key(scorer) -> str:
    return scorer.metric_names[0]


def _missing_requests(scorer, version: str, requests: list[dict]) -> list[dict]:
    """Requests lacking a score for any of the scorer's metric names at this version."""
    keys = {request["reference_set_key"] for request in requests}
    have = MetricScore.objects.filter(
        metric__in=scorer.metric_names, version=version, reference_set__key__in=keys
    ).values_list("caption_id", "reference_set__key")
    done: dict[tuple[int, str], int] = {}
    for identity in have:
        done[identity] = done.get(identity, 0) + 1
    complete = len(scorer.metric_names)
    missing, seen = [], set()
    for request in requests:
        identity = (request["caption_id"], request["reference_set_key"])
        if done.get(identity, 0) < complete and identity not in seen:
            seen.add(identity)
            missing.append(request)
    return missing


def chunks_for(scorer, version: str, requests: list[dict]) -> list[list[dict]]:
    missing = _missing_requests(scorer, version, requests)
    if not missing:
        return []
    if scorer.corpus_level:
        # Document frequencies / ranks depend on the whole batch: score it whole, even if only part is missing.
        return [requests]
    # A caption's requests side by side (its leave-one-out reference lists, its all-references request) land
    # in the same chunk, where a scorer shares work between them (METEOR scores each distinct reference once).
    missing.sort(key=lambda request: request["caption_id"])
    size = (CHUNK_SIZE or settings.METRICS_CHUNK_SIZE) * getattr(scorer, "chunk_size_factor", 1)
    return [missing[start : start + size] for start in range(0, len(missing), size)]


def _sending_order(chunks: list[MetricRunChunk], slow: set[str], *, slow_last: bool) -> list[MetricRunChunk]:
    """Chunks in sending order, around the scorers that have a slow resource (METEOR's JVM, a model).

    A chunk of such a scorer holds its worker thread while the resource works (METEOR's JVM is a process of
    its own) or loads (5-7 s when a worker starts it for a run). The other scorers' chunks go largest first
    (a corpus-level CIDEr-D batch outweighs several 500-request chunks), and around them the slow chunks:
    - `slow_last` (a worker started for this run, its resources still loading: the temporary worker of
      `compute_metrics --wait`): after all the others, which are scored while the resource loads;
    - otherwise (a standing worker, whose resources are up): spread evenly over the others' requests from
      the start, so that a worker scoring two chunks at a time keeps one thread on the slow resource and
      the other on Python work, and both cores work. A worker scoring one chunk at a time scores the same
      chunks in the same total time.
    """
    fast = sorted((chunk for chunk in chunks if chunk.metric not in slow), key=lambda c: -len(c.requests))
    # The slow scorers take turns (METEOR's JVM and the Sentence-BERT model work side by side).
    by_scorer = [[chunk for chunk in chunks if chunk.metric == metric] for metric in sorted(slow)]
    slow_chunks = [chunk for turn in itertools.zip_longest(*by_scorer) for chunk in turn if chunk is not None]
    if slow_last or not slow_chunks:
        ordered = fast + slow_chunks
    else:
        # The k-th slow chunk goes where k/n of the others' requests (their cost, roughly) have been sent.
        share = sum(len(chunk.requests) for chunk in fast) / len(slow_chunks)
        ordered, sent, waiting = [], 0, list(slow_chunks)
        for chunk in fast:
            while waiting and sent >= share * (len(slow_chunks) - len(waiting)):
                ordered.append(waiting.pop(0))
            ordered.append(chunk)
            sent += len(chunk.requests)
        ordered += waiting
    return ordered


@dataclass
class RunPlan:
    """A planned run before it is saved: the run row, its scorers and the chunks planned so far (unsaved).

    Planners of other levels (system scores, THumBS campaign corpora:
    metrics_bridge/services/evaluation/dataset_runs.py)
    add their chunks and reference sets to it before `metric_run_plan_save`.
    """

    run: MetricRun
    scorers: list
    context: object  # the ScoringContext the versions are computed with
    chunks: list[MetricRunChunk] = field(default_factory=list)
    reference_sets: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)


def metric_run_plan(
    *, dataset: Dataset, metric_names: list[str] | None = None, requested_by=None, protocol_only: bool = False
) -> RunPlan:
    """Plan the caption scores of a run: one chunk per (scorer, slice of a batch) still missing scores.

    `protocol_only`: only the FENSE protocol batches of the judged pairs, which is all an agreement report
    reads (not the all-references batch of leaderboards and THumBS correlations: for a corpus-level metric
    like DATE, a second corpus as large as the first).
    """
    context = scoring_context_for(clip_ids=None, dataset=dataset)
    scorers, unavailable = requested_scorers_for(metric_names, context)
    run = MetricRun(
        dataset=dataset,
        metrics=[name for scorer in scorers for name in scorer.metric_names],
        unavailable=unavailable,
        requested_by=requested_by,
    )
    plan = RunPlan(run=run, scorers=scorers, context=context)
    plans: dict[tuple[str, str], list[PlannedBatch]] = {}
    gold_fingerprints = None
    for scorer in scorers:
        layout = (scorer.protocol_kind, scorer_batching(scorer))
        if layout not in plans:
            plans[layout] = dataset_scoring_plan(
                dataset=dataset, protocol_kind=layout[0], batching=layout[1], all_references=not protocol_only
            )
        if uses_gold_annotations(scorer) and gold_fingerprints is None:
            gold_fingerprints = gold_fingerprints_by_caption(dataset=dataset)
        planned: list[dict] = []
        for batch in plans[layout]:
            requests, batch_reference_sets = chunk_requests_for(
                batch=batch, scorer=scorer, gold_fingerprints=gold_fingerprints
            )
            plan.reference_sets.update(batch_reference_sets)
            if scorer.corpus_level:
                chunk_lists = chunks_for(scorer, scorer_version(scorer, context), requests)
            else:
                planned.extend(requests)
                chunk_lists = []
            plan.chunks += [scorer_chunk(scorer, chunk_requests) for chunk_requests in chunk_lists]
        # Batch boundaries don't matter for the other scorers: pool their requests, each scored once.
        for chunk_requests in chunks_for(scorer, scorer_version(scorer, context), planned) if planned else []:
            plan.chunks.append(scorer_chunk(scorer, chunk_requests))
    return plan


def scorer_chunk(scorer, requests: list[dict]) -> MetricRunChunk:
    """An unsaved chunk of `scorer` (its run and index are set when the plan is saved)."""
    return MetricRunChunk(index=0, metric=scorer_key(scorer), requests=requests)


def metric_run_plan_save(
    plan: RunPlan, *, slow_resources_loading: bool = False, last: list[MetricRunChunk] = ()
) -> MetricRun:
    """Save the planned run, its chunks in sending order (see _sending_order), then `last` (chunks that
    read what the others store, e.g. system scores reading caption scores)."""
    slow = {scorer_key(scorer) for scorer in plan.scorers if registry.starts_slowly(scorer)}
    ordered = _sending_order(plan.chunks, slow, slow_last=slow_resources_loading) + list(last)
    for index, chunk in enumerate(ordered):
        chunk.index = index
    return metric_run_chunks_save(run=plan.run, chunks=ordered, reference_sets=plan.reference_sets)


def metric_run_create(
    *,
    dataset: Dataset,
    metric_names: list[str] | None = None,
    requested_by=None,
    slow_resources_loading: bool = False,
    protocol_only: bool = False,
) -> MetricRun:
    """Plan and save a run of caption scores (see metric_run_plan). Nothing is queued yet.

    A run started from a page, the API, `compute_metrics` or the demo plans more than this: system scores
    and THumBS corpora too (metrics_bridge/services/evaluation/dataset_runs.py). `slow_resources_loading`: the run goes
    to a worker started for it, whose slow resources are still loading (see _sending_order).

    The planning (loading scorers, reading the dataset) happens before the write transaction: on SQLite
    a transaction holds the only write lock, and workers must go on renewing leases meanwhile.
    """
    plan = metric_run_plan(
        dataset=dataset, metric_names=metric_names, requested_by=requested_by, protocol_only=protocol_only
    )
    return metric_run_plan_save(plan, slow_resources_loading=slow_resources_loading)


def metric_run_chunks_save(
    *, run: MetricRun, chunks: list[MetricRunChunk], reference_sets: dict | None = None
) -> MetricRun:
    """Save a planned run with its chunks (and the reference sets they name) in one transaction; a run
    without chunks is done at once."""
    run.chunks_total = len(chunks)
    if not chunks:
        run.status = MetricRun.Status.DONE
        run.finished_at = timezone.now()
    with transaction.atomic():
        run.save()
        for chunk in chunks:
            chunk.run = run
        if reference_sets:
            reference_sets_ensure(entries=reference_sets)
        MetricRunChunk.objects.bulk_create(chunks, batch_size=200)
    return run


def metric_run_dispatch(*, run: MetricRun, enqueue: Enqueue) -> int:
    """Send the run's pending chunks to the workers once the transaction commits; returns how many.

    `enqueue(chunk_ids)` sends one task message per chunk (metrics_bridge.tasks.runs.enqueue_chunks):
    services never import Celery.
    """
    chunk_ids = list(run.chunks.filter(status=MetricRunChunk.Status.PENDING).values_list("pk", flat=True))
    if chunk_ids:
        chunks_mark_dispatched(chunk_ids=chunk_ids)
        transaction.on_commit(lambda: enqueue(chunk_ids))
    return len(chunk_ids)


def chunks_mark_dispatched(*, chunk_ids: list[int]) -> None:
    MetricRunChunk.objects.filter(pk__in=chunk_ids).update(dispatched_at=timezone.now())


def metric_run_cancel(*, run: MetricRun) -> MetricRun:
    """Stop a run: pending chunks are cancelled; a chunk being scored finishes but its run stays cancelled."""
    with transaction.atomic():
        updated = MetricRun.objects.filter(pk=run.pk, status__in=MetricRun.ACTIVE_STATUSES).update(
            status=MetricRun.Status.CANCELLED, finished_at=timezone.now()
        )
        if updated:
            run.chunks.filter(status=MetricRunChunk.Status.PENDING).update(status=MetricRunChunk.Status.CANCELLED)
    if updated:
        log_event(logger, "run_cancelled", run=run.pk)
    run.refresh_from_db()
    return run


def metric_run_refresh_progress(*, run_id: int) -> None:
    """Recount the run's chunks; once none is left to score, the run ends (done, done with errors, or failed)."""
    with transaction.atomic():
        # Lock the run row first: two workers finishing the last two chunks at once would otherwise each
        # count the other's chunk as still running, and the run would never end.
        list(MetricRun.objects.select_for_update().filter(pk=run_id).values_list("pk"))
        _metric_run_recount(run_id=run_id)


def _metric_run_recount(*, run_id: int) -> None:
    chunk_status = MetricRunChunk.Status
    counts = MetricRunChunk.objects.filter(run_id=run_id).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=chunk_status.DONE)),
        failed=Count("pk", filter=Q(status=chunk_status.FAILED)),
        open=Count("pk", filter=Q(status__in=[chunk_status.PENDING, chunk_status.RUNNING])),
    )
    MetricRun.objects.filter(pk=run_id).update(
        chunks_done=counts["done"], chunks_failed=counts["failed"], chunks_total=counts["total"]
    )
    if counts["open"]:
        return
    if not counts["failed"]:
        final, error = MetricRun.Status.DONE, ""
    else:
        final = MetricRun.Status.DONE_WITH_ERRORS if counts["done"] else MetricRun.Status.FAILED
        error = failed_chunks_summary(run_id=run_id)
    ended = MetricRun.objects.filter(pk=run_id, status__in=MetricRun.ACTIVE_STATUSES).update(
        status=final, error=error, finished_at=timezone.now()
    )
    if ended:
        log_event(
            logger,
            "run_finished",
            level=logging.WARNING if counts["failed"] else logging.INFO,
            run=run_id,
            status=final,
            chunks_done=counts["done"],
            chunks_failed=counts["failed"],
            chunks_total=counts["total"],
        )


def failed_chunks_summary(*, run_id: int, limit: int = 10) -> str:
    """Which chunks failed, of which metric, and why (first line of each error)."""
    failed = MetricRunChunk.objects.filter(run_id=run_id, status=MetricRunChunk.Status.FAILED).order_by("index")
    lines = [
        f"{chunk.metric} chunk {chunk.index} ({chunk.attempts} attempt(s)): {error_headline(chunk.error)}"
        for chunk in failed[:limit]
    ]
    total = failed.count()
    if total > limit:
        lines.append(f"... and {total - limit} more failed chunk(s)")
    return f"{total} chunk(s) failed: " + "; ".join(lines)


def error_headline(error: str) -> str:
    """The line of a stored error that says what went wrong (a traceback's last line)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no error recorded"


def metric_run_execute(
    *,
    run: MetricRun,
    enqueue: Enqueue,
    on_progress=None,
    watchdog=None,
    timeout_seconds: float = 6 * 3600,
    poll_seconds: float = 0.2,
) -> MetricRun:
    """Send the run's pending chunks to the workers and wait for the run to end, calling on_progress(run).

    The same path as a run started on the /metrics/ page: somebody else (a worker) scores the
    chunks; this only watches the run row. (With eager Celery, in tests, each send scores the chunk
    on the spot, so progress is reported chunk by chunk.)
    """
    last_seen = None

    def report() -> None:
        nonlocal last_seen
        run.refresh_from_db()
        if on_progress and (run.chunks_done, run.chunks_failed) != last_seen:
            last_seen = (run.chunks_done, run.chunks_failed)
            on_progress(run)

    chunk_ids = list(run.chunks.filter(status=MetricRunChunk.Status.PENDING).values_list("pk", flat=True))
    chunks_mark_dispatched(chunk_ids=chunk_ids)
    for chunk_id in chunk_ids:
        enqueue([chunk_id])
        report()
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        report()
        if run.is_finished:
            return run
        if watchdog:
            watchdog()
        time.sleep(poll_seconds)
    raise TimeoutError(
        f"metric run {run.pk} not finished after {timeout_seconds:.0f} s ({run.chunks_done}/{run.chunks_total} chunks)"
    )
