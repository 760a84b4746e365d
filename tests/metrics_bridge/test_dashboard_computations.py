"""Dashboard pages read stored results only: workers compute them; lost computations are sent again, failed ones
reported; the cache every process shares."""

from datetime import timedelta

import pytest
from django.core.cache import cache, caches
from django.core.management import call_command
from django.utils import timezone

from metrics_bridge.models import DashboardCache
from metrics_bridge.services.evaluation import agreement, dashboard_cache
from metrics_bridge.tasks.dashboards import compute_dashboard_part
from tests.metrics_bridge.dashboard_data import clotho_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(shared_dir):
    dataset = clotho_slice(shared_dir, name="dash-compute", clips=10)
    call_command("agreement_report", "--dataset", "dash-compute", "--metrics", "BLEU_4,ROUGE_L", "--format", "json")
    return dataset


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def urls(dataset) -> tuple[str, str]:
    return f"/metrics/datasets/{dataset.pk}/agreement/", f"/metrics/dashboards/agreement/{dataset.pk}/refresh/"


def no_fit_here(**kwargs):
    raise AssertionError("CALIBRATED was fitted inside a page request")


def test_a_page_view_never_fits_calibrated_and_shows_the_fit_once_a_worker_made_it(admin_client, dataset, monkeypatch):
    page_url, status_url = urls(dataset)
    with monkeypatch.context() as patch:
        patch.setattr(agreement, "_calibration_summary", no_fit_here)
        first = admin_client.get(page_url)
        assert first.status_code == 200
        assert "Computing</strong> this dashboard for the first time" in first.content.decode()
        status = admin_client.get(status_url).json()
        assert status["busy"] and status["refresh"] == status_url and not status["fresh"]

        # a worker computes the table (not CALIBRATED): the page shows it, and CALIBRATED's box says it is coming
        assert compute_dashboard_part.apply(args=["agreement", dataset.pk]).get() == "done"
        page = admin_client.get(page_url).content.decode()
        assert 'id="agreement-table"' in page and "Fitting CALIBRATED takes a while" in page
        assert 'id="calibration-coefficients"' not in page
        assert admin_client.get(status_url).json()["refresh"] == status_url  # the browser will ask for the fit

    assert compute_dashboard_part.apply(args=["calibration", dataset.pk]).get() == "done"
    page = admin_client.get(page_url).content.decode()
    assert "Fitting CALIBRATED on the other studies" in page  # the trained-elsewhere part is a computation of its own
    assert compute_dashboard_part.apply(args=["transfer", dataset.pk]).get() == "done"
    page = admin_client.get(page_url).content.decode()
    assert 'id="calibration-coefficients"' in page and "held out only" in page and 'id="calibration-versus"' in page
    assert 'id="dashboard-stale"' not in page and "Fitting CALIBRATED" not in page
    status = admin_client.get(status_url).json()
    assert status["fresh"] and not status["busy"] and status["refresh"] is None
    # the stored fit is what every process reads: in the database, no per-process cache involved
    stored = DashboardCache.objects.get(key=agreement.calibration_key(dataset=dataset))
    assert stored.content and stored.attempts == 0 and not stored.requested_fingerprint
    with monkeypatch.context() as patch:
        patch.setattr(agreement, "_calibration_summary", no_fit_here)
        assert agreement.calibration_summary(dataset=dataset)["row"]["total"] is not None


def test_a_failed_computation_is_sent_again_then_reported_with_its_error(admin_client, dataset, monkeypatch):
    page_url, status_url = urls(dataset)
    compute_dashboard_part.apply(args=["agreement", dataset.pk])
    compute_dashboard_part.apply(args=["transfer", dataset.pk])  # only CALIBRATED's in-study fit fails here

    def broken(**kwargs):
        raise RuntimeError("the solver did not converge (test)")

    monkeypatch.setattr(agreement, "_calibration_summary", broken)
    for attempt in range(1, dashboard_cache.MAX_ATTEMPTS + 1):
        response = admin_client.post(status_url)  # eager Celery: the worker's task runs here, and fails
        assert response.status_code == 202 and response.json()["queued"] == ["calibration"]
        row = DashboardCache.objects.get(key=agreement.calibration_key(dataset=dataset))
        assert row.attempts == attempt and row.error == "RuntimeError: the solver did not converge (test)"
        status = admin_client.get(status_url).json()
        if attempt < dashboard_cache.MAX_ATTEMPTS:  # sent again by the page's next request
            assert status["refresh"] == status_url and status["busy"] and status["given_up"] == []
            assert "it is sent again (attempt" in admin_client.get(page_url).content.decode()
    # given up: reported, not sent again by itself, and the page stops asking quickly
    assert status["refresh"] is None and not status["busy"] and status["given_up"] == ["calibration"]
    assert admin_client.post(status_url).json()["queued"] == []
    page = admin_client.get(page_url).content.decode()
    assert "The computation failed</strong> 3 times" in page and "the solver did not converge (test)" in page
    assert 'name="retry"' in page

    monkeypatch.undo()
    response = admin_client.post(status_url, {"retry": "1"}, HTTP_ACCEPT="text/html")
    assert response.status_code == 302 and response.url == page_url
    page = admin_client.get(page_url).content.decode()
    assert 'id="calibration-coefficients"' in page and "The computation failed" not in page


