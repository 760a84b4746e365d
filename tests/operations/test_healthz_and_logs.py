"""/healthz and the JSON-lines event logs of runs and imports."""

import io
import json
import logging
import time

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.structured_log import JsonLinesFormatter
from config import healthz
from config.healthz import worker_check_key
from metrics_bridge.models import WorkerHeartbeat
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import current_broker, execute_metric_run
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_worker_check():
    """Each test starts with no worker check shared from before (CI's cache is a Redis server, kept across tests)."""
    cache.delete(worker_check_key(current_broker()))
    yield
    cache.delete(worker_check_key(current_broker()))


def heartbeat(broker: str, seconds_ago: float = 0) -> None:
    WorkerHeartbeat.objects.create(
        name=f"w-{broker[-6:]}",
        pid=1,
        broker=broker,
        started_at=timezone.now(),
        last_seen=timezone.now() - timezone.timedelta(seconds=seconds_ago),
    )


def test_healthz_is_503_without_a_live_worker_and_names_the_failing_check(client):
    heartbeat(current_broker(), seconds_ago=3600)  # a worker that died long ago
    heartbeat("redis://elsewhere:6379/0")  # a live worker on another broker does not count
    response = client.get("/healthz")
    assert response.status_code == 503 and response["Cache-Control"] == "no-store"
    report = response.json()
    assert report["status"] == "fail"
    assert report["checks"]["worker"]["ok"] is False and report["checks"]["worker"]["alive"] == 0
    assert all(report["checks"][name]["ok"] for name in ("database", "broker", "storage"))
    assert client.get("/healthz?skip=worker").status_code == 200


def test_healthz_is_200_with_a_live_worker_and_shows_no_secret(client):
    heartbeat(current_broker())
    response = client.get("/healthz", HTTP_HOST="not-an-allowed-host.example")
    assert response.status_code == 200 and response.json()["checks"]["worker"]["alive"] == 1
    text = response.content.decode()
    assert django_settings.SECRET_KEY not in text
    password = django_settings.DATABASES["default"].get("PASSWORD")
    assert not password or password not in text
    assert client.get("/healthz?skip=nonsense").status_code == 400
    assert client.post("/healthz").status_code == 405


def test_healthz_reuses_the_worker_check_for_a_few_seconds_and_checks_the_rest_each_time(client, monkeypatch):
    monkeypatch.setattr(healthz, "CHECK_REUSE_SECONDS", 2)
    first = client.get("/healthz").json()["checks"]
    assert first["worker"]["alive"] == 0 and first["worker"]["age_seconds"] == 0
    # a worker that started since: the probes within the window still give the figures read then, saying how old
    heartbeat(current_broker())
    again = client.get("/healthz").json()["checks"]
    assert again["worker"]["alive"] == 0 and 0 <= again["worker"]["age_seconds"] <= 2
    # while the database is asked on every probe (a failing database is never hidden by a reused result); the
    # worker tables are not (the cache's own table is, when the shared cache is the database's)
    with CaptureQueriesContext(connection) as queries:
        client.get("/healthz")
    asked = [query["sql"] for query in queries]
    assert "SELECT 1" in asked and not any("workerheartbeat" in sql or "metricrunchunk" in sql for sql in asked)
    # once the window is over, the worker is counted again
    deadline = time.monotonic() + 10
    while client.get("/healthz").status_code != 200:
        assert time.monotonic() < deadline, "the worker check was never read again"
        time.sleep(0.2)
    assert client.get("/healthz").json()["checks"]["worker"]["alive"] == 1


def test_healthz_reports_unwritable_storage(client, settings, tmp_path):
    heartbeat(current_broker())
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the media folder should be")
    settings.MEDIA_ROOT = blocked / "media"
    report = client.get("/healthz").json()
    assert report["status"] == "fail" and report["checks"]["storage"]["ok"] is False


@pytest.fixture
def events():
    """JSON lines written by the `captioneval` loggers during the test, parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLinesFormatter())
    logger = logging.getLogger("captioneval")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


def test_imports_and_runs_log_one_json_object_per_event(events, shared_dir):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:3]
    summary = pairwise_judgements_import(data=items, dataset_name="log-test", source_name="clotho_eval.json")
    from corpus.models import Dataset

    run = execute_metric_run(
        run=metric_run_create(dataset=Dataset.objects.get(name="log-test"), metric_names=["ROUGE_L"])
    )
    logged = events()
    by_event = {}
    for entry in logged:
        by_event.setdefault(entry["event"], []).append(entry)
    finished = by_event["import_finished"][0]
    assert finished["kind"] == "pairwise_judgements" and finished["source"] == "clotho_eval.json"
    assert finished["summary"]["counts"]["clips"]["created"] == 3 == summary.count("clips", "created")
    assert len(by_event["chunk_done"]) == run.chunks_total
    assert {entry["metric"] for entry in by_event["chunk_done"]} == {"ROUGE_L"}
    assert by_event["run_finished"][-1] == {**by_event["run_finished"][-1], "run": run.pk, "status": "done"}
    assert all({"time", "level", "logger", "event"} <= set(entry) for entry in logged)


def test_a_failed_import_is_logged_with_its_error(events):
    from corpus.services.importing import ImportDataError

    with pytest.raises(ImportDataError):
        pairwise_judgements_import(data={"not": "a list"}, dataset_name="log-bad", source_name="bad.json")
    [failed] = [entry for entry in events() if entry["event"] == "import_failed"]
    assert failed["level"] == "warning" and "bad.json" in failed["error"]
