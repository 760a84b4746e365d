"""Metric runs: plan the work, split it into chunks, let Celery tasks score the chunks.

Every step is safe to repeat: chunks are claimed with a conditional update, scores are
upserted on (metric, version, caption, reference set), and progress is recounted from
chunk rows rather than incremented.
"""
import logging
import traceback
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Dataset
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import gold_annotation_fingerprint, uses_gold_annotations
from metrics_bridge.services.contexts import scoring_context_for
from metrics_bridge.services.plans import (
    PlannedBatch,
    chunk_requests_for,
    context_with_gold,
    dataset_scoring_plan,
    gold_fingerprints_by_caption,
)
from metrics_bridge.services.reference_sets import reference_set_key, reference_sets_ensure

logger = logging.getLogger(__name__)

#: Requests per chunk for metrics whose scores don't depend on the rest of the batch.
CHUNK_SIZE = 500


def _chunk_delay_seconds() -> float:
    from django.conf import settings

    return settings.METRICS_CHUNK_DELAY_SECONDS


def _requested_scorers(metric_names: Iterable[str] | None, context) -> tuple[list, dict[str, str]]:
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


def scorer_version(scorer, context) -> str:
    """The version scores are stored under; LLM judges add their model (scores of two models must not mix)."""
    version_for = getattr(scorer, "version_for", None)
    return version_for(context) if version_for else scorer.version


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


def _chunks_for(scorer, version: str, requests: list[dict]) -> list[list[dict]]:
    missing = _missing_requests(scorer, version, requests)
    if not missing:
        return []
    if scorer.corpus_level:
        # Document frequencies / ranks depend on the whole batch: score it whole, even if only part is missing.
        return [requests]
    return [missing[start : start + CHUNK_SIZE] for start in range(0, len(missing), CHUNK_SIZE)]


@transaction.atomic
def metric_run_create(*, dataset: Dataset, metric_names: list[str] | None = None, requested_by=None) -> MetricRun:
    """Plan a run: one chunk per (scorer, slice of a batch) still missing scores. Nothing is queued yet."""
    context = scoring_context_for(clip_ids=None)
    scorers, unavailable = _requested_scorers(metric_names, context)
    run = MetricRun.objects.create(
        dataset=dataset,
        metrics=[name for scorer in scorers for name in scorer.metric_names],
        unavailable=unavailable,
        requested_by=requested_by,
    )
    chunks = []
    reference_sets: dict[str, tuple[tuple[str, ...], str]] = {}
    plans: dict[str, list[PlannedBatch]] = {}
    gold_fingerprints = None
    for scorer in scorers:
        if scorer.protocol_kind not in plans:
            plans[scorer.protocol_kind] = dataset_scoring_plan(dataset=dataset, protocol_kind=scorer.protocol_kind)
        if uses_gold_annotations(scorer) and gold_fingerprints is None:
            gold_fingerprints = gold_fingerprints_by_caption(dataset=dataset)
        planned: list[dict] = []
        for batch in plans[scorer.protocol_kind]:
            requests, batch_reference_sets = chunk_requests_for(
                batch=batch, scorer=scorer, gold_fingerprints=gold_fingerprints
            )
            reference_sets.update(batch_reference_sets)
            if scorer.corpus_level:
                chunk_lists = _chunks_for(scorer, scorer_version(scorer, context), requests)
            else:
                planned.extend(requests)
                chunk_lists = []
            for chunk_requests in chunk_lists:
                chunks.append(MetricRunChunk(run=run, index=len(chunks), metric=scorer_key(scorer), requests=chunk_requests))
        # Batch boundaries don't matter for the other scorers: pool their requests, each scored once.
        for chunk_requests in _chunks_for(scorer, scorer_version(scorer, context), planned) if planned else []:
            chunks.append(MetricRunChunk(run=run, index=len(chunks), metric=scorer_key(scorer), requests=chunk_requests))
    reference_sets_ensure(entries=reference_sets)
    MetricRunChunk.objects.bulk_create(chunks, batch_size=200)
    run.chunks_total = len(chunks)
    if not chunks:
        run.status = MetricRun.Status.DONE
        run.finished_at = timezone.now()
    run.save()
    return run


