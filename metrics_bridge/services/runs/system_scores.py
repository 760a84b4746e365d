"""System-level scores: plan them as chunks of a MetricRun, score a chunk, read the current values.

A system's inputs are its current captions in the dataset (superseded ones left out), each distinct
(clip, text) once, with all of its clip's references. Their fingerprint names a SystemScore row, so
only scores of exactly the current inputs are read back (`current_system_scores`).

Chunks of a leaderboard run carry `{"system_level": true, "dataset_id": ..., "system_id": ...}` per
system instead of caption requests; `chunk_scoring.chunk_score` hands them to `system_chunk_score`, which returns
unsaved SystemScore rows (and the caption scores computed on the way): the chunk service stores them in
the transaction that finishes the chunk under its lease (metrics_bridge/services/runs/chunks.py), so a
leaderboard run has the same claiming, leases, attempt cap, progress and recovery as any metric run.
Like every service, this module never imports Celery: the caller passes `enqueue`.
"""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field

from corpus.models import Caption, Dataset
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore, ReferenceSet, SystemScore
from metrics_bridge.scoring import registry, system_level
from metrics_bridge.scoring.base import ScoreResult, ScoringRequest, gold_annotation_fingerprint, scorer_version
from metrics_bridge.selectors.scoring_inputs import gold_annotations_by_clip
from metrics_bridge.services.runs.contexts import scoring_context_for, version_context_for
from metrics_bridge.services.runs.plans import reference_context
from metrics_bridge.services.runs.reference_sets import reference_set_key, reference_sets_ensure
from metrics_bridge.services.runs.runs import (
    Enqueue,
    metric_run_chunks_save,
    metric_run_execute,
    metrics_not_computed,
    requested_scorers_for,
)

#: captions per chunk (several small systems share a chunk; a big one gets its own)
CHUNK_CAPTIONS = 2000
#: the reference-set context of caption scores against all references (non-corpus scorers)
ALL_REFERENCES_CONTEXT = ""


@dataclass
class SystemInputs:
    system_id: int
    name: str
    captions: int  # current captions, duplicates included
    # (caption id, clip id, text, references): each distinct (clip, text) once, clips with references only
    requests: list[tuple[int, int, str, tuple[str, ...]]] = field(default_factory=list)

    def fingerprint(self, *, gold: dict[str, dict] | None = None) -> str:
        items = sorted([clip_id, text, list(references)] for _, clip_id, text, references in self.requests)
        payload = {"items": items}
        if gold is not None:
            payload["gold"] = {str(clip_id): gold.get(str(clip_id)) for clip_id, _, _ in items}
        encoded = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()

    def scoring_requests(self) -> list[ScoringRequest]:
        return [
            ScoringRequest(candidate=text, references=references, candidate_id=caption_id, clip_key=str(clip_id))
            for caption_id, clip_id, text, references in self.requests
        ]


def system_inputs(*, dataset_id: int, system_ids: list[int] | None = None) -> dict[int, SystemInputs]:
    """Per system with current captions in the dataset: its inputs (two queries)."""
    references: dict[int, list[str]] = defaultdict(list)
    reference_rows = Caption.objects.corpus().filter(clip__dataset_id=dataset_id, role=Caption.Role.REFERENCE)
    for clip_id, text in reference_rows.order_by("clip_id", "position").values_list("clip_id", "text"):
        references[clip_id].append(text)
    candidates = Caption.objects.corpus().filter(
        clip__dataset_id=dataset_id,
        role=Caption.Role.CANDIDATE,
        system__isnull=False,
        superseded_at__isnull=True,
    )
    if system_ids is not None:
        candidates = candidates.filter(system_id__in=system_ids)
    inputs: dict[int, SystemInputs] = {}
    seen: set[tuple[int, int, str]] = set()
    rows = candidates.order_by("system_id", "clip_id", "pk").values_list(
        "pk", "system_id", "system__name", "clip_id", "text"
    )
    for caption_id, system_id, name, clip_id, text in rows:
        entry = inputs.setdefault(system_id, SystemInputs(system_id=system_id, name=name, captions=0))
        entry.captions += 1
        if (system_id, clip_id, text) in seen or not references.get(clip_id):
            continue
        seen.add((system_id, clip_id, text))
        entry.requests.append((caption_id, clip_id, text, tuple(references[clip_id])))
    return inputs


