"""A run whose worker stopped sending heartbeats: `compute_metrics --wait` says so within a minute and a temporary
worker finishes the run; the run page names the silent worker."""

import os
import queue
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from metrics_bridge.models import MetricRun, MetricScore, WorkerHeartbeat
from metrics_bridge.selectors.runs import run_activity
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker
from tests.celery_worker import worker_env
from tests.chunk_gate import ChunkGate
from tests.metrics_bridge.test_metric_runs_worker import make_dataset, wait_for

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.db_specific
def test_compute_metrics_wait_says_its_worker_stopped_and_a_temporary_worker_finishes_the_run(
    embedded_celery, tmp_path
):
    # Given a standing worker (as ./scripts/run's) that takes the run's first chunk and holds it at the gate
    dataset = make_dataset(clips=4)
    gate = ChunkGate(tmp_path / "gate")
    gate.allow(0)
    standing = embedded_celery(gate=gate)
    wait_for(lambda: live_workers(broker=current_broker()), timeout=60, worker=standing, what="worker heartbeat")
    env = {**os.environ, **worker_env(broker_url=None, broker_dir=tmp_path / "broker")}
    command = subprocess.Popen(
        [sys.executable, "manage.py", "compute_metrics", "--dataset", dataset.name, "--metrics", "ROUGE_L", "--wait"],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put((time.monotonic(), line)) for line in command.stdout], daemon=True
    ).start()
    try:
        gate.wait_until_waiting(1, worker=standing)
        # When that worker dies (SIGKILL: its heartbeat row stays, and goes stale)
        standing.kill()
        killed = time.monotonic()
        command.wait(timeout=240)
    finally:
        if command.poll() is None:
            command.kill()
    output = []
    while not lines.empty():
        output.append(lines.get())
    console = "".join(line for _, line in output)
    assert command.returncode == 0, console
    # Then the command said so within a minute, started a temporary worker, and the run was finished by it
    [(said_at, said)] = [(at, line) for at, line in output if "stopped sending heartbeats" in line]
    assert said.startswith("the worker(s) of this run (test-worker-0@localhost) stopped sending heartbeats"), console
    assert said_at - killed < 60, console
    assert "started a temporary worker to finish the run" in console
    run = MetricRun.objects.get()
    assert run.status == MetricRun.Status.DONE and f"metric run {run.pk} done" in console
    assert MetricScore.objects.filter(metric="ROUGE_L", run=run).exists()


@pytest.mark.django_db
def test_the_run_page_names_the_worker_that_stopped_sending_heartbeats():
    run = metric_run_create(dataset=make_dataset(clips=2), metric_names=["ROUGE_L"])
    assert run_activity(run=run, workers=[], eager=False).waiting.startswith(
        "No worker is available: the run waits until one starts"
    )
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        name="run-worker-1@host",
        pid=1,
        broker=current_broker(),
        started_at=now - timedelta(hours=1),
        last_seen=now - timedelta(minutes=5),
    )
    waiting = run_activity(run=run, workers=live_workers(broker=current_broker()), eager=False).waiting
    assert waiting.startswith(
        "No worker is available: the last one (run-worker-1@host) stopped sending heartbeats 5\xa0minutes ago"
    ), waiting
