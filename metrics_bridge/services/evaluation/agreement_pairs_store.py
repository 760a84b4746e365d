"""The pairs behind one metric's agreement on a dataset (the benchmark's and agreement table's drill-down page),
computed by a worker and stored per dataset, metric and state of the dataset's data.

Building them runs the metric's whole pair protocol over the dataset (seconds on Clotho-Eval, more than ten on a
BRACE-size dataset of a busy machine): the page reads the stored rows and, when they are missing or stale, records
a request the workers answer (dashboard_cache.computation_request), as the dashboards do.

The rows are stored by page, for each choice of the page's filters (split, verdict), each page an entry of its own
beside the header (report, counts): a view reads the header and one page of 100 rows, not the whole list (about
1 MB on a BRACE-size dataset).
"""

import json
import logging
import traceback

from django.db import transaction

from common.structured_log import log_event
from corpus.models import Dataset
from metrics_bridge.models import DashboardCache
from metrics_bridge.services.evaluation.benchmark import agreement_pairs
from metrics_bridge.services.evaluation.dashboard_cache import (
    CacheState,
    cached_payload,
    cached_state,
    computation_begin,
    computation_fail,
    computation_request,
    dataset_fingerprint,
    json_safe,
)

logger = logging.getLogger("captioneval.workers")

PAIRS_PER_PAGE = 100
VERDICTS = ("right", "wrong")


def agreement_pairs_key(*, dataset_id: int, metric: str) -> str:
    return f"pairs:{dataset_id}:{metric}"


def _page_key(key: str, split: str, verdict: str, number: int) -> str:
    return f"{key}:page:{split or 'all'}:{verdict or 'all'}:{number}"


def _filter_key(split: str, verdict: str) -> str:
    return f"{split or ''}:{verdict or ''}"


def _store_pages(key: str, payload: dict) -> dict:
    """Store the rows page by page for every choice of filters (replacing the former pages); the header kept under
    `key`: the payload without its rows, plus the splits and the number of rows of each choice."""
    rows = payload["pairs"]
    splits = sorted({row["split"] for row in rows})
    counts, pages = {}, []
    for split in ["", *splits]:
        for verdict in ("", *VERDICTS):
            chosen = _selected(rows, split, verdict)
            counts[_filter_key(split, verdict)] = len(chosen)
            for start in range(0, len(chosen), PAIRS_PER_PAGE):
                page_key = _page_key(key, split, verdict, start // PAIRS_PER_PAGE + 1)
                content = json.dumps(chosen[start : start + PAIRS_PER_PAGE])
                pages.append(DashboardCache(key=page_key, fingerprint="page", content=content))
    DashboardCache.objects.filter(key__startswith=f"{key}:page:").delete()
    DashboardCache.objects.bulk_create(pages, batch_size=200)
    header = {name: value for name, value in payload.items() if name != "pairs"}
    return {**header, "splits": splits, "counts": counts}


def _selected(rows: list[dict], split: str, verdict: str) -> list[dict]:
    return [
        row
        for row in rows
        if (not split or row["split"] == split) and (not verdict or row["correct"] is (verdict == "right"))
    ]


def agreement_pairs_count(*, header: dict, split: str, verdict: str) -> int:
    """How many stored rows these filters select (a header stored before the rows were stored by page holds them
    all)."""
    if "pairs" in header:
        return len(_selected(header["pairs"], split, verdict))
    return header["counts"].get(_filter_key(split, verdict), 0)


def agreement_pairs_page(*, key: str, header: dict, split: str, verdict: str, number: int) -> list[dict]:
    """The rows of page `number` (from 1) for these filters: one stored entry read."""
    if "pairs" in header:
        return _selected(header["pairs"], split, verdict)[(number - 1) * PAIRS_PER_PAGE : number * PAIRS_PER_PAGE]
    content = (
        DashboardCache.objects.filter(key=_page_key(key, split, verdict, number))
        .values_list("content", flat=True)
        .first()
    )
    return json.loads(content) if content else []


def agreement_pairs_state(*, dataset: Dataset, metric: str) -> CacheState:
    """The stored pairs (payload: benchmark.agreement_pairs' dict), whether current, and their computation."""
    return cached_state(
        key=agreement_pairs_key(dataset_id=dataset.pk, metric=metric), fingerprint=dataset_fingerprint(dataset=dataset)
    )


def agreement_pairs_request(*, dataset: Dataset, metric: str, enqueue) -> bool:
    """Have a worker compute the pairs when they are missing or stale (`enqueue()` sends its task); True when
    sent now, False when current or already on their way."""
    return computation_request(
        key=agreement_pairs_key(dataset_id=dataset.pk, metric=metric),
        fingerprint=dataset_fingerprint(dataset=dataset),
        enqueue=enqueue,
    )


def agreement_pairs_compute(*, dataset_id: int, metric: str) -> str:
    """A worker's computation: "done", "gone" (the dataset was deleted) or "failed" (recorded for the page)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return "gone"
    key = agreement_pairs_key(dataset_id=dataset_id, metric=metric)
    computation_begin(key=key)
    try:
        with transaction.atomic():  # the header and its pages together
            cached_payload(
                key=key,
                fingerprint=dataset_fingerprint(dataset=dataset),
                build=lambda: _store_pages(key, json_safe(agreement_pairs(dataset=dataset, metric=metric))),
            )
    except Exception as error:  # recorded for the page, which reports it instead of waiting forever
        computation_fail(key=key, error=f"{type(error).__name__}: {error}")
        log_event(logger, "dashboard_failed", level=logging.ERROR, key=key, traceback=traceback.format_exc()[-3000:])
        return "failed"
    return "done"