def _uses_gold(scorer) -> bool:
    return bool(getattr(scorer, "uses_gold_annotations", False))


def _gold_for(inputs: list[SystemInputs], scorer) -> dict[str, dict] | None:
    if not _uses_gold(scorer):
        return None
    return gold_annotations_by_clip(clip_ids={clip_id for entry in inputs for _, clip_id, _, _ in entry.requests})


def fingerprints_for(*, inputs: dict[int, SystemInputs], scorer) -> dict[int, str]:
    gold = _gold_for(list(inputs.values()), scorer)
    return {system_id: entry.fingerprint(gold=gold) for system_id, entry in inputs.items()}


def current_versions(metric_names: list[str], *, dataset: Dataset) -> dict[str, str]:
    """The version each metric's scores are stored under for this dataset (DATE's delta is a dataset setting)."""
    context = version_context_for(dataset=dataset)
    return {name: scorer_version(registry.scorer_for(name), context) for name in metric_names}


def current_system_scores(*, dataset: Dataset, inputs: dict[int, SystemInputs], metric_names: list[str]) -> dict:
    """{(system id, metric): SystemScore} for scores of exactly the systems' current inputs at current versions."""
    versions = current_versions(metric_names, dataset=dataset)
    # The inputs are the same for every scorer but those that also read gold annotations: hash them once each way.
    fingerprints: dict[bool, dict[int, str]] = {}
    for name in metric_names:
        scorer = registry.scorer_for(name)
        if _uses_gold(scorer) not in fingerprints:
            fingerprints[_uses_gold(scorer)] = fingerprints_for(inputs=inputs, scorer=scorer)
    rows = SystemScore.objects.filter(dataset=dataset, metric__in=metric_names, system_id__in=list(inputs))
    found = {}
    for row in rows.only("system_id", "metric", "version", "fingerprint", "value", "details"):
        uses_gold = _uses_gold(registry.scorer_for(row.metric))
        if row.version == versions[row.metric] and row.fingerprint == fingerprints[uses_gold].get(row.system_id):
            found[(row.system_id, row.metric)] = row
    return found


# --- Planning ---------------------------------------------------------------------------------------


def requested_scorers(metric_names: list[str] | None, *, dataset: Dataset) -> tuple[list, dict[str, str], list[str]]:
    """(scorers, unavailable {name: reason}, available requested names); default: every available metric."""
    scorers, unavailable = requested_scorers_for(metric_names, version_context_for(dataset=dataset))
    if metric_names is None:
        available = [name for scorer in scorers for name in scorer.metric_names]
    else:
        available = [name for name in metric_names if name not in unavailable]
    return scorers, unavailable, available


def system_chunks_plan(*, dataset: Dataset, scorers: list, metric_names: list[str]) -> list[MetricRunChunk]:
    """Unsaved chunks, one per (scorer, group of systems) still lacking a score of its current inputs for one
    of `metric_names` (the available requested names)."""
    inputs = system_inputs(dataset_id=dataset.pk)
    existing = current_system_scores(dataset=dataset, inputs=inputs, metric_names=metric_names)
    chunks = []
    for scorer in scorers:
        wanted = [name for name in scorer.metric_names if name in metric_names]
        missing = [
            entry
            for system_id, entry in sorted(inputs.items(), key=lambda item: item[1].name)
            if any((system_id, name) not in existing for name in wanted)
        ]
        group, size = [], 0
        for entry in missing:
            if group and size + len(entry.requests) > CHUNK_CAPTIONS:
                chunks.append(_chunk(scorer, dataset, group))
                group, size = [], 0
            group.append(entry)
            size += len(entry.requests)
        if group:
            chunks.append(_chunk(scorer, dataset, group))
    return chunks


