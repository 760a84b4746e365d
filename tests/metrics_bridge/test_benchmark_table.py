"""The benchmark table (command and page), the pairs behind a figure, and the agreement page's BRACE view."""

import csv
import io
import json
import re

import pytest
from django.core.management import call_command

from annotation.models import Dataset
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
METRICS = "BLEU_4,ROUGE_L"


@pytest.fixture
def datasets(shared_dir):
    """Clotho-Eval's first 8 clips (FENSE), and the BRACE samples; the main sample named as BRACE's Clotho-Main."""
    folder = shared_dir / "datasets"
    pairwise_judgements_import(
        data=json.loads((folder / "clotho_eval.json").read_text())[:8], dataset_name="clotho-eval", source_name="c.json"
    )
    for file_name, name in (("brace_main_sample", "brace-clotho-main"), ("brace_hallucination_sample", "hallu")):
        items = json.loads((folder / "brace_format" / f"{file_name}.json").read_text())
        pairwise_judgements_import(data=items, dataset_name=name, source_name=f"{file_name}.json")
    return {dataset.name: dataset for dataset in Dataset.objects.all()}


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def _agreement(name, capsys):
    capsys.readouterr()
    call_command("agreement_report", "--dataset", name, "--metrics", METRICS, "--format", "json")
    return json.loads(capsys.readouterr().out)


def test_the_command_shows_every_dataset_under_its_protocol_with_the_published_records(datasets, capsys):
    call_command("metric_benchmark", "--metrics", METRICS, "--format", "json")
    table = json.loads(capsys.readouterr().out)

    assert [d["name"] for d in table["datasets"]] == ["brace-clotho-main", "clotho-eval", "hallu"]
    assert [d["protocol"] for d in table["datasets"]] == ["brace", "fense", "brace"]
    assert table["datasets"][0]["benchmark"] == "brace-clotho-main" and table["datasets"][2]["benchmark"] is None
    for name in ("brace-clotho-main", "clotho-eval", "hallu"):
        report = _agreement(name, capsys)
        for metric in ("BLEU_4", "ROUGE_L"):
            assert table["cells"][metric][name]["ours"] == report["metrics"][metric]
    # published records with their sources: CAF-Score has no counterpart here, FENSE's sits in FENSE's row
    caf = table["cells"]["CAF-Score"]["brace-clotho-main"]["published"]
    assert caf[0]["figures"] == {"total": 73.21} and "BRACE" in caf[0]["source"]
    assert table["cells"]["FENSE"]["clotho-eval"]["published"][0]["figures"]["total"] == 71.3
    assert "CAF-Score" in table["records_only"]
    # CALIBRATED trained elsewhere: fitted on the other two datasets, on every dataset
    for name in ("brace-clotho-main", "clotho-eval", "hallu"):
        cell = table["cells"]["CALIBRATED (trained elsewhere)"][name]
        others = {"brace-clotho-main", "clotho-eval", "hallu"} - {name}
        assert set(cell["calibration"]["trained_on"].split(", ")) == others
        assert cell["ours"]["total"] is not None
    # cross-validated CALIBRATED needs 5 clips: the 8-clip Clotho subset has it, the samples say why not
    assert table["cells"]["CALIBRATED"]["clotho-eval"]["calibration"]["mode"] == "cross-validation"
    assert "5-fold" in table["unavailable"]["CALIBRATED"]["hallu"]


def test_table_and_csv_formats(datasets, capsys):
    call_command("metric_benchmark", "--metrics", METRICS)  # computes
    capsys.readouterr()
    call_command("metric_benchmark", "--metrics", METRICS, "--stored-only")
    text = capsys.readouterr().out
    assert "CAF-Score" in text and "[73.21]" in text and "[published] CAF-Score" in text
    call_command("metric_benchmark", "--metrics", METRICS, "--stored-only", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    bleu_hallu = next(row for row in rows if row["metric"] == "BLEU_4" and row["dataset"] == "hallu")
    assert bleu_hallu["protocol"] == "brace" and bleu_hallu["HALLU"] == bleu_hallu["total"]


def test_the_page_shows_the_table_and_each_figure_links_to_its_pairs(datasets, admin_client, capsys):
    call_command("metric_benchmark", "--metrics", METRICS)
    report = _agreement("brace-clotho-main", capsys)

    # the first view answers at once and the browser asks for the computation
    pending = admin_client.get("/metrics/benchmark/").content.decode()
    assert 'data-live-status="/metrics/benchmark/refresh/"' in pending and 'id="benchmark-table"' not in pending
    status = admin_client.get("/metrics/benchmark/refresh/").json()
    assert status["refresh"] == "/metrics/benchmark/refresh/" and status["busy"] and not status["fresh"]
    assert admin_client.post("/metrics/benchmark/refresh/").json() == {"fresh": True}
    status = admin_client.get("/metrics/benchmark/refresh/").json()
    assert status["fresh"] and status["refresh"] is None and not status["busy"]
    page = admin_client.get("/metrics/benchmark/").content.decode()

    assert (
        'id="benchmark-table"' in page
        and 'id="dashboard-stale"' not in page
        and "BRACE Clotho-Main" in page
        and "[73.21]" in page
    )
    dataset = datasets["brace-clotho-main"]
    link = f'/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=BLEU_4"'
    assert link in page
    figure = re.search(re.escape(link) + r"[^>]*>([\d.]+)</a>", page).group(1)
    assert float(figure) == report["metrics"]["BLEU_4"]["total"]

    pairs_page = admin_client.get(link.rstrip('"')).content.decode()
    assert 'id="pairs-table"' in pairs_page
    right, wrong = pairs_page.count(">right</span>"), pairs_page.count(">wrong</span>")
    assert right + wrong == report["pairs"]["total"] == 10
    assert round(100 * right / (right + wrong), 2) == report["metrics"]["BLEU_4"]["total"]
    wrong_only = admin_client.get(link.rstrip('"') + "&verdict=wrong").content.decode()
    assert wrong_only.count(">wrong</span>") == wrong and ">right</span>" not in wrong_only


def test_the_agreement_page_shows_brace_columns_f1_and_unscorable_pairs(datasets, admin_client, capsys):
    dataset = datasets["hallu"]
    report = _agreement("hallu", capsys)
    assert admin_client.post(f"/metrics/dashboards/agreement/{dataset.pk}/refresh/").json() == {"fresh": True}

    page = admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/").content.decode()

    assert 'id="brace-protocol"' in page and "cannot be scored: <strong>0</strong>" in page
    header = re.search(r'<table class="agreement" id="agreement-table">\s*<thead><tr>(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r'<th class="num">(\w+)</th>', header) == ["HALLU", "total", "f1"]
    assert f"{report['metrics']['BLEU_4']['f1']:.2f}" in page
    csv_rows = list(
        csv.reader(
            io.StringIO(admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/?format=csv").content.decode())
        )
    )
    assert csv_rows[0] == ["metric", "HALLU", "total", "f1"]


def test_pages_are_for_admins_only(datasets, client, make_user):
    client.force_login(make_user("rater", "rater"))
    assert client.get("/metrics/benchmark/").status_code in (302, 403)
    dataset = datasets["hallu"]
    assert client.get(f"/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=SBERT").status_code in (302, 403)
