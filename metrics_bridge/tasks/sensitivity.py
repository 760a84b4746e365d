"""Celery side of sensitivity reports (a whole dataset scored by every metric several times over)."""

from celery import shared_task

from metrics_bridge.services.evaluation.sensitivity import (
    sensitivity_report_compute,
    sensitivity_report_create,
    sensitivity_report_start,
)
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker, runs_execute_eagerly

#: a whole dataset scored by every metric several times over: longer than a chunk may take
SENSITIVITY_TIME_LIMIT_SECONDS = 6 * 3600


@shared_task(
    name="metrics_bridge.tasks.compute_sensitivity",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=0,
    time_limit=SENSITIVITY_TIME_LIMIT_SECONDS,
)
def compute_sensitivity(report_id: int) -> str:
    report = sensitivity_report_compute(report_id=report_id)
    return report.status if report else "skipped"


def enqueue_sensitivity(report_id: int) -> None:
    """Send the sensitivity report's task message (with eager Celery, in tests, it runs on the spot)."""
    compute_sensitivity.apply_async(args=[report_id])


def start_sensitivity_report(**kwargs):
    """sensitivity_report_start with this app's dispatcher (the sensitivity page)."""
    return sensitivity_report_start(enqueue=enqueue_sensitivity, **kwargs)


def request_sensitivity_report(*, dataset, metric_names: list[str]):
    """A sensitivity report sent to a live worker; computed here and now when no worker would take it (eager
    Celery in tests, no worker running), as request_dashboard_refresh does. Returns the report."""
    if runs_execute_eagerly() or not live_workers(broker=current_broker()):
        report = sensitivity_report_create(dataset=dataset, metric_names=metric_names)
        sensitivity_report_compute(report_id=report.pk)
        report.refresh_from_db()
        return report
    return start_sensitivity_report(dataset=dataset, metric_names=metric_names)
