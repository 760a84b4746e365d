"""Real worker processes on the embedded (filesystem) broker of the default setup, killed like crashes would.

The embedded broker delivers again the messages a killed worker held unacknowledged (its claims go back to the
queue when the next worker starts), and the workers' leases, attempt cap and start-up/heartbeat sweep recover the
chunks: a chunk is scored once whichever message reaches it.
"""

import os
import subprocess
import sys
import time

import pytest

from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.services.runs import runs
from metrics_bridge.services.runs.runs import metric_run_create, metric_run_dispatch
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker, enqueue_chunks
from tests.celery_worker import worker_env
from tests.chunk_gate import ChunkGate
from tests.metrics_bridge.test_metric_runs_worker import expected_values, make_dataset, stored_values, wait_for

# db_specific: worker processes on the default setup (SQLite file and the embedded broker)
pytestmark = [pytest.mark.slow, pytest.mark.db_specific]

LEASE = {"METRICS_CHUNK_LEASE_SECONDS": 2}


def run_status(run: MetricRun) -> str:
    return MetricRun.objects.get(pk=run.pk).status


def test_a_run_on_the_embedded_broker_is_scored_by_a_worker_process_with_a_heartbeat(embedded_celery):
    dataset = make_dataset(clips=6)
    worker = embedded_celery(**LEASE)
    wait_for(lambda: live_workers(broker=current_broker()), timeout=60, worker=worker, what="worker heartbeat")
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    started = time.monotonic()
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)
    wait_for(lambda: run_status(run) == MetricRun.Status.DONE, timeout=60, worker=worker, what="run done")
    print(f"run of 1 chunk done {time.monotonic() - started:.2f} s after dispatch")
    assert stored_values(run, "ROUGE_L") == pytest.approx(expected_values(run, "ROUGE_L"))
    [heartbeat] = live_workers(broker=current_broker())
    assert heartbeat.name == "test-worker-0@localhost" and heartbeat.pid == worker.pid
    worker.stop()
    assert not live_workers(broker=current_broker())  # a clean shutdown removes its heartbeat


def test_a_run_whose_worker_died_resumes_when_a_worker_returns(embedded_celery, monkeypatch, tmp_path):
    # Given a run of 8 chunks and a worker that scores two of them and has claimed the third (held at the gate)
    monkeypatch.setattr(runs, "CHUNK_SIZE", 2)
    dataset = make_dataset(clips=16)
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    gate = ChunkGate(tmp_path / "gate")
    gate.allow(2)
    first = embedded_celery(gate=gate, **LEASE)
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)
    gate.wait_until_waiting(3, worker=first)
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).chunks_done == 2, timeout=90, worker=first, what="2 chunks")
    # When it is killed (SIGKILL) in the middle of that chunk
    first.kill()
    run.refresh_from_db()
    assert run.chunks_done == 2 and run.chunks.filter(status=MetricRunChunk.Status.RUNNING).count() == 1
    # The message it held goes back to the queue when the next worker starts (and the chunk's lease runs out)
    # When a new worker starts
    second = embedded_celery(**LEASE)
    wait_for(lambda: run_status(run) == MetricRun.Status.DONE, timeout=90, worker=second, what="run done after restart")
    # Then every request was scored exactly once, with the right values
    run.refresh_from_db()
    assert run.chunks_done == run.chunks_total == 8
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == 16
    assert stored_values(run, "ROUGE_L") == pytest.approx(expected_values(run, "ROUGE_L"))


def test_a_chunk_that_kills_its_worker_every_time_fails_after_three_attempts(embedded_celery, monkeypatch, tmp_path):
    # Given three chunks, the middle one "poisoned": every worker that takes it dies (SIGKILL, like the OOM killer).
    # The gate lets the healthy chunks through and holds the poisoned one, where the test kills its worker.
    monkeypatch.setattr(runs, "CHUNK_SIZE", 2)
    dataset = make_dataset(clips=6)
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    poisoned = run.chunks.get(index=1)
    gate = ChunkGate(tmp_path / "gate")
    gate.open()
    gate.hold(poisoned.pk)
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)
    for attempt in (1, 2, 3):
        worker = embedded_celery(gate=gate, **LEASE)
        gate.wait_for_chunk(poisoned.pk, attempts=attempt, worker=worker)
        worker.kill()
    # The third lease runs out; a healthy worker's recovery sweep fails the chunk (attempt cap reached)
    healthy = embedded_celery(**LEASE)
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).is_finished, timeout=120, worker=healthy, what="run finished")

    run.refresh_from_db()
    poisoned.refresh_from_db()
    assert gate.chunk_arrivals(poisoned.pk) == 3
    assert (poisoned.status, poisoned.attempts) == (MetricRunChunk.Status.FAILED, 3)
    assert "gave up after 3 attempt(s)" in poisoned.error
    assert run.status == MetricRun.Status.DONE_WITH_ERRORS
    assert run.error.startswith("1 chunk(s) failed: ROUGE_L chunk 1 (3 attempt(s))")
    assert set(run.chunks.exclude(pk=poisoned.pk).values_list("status", flat=True)) == {MetricRunChunk.Status.DONE}
    assert not MetricRunChunk.objects.filter(status=MetricRunChunk.Status.RUNNING).exists()
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == 4  # the two healthy chunks, once each


def test_compute_metrics_wait_starts_a_temporary_worker_when_none_is_alive(embedded_celery, tmp_path):
    dataset = make_dataset(clips=4)
    env = {**os.environ, **worker_env(broker_url=None, broker_dir=tmp_path / "broker")}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "compute_metrics",
            "--dataset",
            dataset.name,
            "--metrics",
            "ROUGE_L,BLEU_4",
            "--wait",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"compute_metrics --wait with a temporary worker: {time.monotonic() - started:.1f} s")
    assert "no live worker on filesystem:" in result.stdout and "started a temporary worker" in result.stdout
    assert "progress 2/2" in result.stdout and "temporary worker (pid" in result.stdout
    run = MetricRun.objects.get()
    assert run.status == MetricRun.Status.DONE
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == 4
    assert not live_workers(broker=current_broker())  # stopped afterwards
