"""Celery side of the dashboard pages and the benchmark table: computed by workers, never in a page's request.

The dashboards' statistics import scipy (~0.4 s): a worker imports them with its first dashboard task,
not while it boots (a temporary worker of `compute_metrics --wait` is on the run's critical path).
"""

from celery import shared_task
from django.db import transaction

from metrics_bridge.services.evaluation.dashboard_cache import COMPUTE_TIME_LIMIT_SECONDS
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker, runs_execute_eagerly


@shared_task(name="metrics_bridge.tasks.refresh_dashboard", acks_late=True, max_retries=0)
def refresh_dashboard(kind: str, object_id: int) -> str:
    """Compute a dashboard's numbers for the current data (slow ones, e.g. THumBS CIs, stay off the web process)."""
    from metrics_bridge.services.evaluation.dashboards import dashboard_refresh_by_id  # see the section's note

    dashboard_refresh_by_id(kind=kind, object_id=object_id)
    return "done"


def request_dashboard_refresh(*, kind: str, object_id: int) -> bool:
    """Have a dashboard recomputed; True when it was done here and now.

    A live worker on this broker gets a task message (sent once the transaction commits); without one
    (eager Celery in tests, or `./scripts/run`'s worker not started), the caller computes it inline
    rather than leaving the page waiting for a worker that will never come.
    """
    if runs_execute_eagerly() or not live_workers(broker=current_broker()):
        from metrics_bridge.services.evaluation.dashboards import dashboard_refresh_by_id  # see the section's note

        dashboard_refresh_by_id(kind=kind, object_id=object_id)
        return True
    transaction.on_commit(lambda: refresh_dashboard.delay(kind, object_id))
    return False


@shared_task(
    name="metrics_bridge.tasks.compute_dashboard_part",
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_dashboard_part(part: str, object_id: int) -> str:
    """Compute one stored part of a dashboard page (its table, CALIBRATED's fit) for the current data; a failure
    is recorded on the part for the page to report. Safe twice: a part already current is not recomputed."""
    from metrics_bridge.services.evaluation.dashboards import dashboard_part_compute  # see the section's note

    return dashboard_part_compute(part=part, object_id=object_id)


def enqueue_dashboard_part(part: str, object_id: int) -> None:
    """Send a dashboard part's task message once the transaction commits (eager Celery, in tests: now). Pages
    never compute a part themselves, even with no live worker: they say so instead (the message waits for one)."""
    if runs_execute_eagerly():
        compute_dashboard_part.apply_async(args=[part, object_id])
    else:
        transaction.on_commit(lambda: compute_dashboard_part.apply_async(args=[part, object_id]))


def request_dashboard_parts(*, kind: str, target, retry: bool = False) -> list[str]:
    """Have the workers compute the dashboard page's parts that need it (dashboards.dashboard_parts_request)."""
    from metrics_bridge.services.evaluation.dashboards import dashboard_parts_request  # see the section's note

    return dashboard_parts_request(kind=kind, target=target, enqueue=enqueue_dashboard_part, retry=retry)


def dashboard_workers_alive() -> bool:
    """Whether a worker would take a dashboard's task now (always, with eager Celery)."""
    return runs_execute_eagerly() or bool(live_workers(broker=current_broker()))


@shared_task(
    name="metrics_bridge.tasks.refresh_benchmark",
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def refresh_benchmark() -> str:
    """Compute the benchmark table (every metric on every dataset, CALIBRATED fitted per dataset) off the web."""
    from metrics_bridge.services.evaluation.benchmark_requests import benchmark_compute  # see the section's note

    return benchmark_compute()


def request_benchmark_refresh(*, retry: bool = False) -> bool:
    """Have a worker recompute the benchmark table when it is stale; True when the task was sent now. Never computed
    in the request, even with no live worker (the page says so; the message waits for one)."""
    from metrics_bridge.services.evaluation.benchmark_requests import benchmark_request

    def enqueue() -> None:
        if runs_execute_eagerly():
            refresh_benchmark.apply_async()
        else:
            transaction.on_commit(lambda: refresh_benchmark.apply_async())

    return benchmark_request(enqueue=enqueue, retry=retry)
