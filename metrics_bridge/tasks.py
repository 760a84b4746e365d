"""Celery tasks: thin, take ids, safe to run twice."""
from celery import shared_task

from metrics_bridge.services.runs import chunk_process


@shared_task(acks_late=True, reject_on_worker_lost=True, max_retries=0)
def score_chunk(chunk_id: int) -> str:
    return chunk_process(chunk_id=chunk_id)


#: a whole dataset scored by every metric several times over: longer than a chunk may take
SENSITIVITY_TIME_LIMIT_SECONDS = 6 * 3600


@shared_task(acks_late=True, reject_on_worker_lost=True, max_retries=0, time_limit=SENSITIVITY_TIME_LIMIT_SECONDS)
def compute_sensitivity(report_id: int) -> str:
    from metrics_bridge.services.sensitivity import sensitivity_report_compute

    report = sensitivity_report_compute(report_id=report_id)
    return report.status if report else "skipped"
