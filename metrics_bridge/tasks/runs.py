"""Celery side of metric runs: the chunk task and the dispatcher views and commands use.

Tasks call services, never the reverse: services take `enqueue_chunks` as a parameter.
"""

import os

from celery import shared_task

from common.broker import broker_identity
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_start
from metrics_bridge.services.runs.chunks import ChunkOutcome, chunk_process
from metrics_bridge.services.runs.runs import metric_run_execute

#: Seconds before a chunk whose attempt raised is tried again.
RETRY_DELAY_SECONDS = 2


@shared_task(
    name="metrics_bridge.tasks.score_chunk", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=0
)
def score_chunk(self, chunk_id: int) -> str:
    worker = f"{self.request.hostname or 'in-process'} pid {os.getpid()}"
    outcome = chunk_process(chunk_id=chunk_id, worker=worker)
    if outcome == ChunkOutcome.RETRY:
        score_chunk.apply_async(args=[chunk_id], countdown=RETRY_DELAY_SECONDS)
    return outcome


def enqueue_chunks(chunk_ids: list[int]) -> None:
    """Send one task message per chunk (with eager Celery, in tests, each is scored on the spot)."""
    for chunk_id in chunk_ids:
        score_chunk.apply_async(args=[chunk_id])


def runs_execute_eagerly() -> bool:
    # The project's Celery app (config/celery.py), reached through the task: this layer does not import config.
    return bool(score_chunk.app.conf.task_always_eager)


def current_broker() -> str:
    """This process's broker, named without credentials (what worker heartbeats are matched on)."""
    conf = score_chunk.app.conf
    return broker_identity(conf.broker_url, conf.broker_transport_options)


def start_metric_run(**kwargs):
    """dataset_run_start with this app's dispatcher (views, API): every result the pages show, one run."""
    return dataset_run_start(enqueue=enqueue_chunks, **kwargs)


def execute_metric_run(*, run, on_progress=None, enqueue=enqueue_chunks, **kwargs):
    """Send the run's chunks to the workers and wait for the run to end (compute_metrics --wait)."""
    return metric_run_execute(run=run, enqueue=enqueue, on_progress=on_progress, **kwargs)