def system_scores_run_create(
    *, dataset: Dataset, metric_names: list[str] | None = None, requested_by=None
) -> MetricRun:
    """A run of system scores only (the `leaderboard` command computes what it prints); runs started from the
    pages plan these chunks as part of a whole dataset run (metrics_bridge/services/evaluation/dataset_runs.py).

    Nothing is queued yet (`metric_run_dispatch` or `run_to_completion` send the chunks). As in
    `runs.metric_run_create`, reading the data happens before the write transaction.
    """
    scorers, unavailable, available = requested_scorers(metric_names, dataset=dataset)
    run = MetricRun(
        dataset=dataset,
        metrics=[name for scorer in scorers for name in scorer.metric_names if name in available],
        unavailable=unavailable,
        requested_by=requested_by,
    )
    chunks = system_chunks_plan(dataset=dataset, scorers=scorers, metric_names=available)
    for index, chunk in enumerate(chunks):
        chunk.index = index
    return metric_run_chunks_save(run=run, chunks=chunks)


def _chunk(scorer, dataset, group: list[SystemInputs]) -> MetricRunChunk:
    requests = [{"system_level": True, "dataset_id": dataset.pk, "system_id": entry.system_id} for entry in group]
    return MetricRunChunk(index=0, metric=scorer.metric_names[0], requests=requests)


# --- Scoring a chunk (called from chunk_scoring.chunk_score) ------------------------------------------------------


def is_system_chunk(chunk: MetricRunChunk) -> bool:
    return bool(chunk.requests) and isinstance(chunk.requests[0], dict) and bool(chunk.requests[0].get("system_level"))


def system_chunk_score(*, chunk: MetricRunChunk) -> list[SystemScore | MetricScore]:
    """Score the chunk's systems: unsaved SystemScore rows, plus the MetricScore rows of caption scores
    computed on the way (caption-mean metrics). The chunk service stores both with the chunk's end."""
    scorer = registry.scorer_for(chunk.metric)
    dataset_id = chunk.requests[0]["dataset_id"]
    inputs = system_inputs(dataset_id=dataset_id, system_ids=[request["system_id"] for request in chunk.requests])
    clip_ids = {clip_id for entry in inputs.values() for _, clip_id, _, _ in entry.requests}
    context = scoring_context_for(clip_ids=clip_ids, dataset=chunk.run.dataset, with_audio="audio" in scorer.needs)
    version = scorer_version(scorer, context)
    fingerprints = fingerprints_for(inputs=inputs, scorer=scorer)
    _pretokenize(scorer, inputs)
    caption_rows: list[MetricScore] = []
    if system_level.is_caption_mean(scorer):
        values, caption_rows = _caption_mean_values(scorer, version, inputs, context, chunk.run_id)
    else:
        values = {
            system_id: system_level.system_value(scorer, entry.scoring_requests(), context)
            for system_id, entry in inputs.items()
        }
    system_rows = [
        SystemScore(
            dataset_id=dataset_id,
            system_id=system_id,
            metric=name,
            version=version,
            fingerprint=fingerprints[system_id],
            value=value.value,
            details=value.details,
            run_id=chunk.run_id,
        )
        for system_id, by_name in values.items()
        for name, value in by_name.items()
    ]
    return [*caption_rows, *system_rows]


def _pretokenize(scorer, inputs: dict[int, SystemInputs]) -> None:
    """One tokenizer JVM call for every text of the chunk (the classic scorers then read the cache)."""
    if scorer.protocol_kind != "ngram" or not scorer.__module__.startswith("metrics_bridge.scoring.classic"):
        return
    from metrics_bridge.scoring.classic import ptb_tokenizer

    texts = {
        text for entry in inputs.values() for _, _, text, references in entry.requests for text in (text, *references)
    }
    ptb_tokenizer.tokenize_texts(sorted(texts))


