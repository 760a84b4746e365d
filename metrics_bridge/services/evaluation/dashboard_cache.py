"""Dashboards and plots are computed once per state of the data they show, then served from the cache.

`dataset_fingerprint` summarises, in a few aggregate queries (the same few for several datasets at once),
everything a dataset's dashboards read:
captions (added, edited, superseded), pairs, votes, THumBS ratings, excluded raters, metric runs (every
finished chunk changes them), system scores, and the current metric versions. Any change gives a new
fingerprint, so a cached table or plot is recomputed on the next view instead of being shown stale.

Pages never compute what they show: a worker does, on request (`computation_request`), and the row records
the request (for which data, when it was sent, when a worker began it, how many times, the last error). From
that, `CacheState.computation` says whether the computation is queued, running, lost (not begun within
QUEUE_BOUND_SECONDS: a worker killed while holding the message, a broker that lost it; or begun and never
finished within RUN_BOUND_SECONDS: its worker died) or failed, and `needs_request` whether to send it (again):
a lost or failed one is sent again up to MAX_ATTEMPTS times for the same data, then reported.
"""

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from corpus.models import Caption, Dataset
from metrics_bridge.models import DashboardCache, MetricRun, SystemScore
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating

#: part of every cache entry's fingerprint: bump it when the code that builds a dashboard or plot changes,
#: so a deployment does not keep serving tables and plots computed by the previous code
CODE_REVISION = "dashboards-7"

#: a computation sent to the workers and not begun after this long was lost: it is sent again
QUEUE_BOUND_SECONDS = 120
#: a dashboard computation's time limit in the worker (metrics_bridge.tasks.dashboards.compute_dashboard_part)
COMPUTE_TIME_LIMIT_SECONDS = 20 * 60
#: begun and not finished after this long: its worker died (the time limit would have ended it as a failure)
RUN_BOUND_SECONDS = COMPUTE_TIME_LIMIT_SECONDS + 60
#: sent this many times for the same data (each lost or failed): reported on the page, not sent again by itself
MAX_ATTEMPTS = 3


