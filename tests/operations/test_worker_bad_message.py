"""A Celery worker on the embedded broker that meets files that are not messages: it logs them, keeps them in the
broker's bad/ folder and goes on scoring (with kombu's own filesystem transport, such a file killed the worker)."""

import pytest

from metrics_bridge.models import MetricRun
from metrics_bridge.services.runs.runs import metric_run_create, metric_run_dispatch
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker, enqueue_chunks
from tests.metrics_bridge.test_metric_runs_worker import expected_values, make_dataset, stored_values, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.db_specific]


def test_a_worker_sets_bad_message_files_aside_and_goes_on(embedded_celery, tmp_path):
    dataset = make_dataset(clips=4)
    worker = embedded_celery()
    wait_for(lambda: live_workers(broker=current_broker()), timeout=60, worker=worker, what="worker heartbeat")
    queue = tmp_path / "broker" / "queue"
    # In Celery's queue, before the run's messages: an empty file (what kombu's producer left while writing) and
    # a cut-short one
    planted = {"000000000000001_empty.celery.msg": b"", "000000000000002_cut.celery.msg": b'{"body": "eyJh'}
    for name, content in planted.items():
        (queue / name).write_bytes(content)
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)

    wait_for(
        lambda: MetricRun.objects.get(pk=run.pk).status == MetricRun.Status.DONE,
        timeout=90,
        worker=worker,
        what="run done",
    )
    assert worker.alive()
    assert stored_values(run, "ROUGE_L") == pytest.approx(expected_values(run, "ROUGE_L"))
    bad = tmp_path / "broker" / "bad"
    assert {path.name: path.read_bytes() for path in bad.iterdir()} == planted  # kept for inspection
    log = worker.log_path.read_text()
    for name in planted:
        assert f'"event": "broker_bad_message", "file": "{bad / name}"' in log, worker.log_tail()
