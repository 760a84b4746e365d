"""The metric dashboard pages: who may see them, starting a run, the agreement table, score explanations."""
import json

import pytest

from corpus.models import Caption, Dataset
from metrics_bridge.models import MetricRun
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(shared_dir) -> Dataset:
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:6]
    pairwise_judgements_import(data=items, dataset_name="pages-sample", source_name="clotho_eval.json")
    return Dataset.objects.get(name="pages-sample")


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def test_only_admins_see_the_metric_pages(client, make_user, dataset):
    assert client.get("/metrics/").status_code == 302
    client.force_login(make_user("someone", "rater"))
    assert client.get("/metrics/").status_code == 403
    assert client.get(f"/metrics/datasets/{dataset.pk}/agreement/").status_code == 403


def test_an_admin_starts_a_run_and_sees_the_agreement_table(admin_client, dataset, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/metrics/runs/", {"dataset": dataset.pk, "metrics": ["ROUGE_L"]})
    run = MetricRun.objects.get()
    assert response.status_code == 302 and response.url == f"/metrics/runs/{run.pk}/"
    assert run.status == MetricRun.Status.DONE  # eager Celery: done within the request
    progress = admin_client.get(f"/metrics/runs/{run.pk}/progress/").json()
    assert {key: progress[key] for key in ("status", "done", "total", "error", "failed")} == {
        "status": "done", "done": run.chunks_total, "total": run.chunks_total, "error": "", "failed": 0
    }

    admin_client.post(f"/metrics/dashboards/agreement/{dataset.pk}/refresh/")
    page = admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/").content.decode()
    table = page.split('id="agreement-table"')[1].split("</table>")[0]
    assert "ROUGE_L" in table and "BLEU_4" not in table


def test_the_score_page_explains_an_xace_score(admin_client, dataset, django_capture_on_commit_callbacks):
    caption = Caption.objects.filter(clip__dataset=dataset, role="candidate", author_kind="machine").first()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/metrics/runs/", {"dataset": dataset.pk, "metrics": ["XACE"]})
    page = admin_client.get(f"/metrics/captions/{caption.pk}/scores/").content.decode()
    for expected in ["XACE", "XACE_E", "Matched", "Missed", "Hallucinated", caption.text]:
        assert expected in page
