"""Real Redis and Celery worker processes for tests that need the real broker or the embedded one."""

import shutil
import socket
import subprocess
import time
from pathlib import Path

from django.db import connection

from common.broker import EMBEDDED_BROKER_URL, embedded_broker_options
from metrics_bridge.worker_process import WorkerProcess

__all__ = ["WorkerProcess", "free_port", "start_redis_server", "test_database_url", "worker_env"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, *, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start_redis_server(port: int | None = None) -> tuple[str, subprocess.Popen] | None:
    """A throwaway redis-server on a free (or the given) loopback port, or None when the binary is missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = port or free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
    except RuntimeError:
        process.kill()
        raise
    return f"redis://127.0.0.1:{port}/0", process


def test_database_url() -> str:
    """The URL of the database this test runs on, for the worker process."""
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings['NAME']}"
    host = f"{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}"
    return f"postgresql://{settings['USER']}:{settings['PASSWORD']}@{host}/{settings['NAME']}"


def worker_env(*, broker_url: str | None, broker_dir: Path | None = None, **extra) -> dict:
    """Environment of a worker on the test database: Redis at `broker_url`, or the embedded broker in `broker_dir`."""
    env = {
        "DATABASE_URL": test_database_url(),
        "CELERY_VISIBILITY_TIMEOUT": "5",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "METRICS_WORKER_HEARTBEAT_SECONDS": "1",
        # A killed worker's chunk becomes claimable again after 3 s instead of a minute.
        "METRICS_CHUNK_LEASE_SECONDS": "3",
        # Normal priority: the suite's other process keeps a core busy at normal priority, and a lowered worker would
        # make these tests' time limits depend on it (tests/operations/test_worker_priority.py checks the lowering).
        "WORKER_NICENESS": "0",
        **{key: str(value) for key, value in extra.items()},
    }
    if broker_url:
        env["REDIS_URL"] = broker_url
    else:
        env["REDIS_URL"] = ""
        env["CELERY_BROKER_DIR"] = str(broker_dir)
    return env


def embedded_broker_conf(folder: Path) -> dict:
    """Celery settings (CELERY_ namespace) pointing this process at the embedded broker in `folder`."""
    return {
        "CELERY_BROKER_URL": EMBEDDED_BROKER_URL,
        "CELERY_BROKER_TRANSPORT_OPTIONS": embedded_broker_options(folder),
        "CELERY_RESULT_BACKEND": None,
    }
