"""Celery tasks, by concept: metric runs (`runs`), dashboards and the benchmark (`dashboards`), agreement pages
(`agreement`), sensitivity reports (`sensitivity`), captioning through a model's API (`captioning`); a worker's
heartbeat thread (`heartbeat`) and what it does as it starts and stops (`worker_lifecycle`).

Celery's autodiscovery imports this package: importing every module here registers every task and connects the
worker's signals. Each task keeps the name it had when all of them lived in one module (`metrics_bridge.tasks.<name>`),
as messages already queued name it. Tasks call services, never the reverse.
"""

from metrics_bridge.tasks import (  # noqa: F401  registered by being imported
    agreement,
    captioning,
    dashboards,
    heartbeat,
    runs,
    sensitivity,
    worker_lifecycle,
)