def _caption_score_keys(scorer, inputs: dict[int, SystemInputs]) -> dict[int, tuple[str, str]]:
    """caption id -> (reference-set key, context) of its score against all of its clip's references.

    Scorers that read gold annotations add the clip's gold fingerprint, as the run planner does
    (`plans.reference_context`), so a changed gold annotation is never answered with an old caption score.
    """
    gold_fingerprints = None
    if _uses_gold(scorer):
        clip_ids = {clip_id for entry in inputs.values() for _, clip_id, _, _ in entry.requests}
        documents = gold_annotations_by_clip(clip_ids=clip_ids)
        gold_fingerprints = {clip_id: gold_annotation_fingerprint(documents.get(str(clip_id))) for clip_id in clip_ids}
    keys = {}
    for entry in inputs.values():
        for caption_id, clip_id, _, references in entry.requests:
            context = reference_context(
                corpus_level=False,
                batch_label=ALL_REFERENCES_CONTEXT,
                gold_fingerprint=None if gold_fingerprints is None else gold_fingerprints[clip_id],
            )
            keys[caption_id] = (reference_set_key(texts=references, context=context), context)
    return keys


def _caption_mean_values(scorer, version, inputs, context, run_id) -> tuple[dict[int, dict], list[MetricScore]]:
    """Means of per-caption scores against all references (a NULL score, e.g. an X-ACE factor absent from
    both graphs, is left out), and the unsaved rows of the caption scores that were missing."""
    keys = _caption_score_keys(scorer, inputs)
    caption_ids = [caption_id for entry in inputs.values() for caption_id, _, _, _ in entry.requests]
    stored: dict[tuple[str, int, str], ScoreResult] = {}
    rows = MetricScore.objects.filter(
        metric__in=scorer.metric_names,
        version=version,
        caption_id__in=caption_ids,
        reference_set__key__in={key for key, _ in keys.values()},
    ).values_list("metric", "caption_id", "reference_set__key", "value", "details")
    for metric, caption_id, key, value, details in rows.iterator():
        stored[(metric, caption_id, key)] = ScoreResult(value, details)
    missing = [
        request
        for entry in inputs.values()
        for request in entry.scoring_requests()
        if any(
            (name, request.candidate_id, keys[request.candidate_id][0]) not in stored for name in scorer.metric_names
        )
    ]
    new_rows = []
    if missing:
        results = scorer.score_batch(missing, context)
        # Reference sets are content-addressed: creating them ahead of the chunk's end is harmless.
        reference_sets_ensure(
            entries={keys[r.candidate_id][0]: (r.references, keys[r.candidate_id][1]) for r in missing}
        )
        reference_set_ids = dict(
            ReferenceSet.objects.filter(key__in={keys[r.candidate_id][0] for r in missing}).values_list("key", "pk")
        )
        for name in scorer.metric_names:
            for request, result in zip(missing, results[name], strict=True):
                stored[(name, request.candidate_id, keys[request.candidate_id][0])] = result
                new_rows.append(
                    MetricScore(
                        metric=name,
                        version=version,
                        caption_id=request.candidate_id,
                        reference_set_id=reference_set_ids[keys[request.candidate_id][0]],
                        value=None if result.value is None else float(result.value),
                        details=result.details or {},
                        run_id=run_id,
                    )
                )
    values = {}
    for system_id, entry in inputs.items():
        results = {
            name: [stored[(name, caption_id, keys[caption_id][0])] for caption_id, _, _, _ in entry.requests]
            for name in scorer.metric_names
        }
        values[system_id] = system_level.caption_means(scorer.metric_names, results)
    return values, new_rows


def run_to_completion(
    *, run: MetricRun, metric_names: list[str] | None, enqueue: Enqueue, on_progress=None, watchdog=None
) -> tuple[list[str], dict]:
    """Send a planned run's chunks to the workers `enqueue` reaches, wait for its end (with progress), and
    return (metric names with scores, unavailable reasons)."""
    run = metric_run_execute(run=run, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog)
    _, unavailable, available = requested_scorers(metric_names, dataset=run.dataset)
    unavailable.update(metrics_not_computed(run))
    return [name for name in available if name not in unavailable], unavailable