def metric_run_dispatch(*, run: MetricRun) -> None:
    """Queue one Celery task per pending chunk, as a group, once the run is committed."""
    from celery import group

    from metrics_bridge.tasks import score_chunk

    chunk_ids = list(run.chunks.filter(status=MetricRunChunk.Status.PENDING).values_list("pk", flat=True))
    if chunk_ids:
        transaction.on_commit(lambda: group(score_chunk.s(chunk_id) for chunk_id in chunk_ids).apply_async())


def metric_run_start(*, dataset: Dataset, metric_names: list[str] | None = None, requested_by=None) -> MetricRun:
    run = metric_run_create(dataset=dataset, metric_names=metric_names, requested_by=requested_by)
    metric_run_dispatch(run=run)
    return run


def metric_run_cancel(*, run: MetricRun) -> MetricRun:
    """Stop a run: pending chunks are cancelled; a chunk being scored finishes but its run stays cancelled."""
    with transaction.atomic():
        updated = MetricRun.objects.filter(pk=run.pk, status__in=[MetricRun.Status.PENDING, MetricRun.Status.RUNNING]).update(
            status=MetricRun.Status.CANCELLED, finished_at=timezone.now()
        )
        if updated:
            run.chunks.filter(status=MetricRunChunk.Status.PENDING).update(status=MetricRunChunk.Status.CANCELLED)
    run.refresh_from_db()
    return run


def _claim_chunk(chunk_id: int) -> MetricRunChunk | None:
    """Claim a chunk for scoring; a chunk left RUNNING by a killed worker may be claimed again."""
    claimable = Q(status__in=[MetricRunChunk.Status.PENDING, MetricRunChunk.Status.RUNNING]) & ~Q(
        run__status__in=[MetricRun.Status.CANCELLED, MetricRun.Status.FAILED]
    )
    chunk = MetricRunChunk.objects.filter(pk=chunk_id).filter(claimable).select_related("run").first()
    if chunk is None:
        return None
    MetricRunChunk.objects.filter(pk=chunk.pk).update(status=MetricRunChunk.Status.RUNNING, attempts=chunk.attempts + 1)
    MetricRun.objects.filter(pk=chunk.run_id, status=MetricRun.Status.PENDING).update(status=MetricRun.Status.RUNNING)
    return chunk


def chunk_process(*, chunk_id: int) -> str:
    """Score one chunk and store its scores; returns the chunk's final status."""
    chunk = _claim_chunk(chunk_id)
    if chunk is None:
        return "skipped"
    if _chunk_delay_seconds():
        import time

        time.sleep(_chunk_delay_seconds())
    try:
        scores = chunk_score(chunk=chunk)
        with transaction.atomic():
            MetricScore.objects.bulk_create(
                scores,
                update_conflicts=True,
                unique_fields=["metric", "version", "caption", "reference_set"],
                update_fields=["value", "details", "run"],
                batch_size=500,
            )
            MetricRunChunk.objects.filter(pk=chunk.pk).update(status=MetricRunChunk.Status.DONE, error="")
            metric_run_refresh_progress(run_id=chunk.run_id)
        return MetricRunChunk.Status.DONE
    except Exception as error:  # recorded on the chunk and the run, then re-raised for Celery's log
        message = f"{chunk.metric} chunk {chunk.index}: {type(error).__name__}: {error}"
        logger.exception(message)
        with transaction.atomic():
            MetricRunChunk.objects.filter(pk=chunk.pk).update(status=MetricRunChunk.Status.FAILED, error=traceback.format_exc()[-4000:])
            MetricRun.objects.filter(pk=chunk.run_id).exclude(status=MetricRun.Status.CANCELLED).update(
                status=MetricRun.Status.FAILED, error=message, finished_at=timezone.now()
            )
        raise


def chunk_score(*, chunk: MetricRunChunk) -> list[MetricScore]:
    """Run the chunk's scorer over its requests; returns unsaved MetricScore rows."""
    from metrics_bridge.services.plans import scoring_requests_for

    scorer = registry.scorer_for(chunk.metric)
    requests, reference_set_ids = scoring_requests_for(chunk_requests=chunk.requests)
    clip_ids = {int(request.clip_key) for request in requests if request.clip_key}
    context = scoring_context_for(clip_ids=clip_ids)
    results = scorer.score_batch(requests, context)
    version = scorer_version(scorer, context)
    if uses_gold_annotations(scorer):
        reference_set_ids = _reference_sets_for_scored_gold(chunk.requests, requests, context, reference_set_ids)
    rows = []
    for name in scorer.metric_names:
        seen: set[tuple[int, str]] = set()
        for request, planned, result in zip(requests, chunk.requests, results[name], strict=True):
            # A batch may hold the same request twice (a caption in two pairs); store it once.
            identity = (request.candidate_id, planned["reference_set_key"])
            if identity in seen:
                continue
            seen.add(identity)
            rows.append(
                MetricScore(
                    metric=name,
                    version=version,
                    caption_id=request.candidate_id,
                    reference_set_id=reference_set_ids[planned["reference_set_key"]],
                    value=float(result.value),
                    details=result.details or {},
                    run_id=chunk.run_id,
                )
            )
    return rows


