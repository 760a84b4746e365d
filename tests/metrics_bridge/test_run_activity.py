"""The run page says why a run waits and what it is doing; once done it hides Cancel and links its results."""

from datetime import timedelta

import pytest
from django.utils import timezone

from metrics_bridge.models import MetricRun, MetricRunChunk, WorkerHeartbeat
from metrics_bridge.selectors.runs import run_activity
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import current_broker, execute_metric_run
from tests.metrics_bridge.dashboard_data import clotho_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(shared_dir):
    return clotho_slice(shared_dir, name="activity", clips=4)


def worker(*, started_seconds_ago: float) -> WorkerHeartbeat:
    now = timezone.now()
    return WorkerHeartbeat.objects.create(
        name=f"w{started_seconds_ago}",
        pid=1,
        broker=current_broker(),
        started_at=now - timedelta(seconds=started_seconds_ago),
        last_seen=now,
    )


def test_without_a_worker_the_run_says_it_waits_for_one(dataset):
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    assert run_activity(run=run, workers=[], eager=False).waiting.startswith("No worker is available")


def test_a_run_queued_behind_another_names_it(dataset):
    first = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    second = metric_run_create(dataset=dataset, metric_names=["BLEU_4"])
    MetricRun.objects.filter(pk=second.pk).update(created_at=first.created_at + timedelta(seconds=1))
    second.refresh_from_db()
    waiting = run_activity(run=second, workers=[worker(started_seconds_ago=600)], eager=False).waiting
    assert waiting.startswith(f"Queued behind run #{first.pk} ({first.chunks_total} chunk")


def test_a_starting_worker_and_meteors_java_are_said(dataset):
    run = metric_run_create(dataset=dataset, metric_names=["METEOR"])
    fresh = worker(started_seconds_ago=5)
    assert "just started" in run_activity(run=run, workers=[fresh], eager=False).waiting
    chunk = run.chunks.first()
    MetricRunChunk.objects.filter(pk=chunk.pk).update(status=MetricRunChunk.Status.RUNNING)
    activity = run_activity(run=run, workers=[fresh], eager=False)
    assert activity.running == [f"METEOR chunk {chunk.index}"]
    assert any("Java runtime" in note for note in activity.notes)


def test_a_finished_run_page_hides_cancel_and_links_its_results(client, make_user, dataset):
    client.force_login(make_user("boss", staff=True))
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    page = client.get(f"/metrics/runs/{run.pk}/").content.decode()
    assert "Cancel run" in page
    execute_metric_run(run=run)

    page = client.get(f"/metrics/runs/{run.pk}/").content.decode()
    assert "Cancel run" not in page
    for link in (f"/metrics/datasets/{dataset.pk}/leaderboard/", f"/metrics/datasets/{dataset.pk}/agreement/"):
        assert f'href="{link}"' in page
    assert page.count('href="/metrics/captions/') >= 2  # captions it scored, best and worst
