"""Celery side of metric runs: the chunk task, the dispatcher views and commands use, the worker's heartbeat.

Tasks call services, never the reverse: services take `enqueue_chunks` as a parameter.
"""

import logging
import os
import threading
import time
from datetime import timedelta

from celery import shared_task
from celery.concurrency import get_implementation
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from common.broker import broker_identity
from common.structured_log import log_event
from metrics_bridge.scoring import registry
from metrics_bridge.services.chunks import ChunkOutcome, chunk_process, chunks_recover
from metrics_bridge.services.dashboard_cache import COMPUTE_TIME_LIMIT_SECONDS
from metrics_bridge.services.dataset_runs import dataset_run_start
from metrics_bridge.services.runs import metric_run_dispatch, metric_run_execute
from metrics_bridge.services.sensitivity import (
    sensitivity_report_compute,
    sensitivity_report_create,
    sensitivity_report_start,
)
from metrics_bridge.services.workers import (
    live_workers,
    worker_has_running_chunk,
    worker_heartbeat_beat,
    worker_heartbeat_remove,
)

logger = logging.getLogger("captioneval.workers")

#: When this process started (this module is imported while a worker boots, before it consumes messages).
PROCESS_STARTED_AT = timezone.now()

#: Seconds before a chunk whose attempt raised is tried again.
RETRY_DELAY_SECONDS = 2
#: An idle worker re-sends pending chunks sent at least this long ago (their messages were lost).
RESEND_AFTER_SECONDS = 10


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=0)
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


# --- Dashboards -----------------------------------------------------------------------------------
# The dashboards' statistics import scipy (~0.4 s): a worker imports them with its first dashboard task,
# not while it boots (a temporary worker of `compute_metrics --wait` is on the run's critical path).


@shared_task(acks_late=True, max_retries=0)
def refresh_dashboard(kind: str, object_id: int) -> str:
    """Compute a dashboard's numbers for the current data (slow ones, e.g. THumBS CIs, stay off the web process)."""
    from metrics_bridge.services.dashboards import dashboard_refresh_by_id  # see the section's note

    dashboard_refresh_by_id(kind=kind, object_id=object_id)
    return "done"


def request_dashboard_refresh(*, kind: str, object_id: int) -> bool:
    """Have a dashboard recomputed; True when it was done here and now.

    A live worker on this broker gets a task message (sent once the transaction commits); without one
    (eager Celery in tests, or `./scripts/run`'s worker not started), the caller computes it inline
    rather than leaving the page waiting for a worker that will never come.
    """
    if runs_execute_eagerly() or not live_workers(broker=current_broker()):
        from metrics_bridge.services.dashboards import dashboard_refresh_by_id  # see the section's note

        dashboard_refresh_by_id(kind=kind, object_id=object_id)
        return True
    transaction.on_commit(lambda: refresh_dashboard.delay(kind, object_id))
    return False


