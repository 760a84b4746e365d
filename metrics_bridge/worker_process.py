"""Celery worker processes started by the app itself: the temporary worker of `compute_metrics --wait`.

`celery_worker_command` is also what scripts/run, scripts/stack and the tests start, so every
worker runs with the same options.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent


def celery_worker_command(*, name: str, pool: str = "solo", concurrency: int = 1, loglevel: str = "INFO") -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        f"--pool={pool}",
        f"--concurrency={concurrency}",
        "--prefetch-multiplier=1",
        "--without-gossip",
        "--without-mingle",
        f"--loglevel={loglevel}",
        f"--hostname={name}",
    ]


class WorkerProcess:
    """`celery -A config worker` in its own process group (so it can be stopped, or killed like a crash would)."""

    def __init__(self, *, name: str, log_path: Path, env: dict | None = None, pool: str = "solo", concurrency: int = 1):
        self.name, self.log_path, self.pool, self.concurrency = name, log_path, pool, concurrency
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                celery_worker_command(name=self.name, pool=self.pool, concurrency=self.concurrency),
                cwd=PROJECT_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group: no chance to ack, renew a lease or clean up."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 30) -> None:
        """Warm shutdown (SIGTERM: finish the current chunk), then SIGKILL after `timeout` seconds."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class WorkerOnDemand:
    """An `enqueue` for a command-line run: before the first chunk is sent, make sure a worker will take it.

    When no live worker listens on this broker (no fresh heartbeat), a temporary worker process is
    started for the run and stopped when the command leaves the `with` block. Eager Celery (tests)
    needs none. `say` reports what happens (the command's stdout).
    """

    def __init__(self, *, say=print, start_timeout: float = 120):
        self.say, self.start_timeout = say, start_timeout
        self.worker: WorkerProcess | None = None
        self._checked = False

    def __enter__(self) -> "WorkerOnDemand":
        return self

    def __exit__(self, *exc_info) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.say(f"temporary worker (pid {self.worker.pid}) stopped")

    def __call__(self, chunk_ids: list[int]) -> None:
        from metrics_bridge.tasks import enqueue_chunks

        if not self._checked:
            self._checked = True
            self._ensure_worker()
        enqueue_chunks(chunk_ids)

    def check_alive(self) -> None:
        """Raise when the temporary worker died (called while waiting, so a crash does not hang the command)."""
        if self.worker is not None and not self.worker.alive():
            raise RuntimeError(f"the temporary worker (pid {self.worker.pid}) exited:\n{self.worker.log_tail()}")

    def _ensure_worker(self) -> None:
        from metrics_bridge.services.workers import live_workers
        from metrics_bridge.tasks import current_broker, runs_execute_eagerly

        if runs_execute_eagerly():
            return
        broker = current_broker()
        alive = live_workers(broker=broker)
        if alive:
            self.say(f"{len(alive)} worker(s) listening on {broker}: {', '.join(worker.name for worker in alive)}")
            return
        log_path = Path(tempfile.gettempdir()) / f"captioneval-worker-{os.getpid()}.log"
        name = f"compute-metrics-{os.getpid()}@{os.uname().nodename}"
        self.worker = WorkerProcess(name=name, log_path=log_path).start()
        self.say(
            f"no live worker on {broker}: started a temporary worker for this run "
            f"(pid {self.worker.pid}, log {log_path})"
        )
        self._wait_for_heartbeat(name=name, broker=broker)

    def _wait_for_heartbeat(self, *, name: str, broker: str) -> None:
        from metrics_bridge.services.workers import live_workers

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if any(worker.name == name for worker in live_workers(broker=broker)):
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"the temporary worker did not start within {self.start_timeout:.0f} s:\n{self.worker.log_tail()}"
        )