def json_safe(value):
    """NaN / infinity (an undefined statistic) become None, so payloads are valid JSON."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


#: what a dataset's fingerprint summarises: (model, path from it to the dataset, {name: aggregate}); each gives the
#: row count, the highest id and these, so an added, edited or deleted row changes it
def _summarised():
    return [
        (Caption, "clip__dataset_id", {"updated_at": Max("updated_at")}),
        (CaptionPair, "clip__dataset_id", {"updated_at": Max("updated_at")}),
        (PairwiseVote, "pair__clip__dataset_id", {"updated_at": Max("updated_at")}),
        (ThumbsRating, "caption__clip__dataset_id", {"updated_at": Max("updated_at")}),
        (Campaign.excluded_raters.through, "campaign__dataset_id", {"sum:user_id": Sum("user_id")}),
        (
            MetricRun,
            "dataset_id",
            {"sum:chunks_done": Sum("chunks_done"), "finished_at": Max("finished_at"), "status": Max("status")},
        ),
        (SystemScore, "dataset_id", {}),
    ]


def _summaries(model, path: str, fields: dict, dataset_ids: list[int]) -> dict[int, list]:
    """{dataset id: the summary of its rows of `model`}, for every dataset in one grouped query (each of these
    queries reads the whole table whichever datasets it is asked for: one pass serves them all)."""
    aggregates = {"n": Count("pk"), "last": Max("pk"), **fields}
    aliases = {name: f"value_{index}" for index, name in enumerate(aggregates)}  # "sum:..." is no SQL alias
    rows = (
        model.objects.filter(**{f"{path}__in": dataset_ids})
        .order_by()
        .values(path)
        .annotate(**{aliases[name]: aggregate for name, aggregate in aggregates.items()})
    )
    found = {row[path]: row for row in rows}
    empty = {alias: None for alias in aliases.values()} | {aliases["n"]: 0}
    return {
        dataset_id: [str(found.get(dataset_id, empty)[aliases[name]]) for name in sorted(aggregates)]
        for dataset_id in dataset_ids
    }


def dataset_fingerprints(*, datasets: list[Dataset]) -> dict[int, str]:
    """{dataset id: its fingerprint}, in the same seven queries for any number of datasets (a page that needs
    several, such as the agreement page's trained-elsewhere part or the benchmark, asks for them together)."""
    from metrics_bridge.scoring import registry
    from metrics_bridge.services.runs.system_scores import current_versions

    ids = sorted({dataset.pk for dataset in datasets})
    if not ids:
        return {}
    summaries = [_summaries(model, path, fields, ids) for model, path, fields in _summarised()]
    names = registry.all_metric_names()
    result = {}
    for dataset in datasets:
        if dataset.pk in result:
            continue
        parts = [summary[dataset.pk] for summary in summaries]
        parts.append(sorted(current_versions(names, dataset=dataset).items()))
        result[dataset.pk] = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return result


def dataset_fingerprint(*, dataset: Dataset) -> str:
    return dataset_fingerprints(datasets=[dataset])[dataset.pk]


def _with_revision(fingerprint: str) -> str:
    return hashlib.sha256(f"{CODE_REVISION}:{fingerprint}".encode()).hexdigest()


@dataclass(frozen=True)
class Computation:
    """The computation requested for the data as it is now."""

    phase: str  # "queued", "running", "lost" or "failed"
    requested_at: datetime
    started_at: datetime | None
    attempts: int  # times it was sent for this data
    error: str  # the last failure ("failed")

    @property
    def given_up(self) -> bool:
        """Lost or failed as many times as it may be sent by itself: the page reports it and offers to retry."""
        return self.phase in ("lost", "failed") and self.attempts >= MAX_ATTEMPTS


@dataclass(frozen=True)
class CacheState:
    payload: dict | None  # None: never computed
    fresh: bool  # computed from the data as it is now
    computed_at: datetime | None
    computation: Computation | None = None  # asked of a worker for the data as it is now (None: not asked)

    @property
    def needs_request(self) -> bool:
        """Not current, and no computation on its way: never asked for this data, or lost or failed (sent
        again until MAX_ATTEMPTS)."""
        if self.fresh:
            return False
        if self.computation is None:
            return True
        return self.computation.phase in ("lost", "failed") and not self.computation.given_up


def _computation(row, fingerprint: str) -> Computation | None:
    if row is None or not row.requested_at or row.requested_fingerprint != fingerprint:
        return None
    now = timezone.now()
    if row.error:
        phase = "failed"
    elif row.started_at is not None:
        phase = "lost" if now - row.started_at > timedelta(seconds=RUN_BOUND_SECONDS) else "running"
    else:
        phase = "lost" if now - row.requested_at > timedelta(seconds=QUEUE_BOUND_SECONDS) else "queued"
    return Computation(phase, row.requested_at, row.started_at, row.attempts, row.error)


_STATE_FIELDS = ("fingerprint", "content", "computed_at", "requested_fingerprint", "requested_at", "started_at")


def cached_state(*, key: str, fingerprint: str) -> CacheState:
    """What is cached under `key`, whether it still matches the data, and the computation asked for it (pages
    show stale numbers flagged as such and have a worker recompute them, never computing inside the page view)."""
    return cached_states(fingerprints={key: fingerprint})[key]


def cached_states(*, fingerprints: dict[str, str]) -> dict[str, CacheState]:
    """{key: cached_state} for several keys (a page's parts) in one query."""
    rows = DashboardCache.objects.filter(key__in=list(fingerprints)).only(*_STATE_FIELDS, "key", "attempts", "error")
    found = {row.key: row for row in rows}
    return {key: _state(found.get(key), fingerprint) for key, fingerprint in fingerprints.items()}


def _state(row, fingerprint: str) -> CacheState:
    fingerprint = _with_revision(fingerprint)
    computation = _computation(row, fingerprint)
    if row is None or not row.content:
        return CacheState(None, False, None, computation)
    fresh = row.fingerprint == fingerprint
    return CacheState(json.loads(row.content), fresh, row.computed_at, None if fresh else computation)


def computation_request(*, key: str, fingerprint: str, enqueue) -> bool:
    """Record that the entry under `key` is to be computed for this data and call enqueue() (which sends the
    worker's task); False, sending nothing, when it is current or its computation is on its way already
    (another process asked at the same moment: the conditional update lets one of them send it)."""
    state = cached_state(key=key, fingerprint=fingerprint)
    if not state.needs_request:
        return False
    fingerprint = _with_revision(fingerprint)
    row, _ = DashboardCache.objects.get_or_create(key=key, defaults={"fingerprint": ""})
    attempts = row.attempts + 1 if row.requested_fingerprint == fingerprint else 1
    claimed = DashboardCache.objects.filter(
        pk=row.pk, requested_fingerprint=row.requested_fingerprint, requested_at=row.requested_at
    ).update(
        requested_fingerprint=fingerprint, requested_at=timezone.now(), started_at=None, attempts=attempts, error=""
    )
    if claimed:
        enqueue()
    return bool(claimed)


def computation_retry(*, key: str) -> None:
    """An admin asks again for a computation given up (lost or failed MAX_ATTEMPTS times): it may be sent again."""
    DashboardCache.objects.filter(key=key).update(attempts=0)


def computation_begin(*, key: str) -> None:
    """A worker began the requested computation (it is "running", no longer "queued")."""
    DashboardCache.objects.filter(key=key).update(started_at=timezone.now(), error="")


def computation_fail(*, key: str, error: str) -> None:
    """The computation raised: the page reports it (and it is sent again until MAX_ATTEMPTS)."""
    DashboardCache.objects.filter(key=key).update(error=error[:2000] or "failed")


def cached_payload(*, key: str, fingerprint: str, build) -> dict:
    """The payload cached under `key` when it was computed from data with this fingerprint, else build() (stored)."""
    fingerprint = _with_revision(fingerprint)
    row = DashboardCache.objects.filter(key=key).only("fingerprint", "content").first()
    if row is not None and row.fingerprint == fingerprint and row.content:
        return json.loads(row.content)
    payload = json_safe(build())
    # Stored as JSON text, not in the JSON field: PostgreSQL's jsonb would reorder the keys (table columns).
    _store(key=key, fingerprint=fingerprint, content=json.dumps(payload))
    return payload


def _store(*, key: str, fingerprint: str, content: str) -> None:
    """Store a result; the request it answered is done (a request for newer data stays pending)."""
    with transaction.atomic():
        row, _ = DashboardCache.objects.select_for_update().get_or_create(key=key, defaults={"fingerprint": ""})
        row.fingerprint, row.content = fingerprint, content
        if row.requested_fingerprint == fingerprint:
            row.requested_fingerprint, row.requested_at, row.started_at, row.attempts, row.error = "", None, None, 0, ""
        row.save()


def cached_content(*, key: str, fingerprint: str, build) -> str:
    """Same for text (SVG plots)."""
    fingerprint = _with_revision(fingerprint)
    row = DashboardCache.objects.filter(key=key).only("fingerprint", "content").first()
    if row is not None and row.fingerprint == fingerprint:
        return row.content
    content = build()
    _store(key=key, fingerprint=fingerprint, content=content)
    return content
