"""A metric run started on /metrics/ returns at once and its progress bar moves while a real worker scores it."""

import pytest

from metrics_bridge.models import MetricRun
from metrics_bridge.services.runs import runs
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker
from tests.chunk_gate import ChunkGate
from tests.metrics_bridge.test_metric_runs_worker import make_dataset, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_run_progress_moves_live_on_the_embedded_broker(
    page_for, live_server, make_user, embedded_celery, artifacts, monkeypatch, tmp_path
):
    # Given a worker process on the embedded broker whose chunks wait at a gate the test opens
    # (tests/chunk_gate.py), and a dataset of 12 chunks
    monkeypatch.setattr(runs, "CHUNK_SIZE", 2)
    dataset = make_dataset(clips=24)
    gate = ChunkGate(tmp_path / "gate")
    worker = embedded_celery(gate=gate)
    wait_for(lambda: live_workers(broker=current_broker()), timeout=120, worker=worker, what="worker heartbeat")
    page = page_for(make_user("metrics-admin", staff=True))
    page.goto(f"{live_server.url}/metrics/", timeout=90_000)  # the first view in this process imports the scorers
    page.wait_for_function(
        "document.querySelector('#workers').innerText.includes('1 worker available')", timeout=60_000
    )
    page.screenshot(path=str(artifacts / "metrics_home_worker_available.png"), full_page=True)

    # When the admin starts a ROUGE_L run
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.check("input[name='metrics'][value='ROUGE_L']")
    with page.expect_navigation():
        page.click("button.primary")
    run = MetricRun.objects.get()
    assert page.url.endswith(f"/metrics/runs/{run.pk}/")
    # the page answered without waiting for the run: no chunk may be scored yet, and none was
    assert run.chunks_total == 12 and MetricRun.objects.get().chunks_done == 0

    # Then the bar moves without reloading: exactly 2 of 12, then exactly 7 of 12, then done
    def progress() -> int:
        return int(page.get_attribute("#run-progress", "value"))

    for allowed, shot in ((2, "metric_run_progress_1.png"), (7, "metric_run_progress_2.png")):
        gate.allow(allowed)
        page.wait_for_function(f"+document.querySelector('#run-progress').value >= {allowed}", timeout=90_000)
        assert progress() == allowed and page.inner_text("#run-count") == f"{allowed}/12"
        page.screenshot(path=str(artifacts / shot), full_page=True)
    gate.open()
    page.wait_for_function("document.querySelector('#run-status').dataset.status === 'done'", timeout=90_000)
    assert page.inner_text("#run-count") == "12/12"
    worker.stop()
