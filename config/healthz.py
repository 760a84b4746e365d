"""GET /healthz: is this deployment able to work? Database, broker, storage and a live worker.

Answers JSON `{"status": "ok"|"fail", "checks": {name: {"ok": bool, ...}}}` with 200 when every
check asked for passes and 503 otherwise. `?skip=worker` leaves a check out (the web container's
own health in docker-compose, which must not flap when the worker restarts). It names kinds
and timings, never hosts, URLs or error texts (which may carry credentials); the class of a
failure's exception is enough to start looking.

Served by a middleware placed first, so load balancers and compose probes can ask over plain
HTTP with any Host header (before ALLOWED_HOSTS and the https redirect apply).

Probes come every few seconds, from every load balancer, also while the workers keep
both cores and the database busy: the database, broker connection and storage are asked on every probe
(one round trip each, the least that proves them), while the worker check (its heartbeat and chunk-queue
queries read tables that grow with the runs) is shared by every web process for CHECK_REUSE_SECONDS
through the shared cache; its `age_seconds` says how old the figures are.
"""

import hashlib
import os
import time
from pathlib import Path

from django.conf import settings
from django.http import JsonResponse

CHECKS = ("database", "broker", "storage", "worker")
HEALTHZ_PATHS = {"/healthz", "/healthz/"}
#: how long the worker check's result is reused: well under the worker heartbeat's "alive" window and any
#: probe's interval, so a worker that died still fails the probe that follows within seconds
CHECK_REUSE_SECONDS = 5


def _timed(check) -> dict:
    started = time.monotonic()
    try:
        result = check()
    except Exception as error:  # any failure is a failed check; its class says what kind
        result = {"ok": False, "error": type(error).__name__}
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


def check_database() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "kind": connection.vendor}


def check_broker() -> dict:
    from common.broker import is_embedded_broker
    from config.celery import app

    url = app.conf.broker_url or ""
    if is_embedded_broker(url):
        folder = Path(app.conf.broker_transport_options["data_folder_in"])
        return {"ok": folder.is_dir() and os.access(folder, os.W_OK), "kind": "filesystem"}
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=2)
    return {"ok": True, "kind": url.split(":", 1)[0]}


def check_storage() -> dict:
    from django.core.files.storage import default_storage

    if settings.USES_S3_STORAGE:
        # A HEAD on a key that needs not exist: proves the endpoint, the credentials and the bucket answer.
        default_storage.exists("healthz-probe")
        return {"ok": True, "kind": "s3"}
    media = Path(settings.MEDIA_ROOT)
    writable_folder = media if media.exists() else media.parent
    return {"ok": writable_folder.is_dir() and os.access(writable_folder, os.W_OK), "kind": "filesystem"}


def _broker_identity() -> str:
    """This process's broker as worker heartbeats name it (metrics_bridge.tasks.runs.current_broker, without importing
    the tasks module and the metric code it loads)."""
    from common.broker import broker_identity
    from config.celery import app

    return broker_identity(app.conf.broker_url, app.conf.broker_transport_options)


def _worker_state(broker: str) -> dict:
    from metrics_bridge.services.runs.workers import chunk_queue_counts, live_workers

    workers = live_workers(broker=broker)
    queue = chunk_queue_counts()
    return {
        "ok": bool(workers),
        "alive": len(workers),
        "last_seen": max(worker.last_seen.timestamp() for worker in workers) if workers else None,
        "chunks": {"queued": queue.queued, "running": queue.running, "stalled": queue.stalled, "failed": queue.failed},
        "read_at": time.time(),
    }


def worker_check_key(broker: str) -> str:
    """The shared cache's key of the worker check's last result (per broker: only its workers count)."""
    return f"healthz:worker:{hashlib.sha256(broker.encode()).hexdigest()[:16]}"


def check_worker() -> dict:
    from django.core.cache import cache

    broker = _broker_identity()
    state = cache.get(worker_check_key(broker))
    if state is None:
        state = _worker_state(broker)
        cache.set(worker_check_key(broker), state, CHECK_REUSE_SECONDS)
    now = time.time()
    last_seen = state["last_seen"]
    return {
        "ok": state["ok"],
        "alive": state["alive"],
        "last_heartbeat_seconds": round(now - last_seen, 1) if last_seen is not None else None,
        "chunks": dict(state["chunks"]),
        "age_seconds": round(max(now - state["read_at"], 0.0), 1),
    }


CHECK_FUNCTIONS = {"database": check_database, "broker": check_broker, "storage": check_storage, "worker": check_worker}


def health_report(*, skip: set[str]) -> dict:
    checks = {name: _timed(CHECK_FUNCTIONS[name]) for name in CHECKS if name not in skip}
    if "worker" in checks and not checks.get("database", {"ok": True})["ok"]:
        checks["worker"] = {"ok": False, "error": "database unavailable", "ms": 0.0}
    return {"status": "ok" if all(check["ok"] for check in checks.values()) else "fail", "checks": checks}


class HealthCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path not in HEALTHZ_PATHS:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return JsonResponse({"error": "use GET"}, status=405, headers={"Allow": "GET, HEAD"})
        skip = {name.strip() for name in request.GET.get("skip", "").split(",") if name.strip()}
        unknown = skip - set(CHECKS)
        if unknown:
            return JsonResponse({"error": f"unknown check(s) in skip: {', '.join(sorted(unknown))}"}, status=400)
        report = health_report(skip=skip)
        response = JsonResponse(report, status=200 if report["status"] == "ok" else 503)
        response["Cache-Control"] = "no-store"
        return response
