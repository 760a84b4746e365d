"""A first run that cannot strand a newcomer: the demo's accounts are printed even when its build fails, the
sign-in address follows HOST/PORT (or what ./scripts/run served last), and a demo built before adds no empty run."""

import io

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from demo import build as demo_build
from demo.management.commands import demo
from metrics_bridge.models import MetricRun
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from metrics_bridge.tasks.runs import execute_metric_run
from tests.metrics_bridge.test_metric_runs_worker import make_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def no_served_url(settings, tmp_path, monkeypatch):
    """No HOST/PORT and no address written by ./scripts/run (a project folder of the test's own)."""
    settings.BASE_DIR = tmp_path
    monkeypatch.delenv("HOST", raising=False)
    monkeypatch.delenv("PORT", raising=False)
    return tmp_path


def printed_passwords(output: str) -> dict[str, str]:
    rows = [line.split() for line in output.splitlines()]
    return {row[0]: row[-1] for row in rows if row and row[0] in ("admin", "annotator", "reviewer", "rater")}


def test_a_failed_demo_build_still_prints_the_accounts_it_made(monkeypatch):
    def broken_corpus():
        raise RuntimeError("the broker lost a message")

    monkeypatch.setattr(demo_build, "demo_corpus_ensure", broken_corpus)
    output = io.StringIO()
    with pytest.raises(RuntimeError, match="the broker lost a message"):
        call_command("demo", "--no-metrics", stdout=output)

    console = output.getvalue()
    assert "The demo study could not be built (the error follows); its accounts exist:" in console
    passwords = printed_passwords(console)
    assert sorted(passwords) == ["admin", "annotator", "rater", "reviewer"]
    # real passwords, each of which signs in (not "(unchanged)")
    assert all(authenticate(username=name, password=password) for name, password in passwords.items()), console


@pytest.mark.parametrize(
    ("env", "served", "expected"),
    [
        ({}, None, "http://127.0.0.1:8000/"),
        ({"PORT": "9123"}, None, "http://127.0.0.1:9123/"),
        ({"HOST": "10.1.2.3", "PORT": "9123"}, "http://old:1/", "http://10.1.2.3:9123/"),
        ({"HOST": "::1"}, None, "http://[::1]:8000/"),
        ({}, "http://lab-server:8123/\n", "http://lab-server:8123/"),
    ],
)
def test_reset_passwords_prints_the_address_the_server_is_on(no_served_url, monkeypatch, env, served, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if served:
        (no_served_url / "logs").mkdir()
        (no_served_url / demo.SERVED_URL_FILE).write_text(served)
    monkeypatch.setattr(demo.Command, "_build", lambda self, **options: None)  # the accounts part only
    output = io.StringIO()
    call_command("demo", "--reset-passwords", stdout=output)
    assert output.getvalue().splitlines()[-1] == f"Sign in at {expected}"


def test_the_address_on_every_interface_is_the_machines_name(no_served_url, monkeypatch):
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "8443")
    monkeypatch.setattr(demo.socket, "gethostname", lambda: "lab-box")
    assert demo.app_url() == "http://lab-box:8443/"


def test_a_demo_run_with_nothing_to_compute_is_not_saved():
    dataset = make_dataset(clips=3)
    first = dataset_run_create(dataset=dataset, metric_names=["ROUGE_L"], keep_empty=False)
    assert first is not None and first.chunks_total > 0
    assert execute_metric_run(run=first).status == MetricRun.Status.DONE
    # Nothing is missing now: the demo (keep_empty=False) saves no run, a page's button still gets its "done" run
    assert dataset_run_create(dataset=dataset, metric_names=["ROUGE_L"], keep_empty=False) is None
    assert MetricRun.objects.count() == 1
    assert dataset_run_create(dataset=dataset, metric_names=["ROUGE_L"]).chunks_total == 0
    assert MetricRun.objects.count() == 2


def test_building_the_demo_corpus_again_leaves_its_dashboards_current():
    """Each start of ./scripts/run builds the demo again: unchanged captions must not be saved, else the dashboards'
    fingerprint moves and the demo's dashboards and the benchmark are computed again at every start."""
    from corpus.models import Caption
    from demo.dataset import demo_corpus_ensure
    from metrics_bridge.services.evaluation.dashboard_cache import dataset_fingerprint

    dataset = demo_corpus_ensure()
    captions = Caption.objects.filter(clip__dataset=dataset)
    saved = dict(captions.values_list("pk", "updated_at"))
    fingerprint = dataset_fingerprint(dataset=dataset)

    assert demo_corpus_ensure() == dataset
    assert dict(captions.values_list("pk", "updated_at")) == saved
    assert dataset_fingerprint(dataset=dataset) == fingerprint

    # A caption that differs from the scene's text is still brought back to it (and only that one is saved)
    reference = captions.filter(role=Caption.Role.REFERENCE).order_by("pk").first()
    expected_text = reference.text
    Caption.objects.filter(pk=reference.pk).update(text="edited by hand", source_label="someone")
    demo_corpus_ensure()
    reference.refresh_from_db()
    assert (reference.text, reference.source_label) == (expected_text, f"person_{reference.position + 1}")
    changed = {pk for pk, updated in captions.values_list("pk", "updated_at") if updated != saved[pk]}
    assert changed == {reference.pk}
    assert dataset_fingerprint(dataset=dataset) != fingerprint
