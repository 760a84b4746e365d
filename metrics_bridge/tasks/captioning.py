"""Celery side of captioning through a model's API ("Evaluate a model")."""

from celery import shared_task
from django.db import transaction

from metrics_bridge.services.runs.runs import metric_run_dispatch
from metrics_bridge.tasks.runs import enqueue_chunks

#: a dataset captioned clip by clip through an API can take hours
CAPTIONING_TIME_LIMIT_SECONDS = 24 * 3600


@shared_task(
    name="metrics_bridge.tasks.generate_captions",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=0,
    time_limit=CAPTIONING_TIME_LIMIT_SECONDS,
)
def generate_captions(job_id: int) -> str:
    """Caption a job's clips, file the answers as its system, and queue the metric run that scores them.
    Safe to deliver twice: the job is claimed first (a second delivery finds it taken while its heartbeat lives)."""
    from metrics_bridge.services.captioning.jobs import (
        captioning_job_claim,
        captioning_job_fail,
        captioning_job_run,
        captioning_job_score,
    )

    job = captioning_job_claim(job_id=job_id)
    if job is None:
        return "skipped"
    try:
        job = captioning_job_run(job=job)
    except Exception as error:  # the job must not stay "captioning" forever; its end is logged with the key redacted
        return captioning_job_fail(job=job, error=error).status
    if job.system_id and job.status != job.Status.CANCELLED:
        run = captioning_job_score(job=job, requested_by=job.requested_by)
        metric_run_dispatch(run=run, enqueue=enqueue_chunks)
    return job.status


def enqueue_captioning_job(job_id: int) -> None:
    """Send the job's task message once the transaction commits (with eager Celery, in tests, it runs then)."""
    transaction.on_commit(lambda: generate_captions.apply_async(args=[job_id]))
