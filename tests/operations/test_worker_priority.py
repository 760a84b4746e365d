"""A Celery worker gives way to the web server: it runs at a lower CPU priority (its process and, when it leads its
session as under ./scripts/run, its session's autogroup) and its numeric libraries use at most WORKER_NUMERIC_THREADS
threads, so a page is not queued behind a background computation on a small machine."""

import json
from pathlib import Path

import pytest

from config.worker_resources import DEFAULT_NICENESS
from tests.operations.test_run_script import RunScript, command_line, descendants, free_port
from tests.operations.test_run_script_worker import wait_until, worker_pids
from tests.operations.worker_resources_probe import PROBE_FILE_VARIABLE

pytestmark = pytest.mark.slow


def niceness_of(pid: int) -> int:
    # /proc/<pid>/stat: "pid (command) state ..." then field 19 is the nice value (17th after the command)
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def autogroup_niceness_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().rsplit("nice", 1)[1])
    except OSError:  # a kernel without autogroups
        return None


def test_the_worker_of_scripts_run_runs_below_the_web_server(tmp_path):
    run = RunScript(tmp_path, free_port(), product_priority=True)
    try:
        run.wait_for("Sign in at")
        [worker] = wait_until(lambda: worker_pids(run.process.pid), timeout=30, what="worker process")
        web = [pid for pid in descendants(run.process.pid) if "gunicorn" in command_line(pid)]
        assert web, [command_line(pid) for pid in descendants(run.process.pid)]

        # The worker lowers itself as it starts (before it loads its tasks): wait for it, then compare with gunicorn
        wait_until(lambda: niceness_of(worker) == DEFAULT_NICENESS, timeout=120, what="lowered worker priority")
        assert [niceness_of(pid) for pid in web] == [0] * len(web)
        # scripts/run starts the worker in a session of its own: the CPU is shared between sessions' autogroups
        # first, so the worker's own nice value would not order it against gunicorn's session without this
        if autogroup_niceness_of(worker) is not None and Path("/proc/sys/kernel/sched_autogroup_enabled").exists():
            assert autogroup_niceness_of(worker) == DEFAULT_NICENESS
            assert {autogroup_niceness_of(pid) for pid in web} == {0}
    finally:
        run.stop()


def test_a_worker_caps_its_numeric_threads(transactional_db, tmp_path):
    # compute_metrics' temporary worker, scripts/stack and the tests start workers with this command
    from tests.celery_worker import WorkerProcess, worker_env

    probe = tmp_path / "probe.json"
    env = worker_env(
        broker_url=None,
        broker_dir=tmp_path / "broker",
        CELERY_SKIP_CHECKS="1",
        WORKER_NICENESS="7",
        WORKER_NUMERIC_THREADS="1",
        **{PROBE_FILE_VARIABLE: str(probe)},
    )
    worker = WorkerProcess(
        name="priority-probe@localhost",
        log_path=tmp_path / "worker.log",
        env=env,
        include=["tests.operations.worker_resources_probe"],
    ).start()
    try:
        wait_until(lambda: probe.exists() or not worker.alive(), timeout=180, what="worker probe")
        assert probe.exists(), worker.log_tail()
        report = json.loads(probe.read_text())
    finally:
        worker.stop(timeout=20)

    assert report["niceness"] == 7
    # torch and the BLAS/OpenMP pools loaded in the worker say so themselves; unconfigured, torch takes every core
    assert report["torch_threads"] == 1
    assert report["pools"] and set(report["pools"].values()) == {1}, report["pools"]


def test_the_temporary_worker_of_a_waiting_command_keeps_normal_priority(embedded_celery, tmp_path, monkeypatch):
    # compute_metrics --wait, the demo build: someone waits on it, and ./scripts/run builds the demo before serving
    from metrics_bridge.services.runs.workers import live_workers
    from metrics_bridge.tasks.runs import current_broker
    from metrics_bridge.worker_process import WorkerOnDemand
    from tests.celery_worker import worker_env

    for name, value in worker_env(broker_url=None, broker_dir=tmp_path / "broker").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WORKER_NICENESS")  # the tests' workers are set to 0; here the command decides
    said = []
    with WorkerOnDemand(say=said.append) as on_demand:
        on_demand.ensure_worker()
        assert on_demand.started_worker, said
        # its heartbeat comes after the worker set its priority (celeryd_init runs before the worker boots)
        wait_until(
            lambda: any(worker.name == on_demand.worker_name for worker in live_workers(broker=current_broker())),
            timeout=180,
            what="temporary worker heartbeat",
        )
        assert niceness_of(on_demand.worker.pid) == 0