@shared_task(
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_dashboard_part(part: str, object_id: int) -> str:
    """Compute one stored part of a dashboard page (its table, CALIBRATED's fit) for the current data; a failure
    is recorded on the part for the page to report. Safe twice: a part already current is not recomputed."""
    from metrics_bridge.services.dashboards import dashboard_part_compute  # see the section's note

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
    from metrics_bridge.services.dashboards import dashboard_parts_request  # see the section's note

    return dashboard_parts_request(kind=kind, target=target, enqueue=enqueue_dashboard_part, retry=retry)


def dashboard_workers_alive() -> bool:
    """Whether a worker would take a dashboard's task now (always, with eager Celery)."""
    return runs_execute_eagerly() or bool(live_workers(broker=current_broker()))


@shared_task(
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_annotation_agreement(dataset_id: int, campaign_id: int | None) -> str:
    """Compute the stored inter-annotator agreement (it loads Sentence-BERT: never in a page's request)."""
    from metrics_bridge.services.annotation_agreement import annotation_agreement_compute

    return annotation_agreement_compute(dataset_id=dataset_id, campaign_id=campaign_id)


def request_annotation_agreement(*, dataset, campaign) -> bool:
    """Have a worker compute the dataset's (or campaign's) inter-annotator agreement when it is stale."""
    from metrics_bridge.services.annotation_agreement import annotation_agreement_request

    arguments = [dataset.pk, campaign.pk if campaign else None]

    def enqueue() -> None:
        if runs_execute_eagerly():
            compute_annotation_agreement.apply_async(args=arguments)
        else:
            transaction.on_commit(lambda: compute_annotation_agreement.apply_async(args=arguments))

    return annotation_agreement_request(dataset=dataset, campaign=campaign, enqueue=enqueue)


@shared_task(
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def refresh_benchmark() -> str:
    """Compute the benchmark table (every metric on every dataset, CALIBRATED fitted per dataset) off the web."""
    from metrics_bridge.services.benchmark_requests import benchmark_compute  # see the section's note

    return benchmark_compute()


def request_benchmark_refresh(*, retry: bool = False) -> bool:
    """Have a worker recompute the benchmark table when it is stale; True when the task was sent now. Never computed
    in the request, even with no live worker (the page says so; the message waits for one)."""
    from metrics_bridge.services.benchmark_requests import benchmark_request

    def enqueue() -> None:
        if runs_execute_eagerly():
            refresh_benchmark.apply_async()
        else:
            transaction.on_commit(lambda: refresh_benchmark.apply_async())

    return benchmark_request(enqueue=enqueue, retry=retry)


@shared_task(
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_agreement_pairs(dataset_id: int, metric: str) -> str:
    """Compute the stored pairs behind one metric's agreement on a dataset (its whole pair protocol)."""
    from metrics_bridge.services.agreement_pairs_store import agreement_pairs_compute

    return agreement_pairs_compute(dataset_id=dataset_id, metric=metric)


def request_agreement_pairs(*, dataset, metric: str) -> bool:
    """Have a worker compute the pairs page's rows when they are missing or stale; True when sent now."""
    from metrics_bridge.services.agreement_pairs_store import agreement_pairs_request

    def enqueue() -> None:
        if runs_execute_eagerly():
            compute_agreement_pairs.apply_async(args=[dataset.pk, metric])
        else:
            transaction.on_commit(lambda: compute_agreement_pairs.apply_async(args=[dataset.pk, metric]))

    return agreement_pairs_request(dataset=dataset, metric=metric, enqueue=enqueue)


# --- Sensitivity reports ---------------------------------------------------------------------------


#: a whole dataset scored by every metric several times over: longer than a chunk may take
SENSITIVITY_TIME_LIMIT_SECONDS = 6 * 3600


@shared_task(acks_late=True, reject_on_worker_lost=True, max_retries=0, time_limit=SENSITIVITY_TIME_LIMIT_SECONDS)
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


# --- Worker lifecycle ---------------------------------------------------------------------------


class Heartbeat(threading.Thread):
    """In the worker's main process: writes the heartbeat row and recovers lost chunks every period.

    At start-up it re-sends every pending chunk of an active run sent before this process started (a
    run whose worker died resumes when a worker returns; chunks sent since then are in the broker's
    queue for this worker, and sending them twice would only add work); later it re-sends pending
    chunks only while this worker is idle, which means their messages are gone (a broker restarted
    without persistence, a worker killed after taking a message). Leases that expired are released or
    failed on every beat.
    """

    def __init__(self, *, name: str, broker: str, period: float):
        super().__init__(name="captioneval-heartbeat", daemon=True)
        self.worker_name, self.broker, self.period = name, broker, period
        self.started_at = timezone.now()
        self.stopping = threading.Event()
        self.last_busy = time.monotonic()

    def run(self) -> None:
        first = True
        while not self.stopping.is_set():
            try:
                worker_heartbeat_beat(
                    name=self.worker_name, pid=os.getpid(), broker=self.broker, started_at=self.started_at
                )
                chunks_recover(enqueue=enqueue_chunks, resend_pending_before=self._resend_before(first))
                first = False
            except DatabaseError as error:  # database restarting or connection terminated: try again next period
                log_event(
                    logger, "heartbeat_failed", level=logging.WARNING, worker=self.worker_name, error=str(error)[:300]
                )
                connection.close()
            except Exception as error:  # never let the heartbeat die silently
                log_event(
                    logger,
                    "heartbeat_failed",
                    level=logging.ERROR,
                    worker=self.worker_name,
                    error=f"{type(error).__name__}: {error}"[:300],
                )
            self.stopping.wait(self.period)
        close_old_connections()

    def _resend_before(self, first: bool):
        """Cut-off for re-sending pending chunks: all of them at start-up; later only while this worker is idle.

        Idle means no chunk claimed by this worker for a while (read from the chunk rows, not from Celery's
        in-memory state, which a lost broker connection can leave stale). An idle worker with prefetch 1
        would have received any message still queued, so pending chunks sent before the cut-off are lost.
        """
        if first:
            return PROCESS_STARTED_AT
        if worker_has_running_chunk(name=self.worker_name):
            self.last_busy = time.monotonic()
            return None
        wait = max(2 * self.period, RESEND_AFTER_SECONDS)
        if time.monotonic() - self.last_busy < wait:
            return None
        return timezone.now() - timedelta(seconds=wait)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.period + 5)
        try:
            worker_heartbeat_remove(name=self.worker_name)
        except DatabaseError:
            pass
        finally:
            connection.close()


_heartbeat: Heartbeat | None = None


_warmed_up_pid: int | None = None


def warm_up_configured_metrics() -> None:
    """Start the slow resources of the metrics named in METRICS_WARM_UP, in the process that will score (once)."""
    global _warmed_up_pid
    names = list(settings.METRICS_WARM_UP)
    if not names or _warmed_up_pid == os.getpid():
        return
    _warmed_up_pid = os.getpid()
    unknown = sorted(set(names) - set(registry.all_metric_names()))
    if unknown:
        log_event(logger, "warm_up_unknown_metrics", level=logging.ERROR, setting="METRICS_WARM_UP", unknown=unknown)
    log_event(logger, "worker_warm_up", pid=os.getpid(), scorers=registry.warm_up_metrics(names))


@worker_init.connect
def _worker_init(sender=None, **kwargs) -> None:
    # Solo and thread pools score in this process: warm up now, while the worker finishes starting.
    # A prefork pool scores in child processes, which warm up in worker_process_init (a JVM started
    # here would be shared by every child through inherited pipes).
    pool = get_implementation(getattr(sender, "pool_cls", None) or "prefork")
    if not pool.__module__.endswith(".prefork"):
        warm_up_configured_metrics()


@worker_process_init.connect
def _worker_process_init(**kwargs) -> None:
    # Each prefork child (and the solo pool's process, already warmed up in worker_init).
    warm_up_configured_metrics()


@worker_ready.connect
def _worker_ready(sender=None, **kwargs) -> None:
    global _heartbeat
    name = getattr(sender, "hostname", None) or f"worker-{os.getpid()}"
    _heartbeat = Heartbeat(name=name, broker=current_broker(), period=settings.METRICS_WORKER_HEARTBEAT_SECONDS)
    _heartbeat.start()
    log_event(logger, "worker_ready", worker=name, pid=os.getpid(), broker=current_broker())


@worker_shutdown.connect
def _worker_shutdown(sender=None, **kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
        log_event(logger, "worker_stopped", worker=_heartbeat.worker_name, pid=os.getpid())


# --- Captioning through a model's API ("Evaluate a model") ------------------------------------------------

#: a dataset captioned clip by clip through an API can take hours
CAPTIONING_TIME_LIMIT_SECONDS = 24 * 3600


@shared_task(acks_late=True, reject_on_worker_lost=True, max_retries=0, time_limit=CAPTIONING_TIME_LIMIT_SECONDS)
def generate_captions(job_id: int) -> str:
    """Caption a job's clips, file the answers as its system, and queue the metric run that scores them.
    Safe to deliver twice: the job is claimed first (a second delivery finds it taken while its heartbeat lives)."""
    from metrics_bridge.services.captioning import (
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
