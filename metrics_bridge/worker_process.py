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


def celery_worker_command(
    *,
    name: str,
    pool: str = "solo",
    concurrency: int = 1,
    loglevel: str = "INFO",
    prefetch_multiplier: int = 1,
    include: list[str] | None = None,
) -> list[str]:
    """`include`: more modules the worker imports at start (Celery's --include; tests add their hooks so)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        f"--pool={pool}",
        f"--concurrency={concurrency}",
        f"--prefetch-multiplier={prefetch_multiplier}",
        "--without-gossip",
        "--without-mingle",
        f"--loglevel={loglevel}",
        f"--hostname={name}",
        *([f"--include={','.join(include)}"] if include else []),
    ]


class WorkerProcess:
    """`celery -A config worker` in its own process group (so it can be stopped, or killed like a crash would)."""

    def __init__(
        self,
        *,
        name: str,
        log_path: Path,
        env: dict | None = None,
        pool: str = "solo",
        concurrency: int = 1,
        prefetch_multiplier: int = 1,
        include: list[str] | None = None,
    ):
        self.name, self.log_path, self.pool, self.concurrency = name, log_path, pool, concurrency
        self.prefetch_multiplier, self.include = prefetch_multiplier, include
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                celery_worker_command(
                    name=self.name,
                    pool=self.pool,
                    concurrency=self.concurrency,
                    prefetch_multiplier=self.prefetch_multiplier,
                    include=self.include,
                ),
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
    """An `enqueue` for a command-line run that makes sure a worker will take the chunks it sends.

    When no live worker listens on this broker (no fresh heartbeat), a temporary worker process is
    started for the run and stopped when the command leaves the `with` block. Eager Celery (tests)
    needs none. `say` reports what happens (the command's stdout). `warm_up` names the metrics the
    run will compute: the temporary worker starts their slow resources (METEOR's JVM) as soon as it
    runs (METRICS_WARM_UP), so they load while the run is planned and the other metrics are scored.

    The worker is started by `ensure_worker()` (call it before planning, so the worker boots
    meanwhile) or else before the first chunk is sent. Chunks are sent without waiting for it:
    the broker keeps them, and `check_alive()` (the wait loop's watchdog) raises when the worker
    died or sent no heartbeat within `start_timeout` seconds. When the run went to workers that were
    alive at the start (`./scripts/run`'s), the watchdog looks at their heartbeats every
    WATCH_SECONDS: once none is alive it says so and starts a temporary worker, which takes over the
    run (the chunks a dead worker held are sent again when their leases run out), rather than
    waiting for a worker that may never come back.
    """

    #: Seconds a temporary worker has to send its first heartbeat before the command gives up on it.
    START_TIMEOUT = 120
    #: Seconds between looks at the heartbeats of the workers a run went to (a worker is dead three
    #: heartbeat periods after its last one: 30 s by default, so the command says so within a minute).
    WATCH_SECONDS = 5

    def __init__(self, *, say=print, start_timeout: float | None = None, warm_up: list[str] | None = None):
        self.say, self.warm_up = say, list(warm_up or [])
        self.start_timeout = self.START_TIMEOUT if start_timeout is None else start_timeout
        self.worker: WorkerProcess | None = None
        self._checked = False
        self._started_at = 0.0
        self._broker = ""
        self._heard_from = False
        self._watched: list[str] = []  # names of the live workers the run went to (none started here)
        self._watched_at = 0.0

    def __enter__(self) -> "WorkerOnDemand":
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        if self.worker is None:
            return
        if exc_type is None and self._idle():
            self._kill_idle_worker()
        else:
            self.worker.stop()
        self.say(f"temporary worker (pid {self.worker.pid}) stopped")

    def _idle(self) -> bool:
        from metrics_bridge.services.runs.workers import worker_has_running_chunk

        return not worker_has_running_chunk(name=self.worker.name)

    def _kill_idle_worker(self) -> None:
        """Stop a worker that has nothing to finish at once: Celery's warm shutdown of an idle worker takes
        2-4 s (its event loop notices the signal only after a 2 s poll, then joins the pool), a fifth of a
        small run. Its heartbeat row goes with it (else the next command would take it for a live worker);
        a chunk it claimed after the check above (another run's) is released and sent again right away."""
        from metrics_bridge.services.runs.chunks import chunks_recover, chunks_release_of_gone_worker
        from metrics_bridge.services.runs.workers import worker_heartbeat_remove
        from metrics_bridge.tasks.runs import enqueue_chunks

        self.worker.kill()
        worker_heartbeat_remove(name=self.worker.name)
        if chunks_release_of_gone_worker(name=self.worker.name):
            chunks_recover(enqueue=enqueue_chunks)

    def __call__(self, chunk_ids: list[int]) -> None:
        from metrics_bridge.tasks.runs import enqueue_chunks

        self.ensure_worker()
        enqueue_chunks(chunk_ids)

    def ensure_worker(self) -> None:
        """Start a temporary worker unless a live one listens on this broker (once; later calls do nothing)."""
        if self._checked:
            return
        self._checked = True
        from metrics_bridge.services.runs.workers import live_workers
        from metrics_bridge.tasks.runs import current_broker, runs_execute_eagerly

        if runs_execute_eagerly():
            return
        broker = current_broker()
        alive = live_workers(broker=broker)
        if alive:
            self.say(f"{len(alive)} worker(s) listening on {broker}: {', '.join(worker.name for worker in alive)}")
            self._broker, self._watched = broker, [worker.name for worker in alive]
            self._watched_at = time.monotonic()
            return
        self._start_temporary_worker(broker)
        self.say(
            f"no live worker on {broker}: started a temporary worker for this run "
            f"(pid {self.worker.pid}, log {self.worker.log_path})"
        )

    def _start_temporary_worker(self, broker: str) -> None:
        log_path = Path(tempfile.gettempdir()) / f"captioneval-worker-{os.getpid()}.log"
        name = f"compute-metrics-{os.getpid()}@{os.uname().nodename}"
        # No Django system checks in the worker: the command starting it runs them meanwhile.
        env = {"CELERY_SKIP_CHECKS": "1"}
        # Normal CPU priority unless configured: someone waits on this worker (a standing worker lowers itself so
        # that pages come first, config/worker_resources.py), and lowered on a busy machine it could not even send
        # its first heartbeat within start_timeout (the demo build of ./scripts/run starts one before the server).
        env["WORKER_NICENESS"] = os.environ.get("WORKER_NICENESS") or "0"
        if self.warm_up:
            env["METRICS_WARM_UP"] = ",".join(self.warm_up)
        # Two threads: while one waits on the METEOR JVM (its own process), the other scores in Python, so a
        # run uses both cores of a small machine (the planner sends the other scorers' chunks first, scored
        # while the JVM loads: metric_run_create's slow_resources_loading). With a polling broker (the
        # embedded one), a thread pool whose reserved messages are all taken waits up to 2 s before fetching
        # more: this worker, which exists for this run only, reserves more of them.
        self.worker = WorkerProcess(
            name=name, log_path=log_path, env=env, pool="threads", concurrency=2, prefetch_multiplier=16
        ).start()
        self._started_at, self._broker = time.monotonic(), broker

    def check_alive(self) -> None:
        """Raise when the temporary worker exited, or has not sent its first heartbeat within `start_timeout`;
        take over with a temporary worker when the workers the run went to stopped sending heartbeats."""
        if self.worker is None:
            if self._watched and time.monotonic() - self._watched_at >= self.WATCH_SECONDS:
                self._watch_standing_workers()
            return
        if not self.worker.alive():
            raise RuntimeError(f"the temporary worker (pid {self.worker.pid}) exited:\n{self.worker.log_tail()}")
        if not self._heard_from:
            from metrics_bridge.services.runs.workers import live_workers

            self._heard_from = any(worker.name == self.worker_name for worker in live_workers(broker=self._broker))
            if not self._heard_from and time.monotonic() - self._started_at > self.start_timeout:
                raise RuntimeError(
                    f"the temporary worker did not start within {self.start_timeout:.0f} s:\n{self.worker.log_tail()}"
                )

    @property
    def started_worker(self) -> bool:
        """Whether a temporary worker was started (its slow resources are loading while the run begins)."""
        return self.worker is not None

    @property
    def worker_name(self) -> str:
        return self.worker.name if self.worker else ""

    def _watch_standing_workers(self) -> None:
        from django.utils import timezone

        from metrics_bridge.services.runs.workers import live_workers, workers_last_seen

        self._watched_at = time.monotonic()
        if live_workers(broker=self._broker):
            return
        last_seen = workers_last_seen(names=self._watched)
        if last_seen:
            silent = (timezone.now() - max(last_seen.values())).total_seconds()
            stopped = f"stopped sending heartbeats {silent:.0f} s ago (exited or hung)"
        else:
            stopped = "shut down"
        self.say(f"the worker(s) of this run ({', '.join(self._watched)}) {stopped}: no live worker on {self._broker}")
        self._watched = []
        self._start_temporary_worker(self._broker)
        self.say(
            f"started a temporary worker to finish the run (pid {self.worker.pid}, log {self.worker.log_path}); "
            "the chunks the lost worker held are sent again when their leases run out"
        )
