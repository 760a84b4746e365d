"""The agreement pairs page and the benchmark page read what a worker stored: in every state of the stored result
(never computed, computing, failed, stale, fresh) their view answers 200 with that state said, and never runs the
computation in the request (the functions that build them are made to raise). A warm view is one cache read and a
few small queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpus.models import Caption, Clip, Dataset
from metrics_bridge.models import DashboardCache
from metrics_bridge.services.evaluation import benchmark
from metrics_bridge.services.evaluation.agreement_pairs_store import agreement_pairs_key
from metrics_bridge.services.evaluation.dashboard_cache import (
    cached_payload,
    computation_begin,
    computation_fail,
    computation_request,
    dataset_fingerprint,
)
from metrics_bridge.tasks import agreement as agreement_tasks
from metrics_bridge.tasks import dashboards as dashboard_tasks

pytestmark = pytest.mark.django_db

PAIRS_PAYLOAD = {
    "protocol": "fense",
    "report": {"HC": 50.0, "total": 61.5},
    "pairs": [
        {
            "split": "HC",
            "clip": "rain.wav",
            "key": "HC",
            "caption_a": "heavy rain falls on a tin roof",
            "caption_b": "a kettle whistles",
            "score_a": 0.8,
            "score_b": 0.2,
            "answer": "a",
            "prediction": "a",
            "correct": True,
        }
    ],
    "unscorable": [],
}


def _benchmark_payload(dataset: Dataset) -> dict:
    entry = {
        "id": dataset.pk,
        "name": dataset.name,
        "protocol": "fense",
        "layout": "fense",
        "benchmark": None,
        "benchmark_title": None,
        "not_the_benchmark_named": None,
        "pairs": {"HC": 1, "total": 1},
        "small": True,
        "detector_note": "",
        "columns": ["HC", "total"],
    }
    cell = {"ours": {"HC": 50.0, "total": 61.5, "pairs": 1, "interval": [40.0, 80.0]}}
    return {
        "datasets": [entry],
        "metrics": ["BLEU_4"],
        "records_only": [],
        "cells": {"BLEU_4": {dataset.name: cell}},
        "unavailable": {},
        "unmatched_benchmarks": [],
        "small_set_pairs": 200,
    }


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


@pytest.fixture
def dataset():
    dataset = Dataset.objects.create(name="rain-study")
    clip = Clip.objects.create(dataset=dataset, external_id="rain.wav", file_name="rain.wav")
    Caption.objects.create(
        clip=clip, text="heavy rain falls on a tin roof", role="reference", author_kind="human", position=0
    )
    return dataset


@pytest.fixture
def no_heavy_work(monkeypatch):
    """The builders raise, and tasks are sent to a broker nobody reads (as with a worker elsewhere): a page view
    that computed would fail, one that sends the task is recorded."""

    def refuse(*args, **kwargs):
        raise AssertionError("a page view ran the computation")

    monkeypatch.setattr("metrics_bridge.services.evaluation.agreement_pairs_store.agreement_pairs", refuse)
    monkeypatch.setattr("metrics_bridge.services.evaluation.agreement.metric_agreement", refuse)
    monkeypatch.setattr("metrics_bridge.services.evaluation.benchmark.benchmark_table", refuse)
    # each module that calls CALIBRATED's fit holds its own name for it: both are refused
    monkeypatch.setattr("metrics_bridge.services.evaluation.benchmark.calibrated_cross_validation", refuse)
    monkeypatch.setattr("metrics_bridge.services.evaluation.agreement.calibrated_cross_validation", refuse)
    for module in (agreement_tasks, dashboard_tasks):
        monkeypatch.setattr(module, "runs_execute_eagerly", lambda: False)
    monkeypatch.setattr(dashboard_tasks, "live_workers", lambda **kwargs: [])
    sent = []
    monkeypatch.setattr(
        agreement_tasks.compute_agreement_pairs, "apply_async", lambda args=None, **kwargs: sent.append(args)
    )
    monkeypatch.setattr(
        dashboard_tasks.refresh_benchmark, "apply_async", lambda args=None, **kwargs: sent.append("benchmark")
    )
    monkeypatch.setattr("django.db.transaction.on_commit", lambda function, *args, **kwargs: function())
    return sent


def _put_in_state(state: str, *, key: str, fingerprint: str, payload: dict) -> None:
    """Store the entry under `key` as a worker would leave it in `state` (fingerprint: the data as it is now)."""
    if state in ("stale", "fresh"):
        cached_payload(key=key, fingerprint=fingerprint if state == "fresh" else "older data", build=lambda: payload)
    if state in ("computing", "failed"):
        computation_request(key=key, fingerprint=fingerprint, enqueue=lambda: None)
    if state in ("computing", "failed"):
        computation_begin(key=key)
    if state == "failed":
        computation_fail(key=key, error="MemoryError: out of memory")


#: what the page says in each state, and what it must not say
STATE_TEXTS = {
    "never computed": ("for the first time", "Queued"),
    "computing": ("for the first time", "Computing</strong> on a worker since"),
    "failed": ("for the first time", "The computation failed"),
    "stale": ("Updating:", "the data changed since these numbers were computed"),
    "fresh": ("Computed ", "from the data as it is now"),
}


@pytest.mark.parametrize("state", STATE_TEXTS)
def test_the_pairs_page_shows_each_state_without_computing(admin_client, dataset, no_heavy_work, state):
    key = agreement_pairs_key(dataset_id=dataset.pk, metric="BLEU_4")
    _put_in_state(state, key=key, fingerprint=dataset_fingerprint(dataset=dataset), payload=PAIRS_PAYLOAD)

    response = admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=BLEU_4")

    page = response.content.decode()
    assert response.status_code == 200
    # the view itself asks for what is missing, stale or failed (sent again: attempt 2 of 3)
    texts = ("for the first time", "Queued", "attempt 2 of 3") if state == "failed" else STATE_TEXTS[state]
    for text in texts:
        assert text in page, (state, text)
    shows_rows = state in ("stale", "fresh")
    assert ('id="pairs-table"' in page) is shows_rows
    assert ("heavy rain falls on a tin roof" in page) is shows_rows
    # asked of a worker once; a result on its way or current is not asked again
    assert no_heavy_work == ([[dataset.pk, "BLEU_4"]] if state in ("never computed", "stale", "failed") else [])


@pytest.mark.parametrize("state", STATE_TEXTS)
def test_the_benchmark_page_shows_each_state_without_computing(admin_client, dataset, no_heavy_work, state):
    fingerprint = benchmark.benchmark_fingerprint(datasets=benchmark.benchmark_datasets())
    _put_in_state(state, key=benchmark.BENCHMARK_KEY, fingerprint=fingerprint, payload=_benchmark_payload(dataset))

    response = admin_client.get("/metrics/benchmark/")

    page = response.content.decode()
    assert response.status_code == 200
    for text in STATE_TEXTS[state]:
        if state == "never computed" and text == "Queued":
            text = "Sending"  # the page's script asks for it (below); the view itself records nothing
        assert text in page, (state, text)
    assert ('id="benchmark-table"' in page) is (state in ("stale", "fresh"))
    assert no_heavy_work == []


def test_the_benchmark_refresh_queues_and_never_computes_even_without_a_worker(admin_client, dataset, no_heavy_work):
    status = admin_client.get("/metrics/benchmark/refresh/").json()
    assert status["refresh"] == "/metrics/benchmark/refresh/" and status["busy"]

    first = admin_client.post("/metrics/benchmark/refresh/")
    again = admin_client.post("/metrics/benchmark/refresh/")

    assert (first.status_code, first.json()) == (202, {"fresh": False, "queued": True})
    assert (again.status_code, again.json()) == (202, {"fresh": False, "queued": False})  # on its way: not twice
    assert no_heavy_work == ["benchmark"]
    assert admin_client.get("/metrics/benchmark/refresh/").json()["refresh"] is None
    page = admin_client.get("/metrics/benchmark/").content.decode()
    assert "Queued" in page and 'id="no-worker"' in page


def test_a_failed_benchmark_is_sent_again_then_given_up_and_retried_on_request(admin_client, dataset, no_heavy_work):
    for _ in range(3):
        admin_client.post("/metrics/benchmark/refresh/")
        computation_begin(key=benchmark.BENCHMARK_KEY)
        computation_fail(key=benchmark.BENCHMARK_KEY, error="ValueError: no pairs")
    assert no_heavy_work == ["benchmark"] * 3

    status = admin_client.get("/metrics/benchmark/refresh/").json()
    page = admin_client.get("/metrics/benchmark/").content.decode()
    assert status["refresh"] is None and not status["busy"]
    assert "It is not sent again by itself" in page and "Try again" in page
    admin_client.post("/metrics/benchmark/refresh/", {"retry": "1"}, HTTP_ACCEPT="text/html")
    assert no_heavy_work == ["benchmark"] * 4
    row = DashboardCache.objects.get(key=benchmark.BENCHMARK_KEY)
    assert (row.attempts, row.error) == (1, "")


def test_a_warm_pairs_page_is_one_cache_read_and_a_few_small_queries(admin_client, dataset, no_heavy_work):
    key = agreement_pairs_key(dataset_id=dataset.pk, metric="BLEU_4")
    _put_in_state("fresh", key=key, fingerprint=dataset_fingerprint(dataset=dataset), payload=PAIRS_PAYLOAD)
    admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=BLEU_4")

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=BLEU_4")

    assert response.status_code == 200 and 'id="pairs-table"' in response.content.decode()
    cache_reads = [query for query in queries if "metrics_bridge_dashboardcache" in query["sql"]]
    assert len(cache_reads) == 1
    assert len(queries) <= 20, [query["sql"][:120] for query in queries]


def test_package_versions_are_read_once_per_process(monkeypatch):
    """Every dashboard page's fingerprint names the metrics' versions, which name their packages' versions: reading
    those parsed each package's metadata file on every view (about half of a warm agreement page's time)."""
    from metrics_bridge.scoring import base

    base.installed_version.cache_clear()
    reads = []
    monkeypatch.setattr(base, "version", lambda package: reads.append(package) or "1.0")
    try:
        assert [base.installed_version("numpy") for _ in range(3)] == ["1.0"] * 3
        assert reads == ["numpy"]
    finally:
        base.installed_version.cache_clear()  # later tests read the real versions
