"""Celery tasks: thin, take ids, safe to run twice."""
from celery import shared_task

from metrics_bridge.services.runs import chunk_process


@shared_task(acks_late=True, reject_on_worker_lost=True, max_retries=0)
def score_chunk(chunk_id: int) -> str:
    return chunk_process(chunk_id=chunk_id)


@shared_task(acks_late=True, max_retries=0)
def refresh_dashboard(kind: str, object_id: int) -> str:
    """Compute a dashboard's numbers for the current data (slow ones, e.g. THumBS CIs, stay off the web process)."""
    from metrics_bridge.services.dashboards import dashboard_refresh_by_id

    dashboard_refresh_by_id(kind=kind, object_id=object_id)
    return "done"
