"""Scoring one chunk of a metric run: its requests through its scorer, giving the rows to store.

Caption chunks are scored here; a leaderboard run's chunks (system-level) by
metrics_bridge/services/runs/system_scores.py.
This module sits above both runs.py and system_scores.py (which builds on runs.py), so neither imports the
other back. The chunk service (chunks.py) stores what it returns under the chunk's lease.
"""

import threading

from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore, ReferenceSet, SystemScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import gold_annotation_fingerprint, scorer_version, uses_gold_annotations
from metrics_bridge.selectors.scoring_inputs import dataset_texts
from metrics_bridge.services.runs.contexts import scoring_context_for
from metrics_bridge.services.runs.plans import context_with_gold, scoring_requests_for
from metrics_bridge.services.runs.reference_sets import reference_set_key, reference_sets_ensure
from metrics_bridge.services.runs.score_storage import ScoreRow
from metrics_bridge.services.runs.system_scores import is_system_chunk, system_chunk_score


def chunk_score(*, chunk: MetricRunChunk) -> list[ScoreRow | MetricScore | SystemScore]:
    """Run the chunk's scorer over its requests; returns the rows to store: ScoreRow tuples (see
    score_storage), or for a leaderboard run's chunk unsaved SystemScore and MetricScore rows (see
    metrics_bridge/services/runs/system_scores.py)."""
    if is_system_chunk(chunk):
        return system_chunk_score(chunk=chunk)

    scorer = registry.scorer_for(chunk.metric)
    requests, reference_set_ids = scoring_requests_for(chunk_requests=chunk.requests)
    # Scorers that read nothing of a clip but its requests' texts (the classic suite) skip loading the
    # gold annotations and every clip's references for each chunk.
    uses_clip_data = getattr(scorer, "uses_clip_data", True)
    clip_ids = {int(request.clip_key) for request in requests if request.clip_key} if uses_clip_data else None
    corpus_texts = _run_corpus_texts(chunk.run) if "corpus_texts" in scorer.needs else ()
    context = scoring_context_for(
        clip_ids=clip_ids, dataset=chunk.run.dataset, corpus_texts=corpus_texts, with_audio="audio" in scorer.needs
    )
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
                ScoreRow(
                    metric=name,
                    version=version,
                    caption_id=request.candidate_id,
                    reference_set_id=reference_set_ids[planned["reference_set_key"]],
                    value=None if result.value is None else float(result.value),
                    details=result.details or {},
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


_corpus_texts_of_run: dict[int, tuple[str, ...]] = {}
_corpus_texts_lock = threading.Lock()


def _run_corpus_texts(run: MetricRun) -> tuple[str, ...]:
    """Every text of the run's dataset, read once per run by this process (the PTB tokenizer's prefetch)."""
    with _corpus_texts_lock:  # a thread-pool worker scores two chunks at a time
        texts = _corpus_texts_of_run.get(run.pk)
        if texts is None:
            texts = dataset_texts(dataset=run.dataset)
            _corpus_texts_of_run.clear()  # one run at a time is enough: a worker scores a run's chunks in a row
            _corpus_texts_of_run[run.pk] = texts
    return texts
