"""Celery application: Redis when REDIS_URL is set, eager execution otherwise."""

import logging
import os

from celery import Celery
from celery.signals import celeryd_init, worker_process_init, worker_ready

from config.worker_resources import worker_resources_apply

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("captioneval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_applied: dict = {}


@celeryd_init.connect
def _lower_worker_priority(**kwargs) -> None:
    # Here, in the module `celery -A config` imports, so that every worker does it however it was started (scripts/run,
    # compute_metrics' temporary worker, scripts/stack, docker-compose), before it loads its tasks and their libraries.
    _applied.update(worker_resources_apply())


@worker_process_init.connect
def _lower_child_priority(**kwargs) -> None:
    # A prefork child inherits the nice value and the variables; the libraries it loads are capped again to be sure.
    _applied.update(worker_resources_apply())


@worker_ready.connect
def _report_worker_resources(sender=None, **kwargs) -> None:
    from common.structured_log import log_event

    log_event(logging.getLogger("captioneval.workers"), "worker_resources", pid=os.getpid(), **_applied)