def _reference_sets_for_scored_gold(
    planned_requests, requests, context, reference_set_ids: dict[str, int]
) -> dict[str, int]:
    """Store each score under the gold annotation it was computed with: if a clip's gold annotation changed
    between planning and scoring, re-key its requests to a reference set naming the new fingerprint (so the
    next run plans that set, finds the score, and does not recompute it, while the stale identity stays unscored).
    Mutates the planned requests' keys in place (they are this chunk's in-memory copy)."""
    from metrics_bridge.models import ReferenceSet

    planned_sets = {
        key: (texts, stored_context)
        for key, texts, stored_context in ReferenceSet.objects.filter(
            key__in={r["reference_set_key"] for r in planned_requests}
        ).values_list("key", "texts", "context")
    }
    rekeyed: dict[str, tuple[tuple[str, ...], str]] = {}
    for planned, request in zip(planned_requests, requests, strict=True):
        texts, planned_context = planned_sets[planned["reference_set_key"]]
        used_gold = gold_annotation_fingerprint(context.expert_annotations.get(request.clip_key))
        actual = context_with_gold(planned_context, used_gold)
        if actual != planned_context:
            key = reference_set_key(texts=tuple(texts), context=actual)
            rekeyed[key] = (tuple(texts), actual)
            planned["reference_set_key"] = key
    if not rekeyed:
        return reference_set_ids
    reference_sets_ensure(entries=rekeyed)
    ids = dict(reference_set_ids)
    ids.update(ReferenceSet.objects.filter(key__in=list(rekeyed)).values_list("key", "pk"))
    return ids


def metric_run_refresh_progress(*, run_id: int) -> None:
    """Recount finished chunks; the run is done when every chunk is."""
    counts = MetricRunChunk.objects.filter(run_id=run_id).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(status=MetricRunChunk.Status.DONE))
    )
    MetricRun.objects.filter(pk=run_id).update(chunks_done=counts["done"], chunks_total=counts["total"])
    if counts["done"] == counts["total"]:
        MetricRun.objects.filter(pk=run_id, status__in=[MetricRun.Status.PENDING, MetricRun.Status.RUNNING]).update(
            status=MetricRun.Status.DONE, finished_at=timezone.now()
        )


def metric_run_execute(*, run: MetricRun, on_progress=None, timeout_seconds: float = 6 * 3600) -> MetricRun:
    """Get the run's chunks scored and wait for them, calling on_progress(run) as chunks finish.

    With a broker the chunks go to the workers as a task group and this polls the run;
    without one (eager Celery) they are scored here one by one, so progress still shows.
    """
    import time

    from metrics_bridge.tasks import score_chunk

    if score_chunk.app.conf.task_always_eager:
        for chunk_id in run.chunks.filter(status=MetricRunChunk.Status.PENDING).values_list("pk", flat=True):
            run.refresh_from_db()
            if run.status in (MetricRun.Status.CANCELLED, MetricRun.Status.FAILED):
                break
            score_chunk.apply(args=[chunk_id], throw=True)
            if on_progress:
                run.refresh_from_db()
                on_progress(run)
        run.refresh_from_db()
        return run

    metric_run_dispatch(run=run)
    deadline = time.monotonic() + timeout_seconds
    last_done = -1
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if on_progress and run.chunks_done != last_done:
            last_done = run.chunks_done
            on_progress(run)
        if run.status in (MetricRun.Status.DONE, MetricRun.Status.FAILED, MetricRun.Status.CANCELLED):
            return run
        time.sleep(0.5)
    raise TimeoutError(f"metric run {run.pk} not finished after {timeout_seconds:.0f} s ({run.chunks_done}/{run.chunks_total} chunks)")
