"""The benchmark table's computation by a worker: requested by its page, recorded, reported (as the dashboards').

Building the table fits CALIBRATED on every dataset (minutes on a busy machine): the page reads the stored table
(benchmark.benchmark_state) and never builds it, also when no worker is alive (it says so instead).
"""

import logging
import traceback

from common.structured_log import log_event
from metrics_bridge.services.evaluation.benchmark import (
    BENCHMARK_KEY,
    benchmark_datasets,
    benchmark_fingerprint,
    benchmark_page_data,
)
from metrics_bridge.services.evaluation.dashboard_cache import (
    computation_begin,
    computation_fail,
    computation_request,
    computation_retry,
)

logger = logging.getLogger("captioneval.workers")


def benchmark_request(*, enqueue, retry: bool = False) -> bool:
    """Record that the table is to be computed for the current data and call enqueue() (sends the task); False
    when it is current or already on its way. `retry`: an admin sends again a computation given up."""
    if retry:
        computation_retry(key=BENCHMARK_KEY)
    return computation_request(
        key=BENCHMARK_KEY, fingerprint=benchmark_fingerprint(datasets=benchmark_datasets()), enqueue=enqueue
    )


def benchmark_compute() -> str:
    """A worker's computation of the table: "done" or "failed" (recorded for the page)."""
    computation_begin(key=BENCHMARK_KEY)
    try:
        benchmark_page_data()
    except Exception as error:  # recorded for the page, which reports it instead of waiting forever
        computation_fail(key=BENCHMARK_KEY, error=f"{type(error).__name__}: {error}")
        log_event(
            logger, "dashboard_failed", level=logging.ERROR, key=BENCHMARK_KEY, traceback=traceback.format_exc()[-3000:]
        )
        return "failed"
    return "done"
