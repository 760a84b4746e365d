"""A metric run started on /metrics/ returns at once and its progress bar moves while a real worker scores it."""

import time

import pytest

from metrics_bridge.models import MetricRun
from metrics_bridge.services import runs
from metrics_bridge.services.workers import live_workers
from metrics_bridge.tasks import current_broker
from tests.metrics_bridge.test_metric_runs_worker import make_dataset, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_run_progress_moves_live_on_the_embedded_broker(
    page_for, live_server, make_user, embedded_celery, artifacts, monkeypatch
):
    # Given a worker process on the embedded broker, slowed to ~0.7 s per chunk, and a dataset of 12 chunks
    monkeypatch.setattr(runs, "CHUNK_SIZE", 2)
    dataset = make_dataset(clips=24)
    worker = embedded_celery(METRICS_CHUNK_DELAY_MS=700)
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
    clicked = time.monotonic()
    with page.expect_navigation():
        page.click("button.primary")
    answered = time.monotonic() - clicked
    run = MetricRun.objects.get()
    assert page.url.endswith(f"/metrics/runs/{run.pk}/")
    assert answered < 5 and run.chunks_total == 12

    # Then the bar moves without reloading: two moments with different values, then the run is done
    def progress() -> int:
        return int(page.get_attribute("#run-progress", "value"))

    page.wait_for_function("+document.querySelector('#run-progress').value >= 2", timeout=60_000)
    first = progress()
    first_seen = time.monotonic() - clicked
    page.screenshot(path=str(artifacts / "metric_run_progress_1.png"), full_page=True)
    page.wait_for_function(f"+document.querySelector('#run-progress').value >= {min(first + 4, 11)}", timeout=60_000)
    second = progress()
    page.screenshot(path=str(artifacts / "metric_run_progress_2.png"), full_page=True)
    assert first < second < 12
    page.wait_for_function("document.querySelector('#run-status').dataset.status === 'done'", timeout=60_000)
    assert page.inner_text("#run-count") == "12/12"
    print(f"page answered in {answered:.2f} s; first progress ({first}/12) shown {first_seen:.1f} s after the click")
    worker.stop()
