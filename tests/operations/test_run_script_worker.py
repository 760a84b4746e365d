"""`./scripts/run` keeps its worker: one that dies is started again (said on the console), each start has its own log
(the dead worker's is kept as logs/worker.log.1), and the address it serves is written for `demo --reset-passwords`."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.operations.test_run_script import PROJECT, RunScript, command_line, descendants, free_port

pytestmark = pytest.mark.slow
LOGS = PROJECT / "logs"


def worker_pids(script_pid: int) -> list[int]:
    return [pid for pid in descendants(script_pid) if "celery -A config worker" in command_line(pid)]


def wait_until(predicate, *, timeout: float, what: str, run: RunScript | None = None):
    """predicate()'s first true value, polled until `timeout`; else fail naming `what` (and the run's console)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    console = "\n".join(run.lines) if run is not None else ""
    raise AssertionError(f"no {what} within {timeout} s:\n{console}")


def test_a_worker_that_dies_is_started_again_and_its_log_is_kept(tmp_path):
    port = free_port()
    run = RunScript(tmp_path, port)
    try:
        run.wait_for("Sign in at")
        assert (LOGS / "served-url").read_text() == f"http://127.0.0.1:{port}/\n"
        [first] = wait_until(lambda: worker_pids(run.process.pid), timeout=30, what="worker process", run=run)
        log = LOGS / "worker.log"
        wait_until(lambda: " ready." in log.read_text(errors="replace"), timeout=120, what="worker ready", run=run)
        first_log = log.read_text(errors="replace")

        # When the worker dies as the OOM killer would kill it
        os.kill(first, signal.SIGKILL)

        exited = run.wait_for("The worker exited", timeout=30)
        assert exited.startswith("The worker exited (status 137, after "), exited
        again = run.wait_for("Worker started again", timeout=90)
        [second] = wait_until(lambda: worker_pids(run.process.pid), timeout=30, what="new worker", run=run)
        assert second != first and f"pid {second}" in again
        # the dead worker's log is kept beside the new one
        assert (LOGS / "worker.log.1").read_text(errors="replace").startswith(first_log)
        wait_until(lambda: " ready." in log.read_text(errors="replace"), timeout=120, what="new worker ready", run=run)
        assert not log.read_text(errors="replace").startswith(first_log)
        # and the new worker is the one /healthz counts (its heartbeat)
        url = f"http://127.0.0.1:{port}/healthz"
        wait_until(lambda: requests.get(url, timeout=30).status_code == 200, timeout=90, what="live worker", run=run)
    finally:
        lines = run.stop()
    assert sum("The worker exited" in line for line in lines) == 1, "\n".join(lines)


def test_worker_logs_rotate_and_keep_five(tmp_path):
    # The script's rotation, run on its own in a folder of the test's: worker.log -> .1 -> ... -> .5, the oldest gone
    script = Path(PROJECT / "scripts" / "run").read_text()
    rotation = script[script.index("  for n in 4 3 2 1; do") : script.index("  EVENT_LOG_LEVEL=INFO $detach")]
    (tmp_path / "logs").mkdir()
    for generation in range(7):
        (tmp_path / "logs" / "worker.log").write_text(f"start {generation}\n")
        subprocess.run(["bash", "-euc", rotation], cwd=tmp_path, check=True)
    kept = {path.name: path.read_text() for path in (tmp_path / "logs").iterdir()}
    assert kept == {f"worker.log.{n}": f"start {7 - n}\n" for n in range(1, 6)}
