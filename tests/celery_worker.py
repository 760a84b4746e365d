"""Start real Redis and Celery worker processes for tests that need the real broker."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis_server() -> tuple[str, subprocess.Popen] | None:
    """A throwaway redis-server on a free loopback port, or None when the binary is missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return url, process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("redis-server did not start")


def test_database_url() -> str:
    """The URL of the database this test runs on, for the worker process."""
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings['NAME']}"
    return f"postgresql://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"


class WorkerProcess:
    """`celery -A config worker` in its own process group, so the test can kill it like a crash would."""

    def __init__(self, *, broker_url: str, log_path: Path, extra_env: dict | None = None):
        self.broker_url = broker_url
        self.log_path = log_path
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        env = {
            **os.environ,
            "DATABASE_URL": test_database_url(),
            "REDIS_URL": self.broker_url,
            "CELERY_VISIBILITY_TIMEOUT": "5",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            **self.extra_env,
        }
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--concurrency=1",
             "--prefetch-multiplier=1", "--without-gossip", "--without-mingle", "--loglevel=INFO"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: no chance to ack or clean up."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
