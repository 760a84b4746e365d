"""Dashboards and plots are computed once per state of the data they show, then served from the cache.

`dataset_fingerprint` summarises, in a few aggregate queries, everything a dataset's dashboards read:
captions (added, edited, superseded), pairs, votes, THumBS ratings, excluded raters, metric runs (every
finished chunk changes them), system scores, and the current metric versions. Any change gives a new
fingerprint, so a cached table or plot is recomputed on the next view instead of being shown stale.
"""

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max, Sum

from annotation.models import Caption, Dataset
from metrics_bridge.models import DashboardCache, MetricRun, SystemScore
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating

#: part of every cache entry's fingerprint: bump it when the code that builds a dashboard or plot changes,
#: so a deployment does not keep serving tables and plots computed by the previous code
CODE_REVISION = "dashboards-5"


def json_safe(value):
    """NaN / infinity (an undefined statistic) become None, so payloads are valid JSON."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def _summary(queryset, *fields: str) -> list:
    aggregates = {"n": Count("pk"), "last": Max("pk")}
    for field in fields:
        aggregates[field] = Max(field) if not field.startswith("sum:") else Sum(field[4:])
    row = queryset.order_by().aggregate(**aggregates)
    return [str(row[key]) for key in sorted(row)]


def dataset_fingerprint(*, dataset: Dataset) -> str:
    from metrics_bridge.scoring import registry
    from metrics_bridge.services.system_scores import current_versions

    parts = [
        _summary(Caption.objects.filter(clip__dataset=dataset), "updated_at"),
        _summary(CaptionPair.objects.filter(clip__dataset=dataset), "updated_at"),
        _summary(PairwiseVote.objects.filter(pair__clip__dataset=dataset), "updated_at"),
        _summary(ThumbsRating.objects.filter(caption__clip__dataset=dataset), "updated_at"),
        _summary(Campaign.excluded_raters.through.objects.filter(campaign__dataset=dataset), "sum:user_id"),
        _summary(MetricRun.objects.filter(dataset=dataset), "sum:chunks_done", "finished_at", "status"),
        _summary(SystemScore.objects.filter(dataset=dataset)),
        sorted(current_versions(registry.all_metric_names(), dataset=dataset).items()),
    ]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _with_revision(fingerprint: str) -> str:
    return hashlib.sha256(f"{CODE_REVISION}:{fingerprint}".encode()).hexdigest()


@dataclass(frozen=True)
class CacheState:
    payload: dict | None  # None: never computed
    fresh: bool  # computed from the data as it is now
    computed_at: datetime | None


def cached_state(*, key: str, fingerprint: str) -> CacheState:
    """What is cached under `key` and whether it still matches the data (pages show stale numbers flagged
    as such, and let the browser ask for the recomputation, instead of computing inside the page view)."""
    row = DashboardCache.objects.filter(key=key).only("fingerprint", "content", "computed_at").first()
    if row is None or not row.content:
        return CacheState(None, False, None)
    return CacheState(json.loads(row.content), row.fingerprint == _with_revision(fingerprint), row.computed_at)


def cached_payload(*, key: str, fingerprint: str, build) -> dict:
    """The payload cached under `key` when it was computed from data with this fingerprint, else build() (stored)."""
    fingerprint = _with_revision(fingerprint)
    row = DashboardCache.objects.filter(key=key).only("fingerprint", "content").first()
    if row is not None and row.fingerprint == fingerprint and row.content:
        return json.loads(row.content)
    payload = json_safe(build())
    # Stored as JSON text, not in the JSON field: PostgreSQL's jsonb would reorder the keys (table columns).
    defaults = {"fingerprint": fingerprint, "content": json.dumps(payload)}
    DashboardCache.objects.update_or_create(key=key, defaults=defaults)
    return payload


def cached_content(*, key: str, fingerprint: str, build) -> str:
    """Same for text (SVG plots)."""
    fingerprint = _with_revision(fingerprint)
    row = DashboardCache.objects.filter(key=key).only("fingerprint", "content").first()
    if row is not None and row.fingerprint == fingerprint:
        return row.content
    content = build()
    DashboardCache.objects.update_or_create(key=key, defaults={"fingerprint": fingerprint, "content": content})
    return content
