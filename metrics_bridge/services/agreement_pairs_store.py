"""The pairs behind one metric's agreement on a dataset (the benchmark's and agreement table's drill-down page),
computed by a worker and stored per dataset, metric and state of the dataset's data.

Building them runs the metric's whole pair protocol over the dataset (seconds on Clotho-Eval, more than ten on a
BRACE-size dataset of a busy machine): the page reads the stored rows and, when they are missing or stale, records
a request the workers answer (dashboard_cache.computation_request), as the dashboards do.
"""

import logging
import traceback

from annotation.models import Dataset
from common.structured_log import log_event
from metrics_bridge.services.benchmark import agreement_pairs
from metrics_bridge.services.dashboard_cache import (
    CacheState,
    cached_payload,
    cached_state,
    computation_begin,
    computation_fail,
    computation_request,
    dataset_fingerprint,
)

logger = logging.getLogger("captioneval.workers")


def agreement_pairs_key(*, dataset_id: int, metric: str) -> str:
    return f"pairs:{dataset_id}:{metric}"


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
        cached_payload(
            key=key,
            fingerprint=dataset_fingerprint(dataset=dataset),
            build=lambda: agreement_pairs(dataset=dataset, metric=metric),
        )
    except Exception as error:  # recorded for the page, which reports it instead of waiting forever
        computation_fail(key=key, error=f"{type(error).__name__}: {error}")
        log_event(logger, "dashboard_failed", level=logging.ERROR, key=key, traceback=traceback.format_exc()[-3000:])
        return "failed"
    return "done"