def test_a_lost_computation_is_sent_again_after_the_bound_then_reported(
    admin_client, dataset, monkeypatch, django_capture_on_commit_callbacks
):
    """Messages sent to no worker (a broker that lost them, a worker killed while holding them): the page does not
    wait forever on them."""
    from metrics_bridge.tasks import dashboards as dashboard_tasks

    page_url, status_url = urls(dataset)
    sent = []
    monkeypatch.setattr(dashboard_tasks, "runs_execute_eagerly", lambda: False)  # a real broker, with no worker on it
    monkeypatch.setattr(compute_dashboard_part, "apply_async", lambda args: sent.append(tuple(args)))

    def post():
        with django_capture_on_commit_callbacks(execute=True):
            return admin_client.post(status_url)

    first = admin_client.get(page_url).content.decode()
    assert "No worker is running" in first  # no heartbeat on this broker: said at once
    assert post().json()["queued"] == ["agreement", "calibration", "transfer"]
    assert sorted(sent) == [("agreement", dataset.pk), ("calibration", dataset.pk), ("transfer", dataset.pk)]
    assert post().json()["queued"] == []  # on its way: not sent twice
    status = admin_client.get(status_url).json()
    assert status["busy"] and status["refresh"] is None
    assert "<strong>Queued</strong> for a worker since" in admin_client.get(page_url).content.decode()

    for attempt in range(2, dashboard_cache.MAX_ATTEMPTS + 1):
        DashboardCache.objects.update(
            requested_at=timezone.now() - timedelta(seconds=dashboard_cache.QUEUE_BOUND_SECONDS + 1)
        )
        lapsed = admin_client.get(status_url).json()
        assert lapsed["refresh"] == status_url and lapsed["version"] != status["version"]
        assert "No worker took this computation</strong> in time" in admin_client.get(page_url).content.decode()
        assert post().json()["queued"] == ["agreement", "calibration", "transfer"]
        assert len(sent) == 3 * attempt
        assert set(DashboardCache.objects.values_list("attempts", flat=True)) == {attempt}
        status = admin_client.get(status_url).json()

    # a worker began it and died (no result within the time limit): lost as well; at MAX_ATTEMPTS, reported
    DashboardCache.objects.update(started_at=timezone.now() - timedelta(seconds=dashboard_cache.RUN_BOUND_SECONDS + 1))
    status = admin_client.get(status_url).json()
    assert status["refresh"] is None and not status["busy"]
    assert sorted(status["given_up"]) == ["agreement", "calibration", "transfer"]
    assert "No worker finished this computation</strong>: sent 3 times" in admin_client.get(page_url).content.decode()
    assert len(sent) == 3 * dashboard_cache.MAX_ATTEMPTS


def test_the_cache_is_one_every_process_shares(settings):
    from django.core.cache.backends.db import DatabaseCache
    from django.core.cache.backends.redis import RedisCache

    shared_backend = RedisCache if settings.REDIS_URL else DatabaseCache  # Redis when REDIS_URL is set
    assert isinstance(caches["default"], shared_backend)  # Django's, or config.redis_cache's subclass of it
    cache.set("shared-entry", {"a": 1}, timeout=60)  # the table exists: made by `migrate`
    assert cache.get("shared-entry") == {"a": 1}


def test_the_annotation_agreement_is_computed_by_a_worker_never_in_the_request(
    client, make_user, monkeypatch, django_capture_on_commit_callbacks
):
    from corpus.models import Dataset
    from metrics_bridge.services.evaluation import annotation_agreement
    from metrics_bridge.tasks import agreement as tasks

    dataset = Dataset.objects.create(name="annotated")
    client.force_login(make_user("rev", "reviewer"))
    url = f"/metrics/annotation-agreement/?dataset={dataset.pk}"
    sent = []
    computed = annotation_agreement.dataset_annotation_agreement
    with monkeypatch.context() as patch:
        patch.setattr(tasks, "runs_execute_eagerly", lambda: False)
        patch.setattr(tasks.compute_annotation_agreement, "apply_async", lambda args: sent.append(tuple(args)))
        patch.setattr(annotation_agreement, "dataset_annotation_agreement", no_fit_here)  # the encoder: not here
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.get(url + "&format=json")
        assert answer.status_code == 202 and answer.json()["computing"] is True
        assert sent == [(dataset.pk, None)]
        with django_capture_on_commit_callbacks(execute=True):
            page = client.get(url).content.decode()
        assert "<strong>Computing</strong> the agreement" in page and 'id="live"' in page
        assert client.get(url + "&format=status").json()["busy"]
        assert sent == [(dataset.pk, None)]  # queued once, not at every view
    assert annotation_agreement.dataset_annotation_agreement is computed
    assert tasks.compute_annotation_agreement.apply(args=[dataset.pk, None]).get() == "done"
    answer = client.get(url + "&format=json")
    assert answer.status_code == 200 and answer.json()["clips"] == 0 and answer.json()["current"] is True
    status = client.get(url + "&format=status").json()
    assert not status["busy"] and status["fresh"]
