"""What a worker does as it starts and stops: warm up the configured metrics, run and stop its heartbeat."""

import logging
import os

from celery.concurrency import get_implementation
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown
from django.conf import settings

from common.structured_log import log_event
from metrics_bridge.scoring import registry
from metrics_bridge.tasks.heartbeat import Heartbeat
from metrics_bridge.tasks.runs import current_broker

logger = logging.getLogger("captioneval.workers")


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
