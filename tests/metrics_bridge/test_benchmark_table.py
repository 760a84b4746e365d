"""The benchmark table (command and page), the pairs behind a figure, and the agreement page's BRACE view."""

import csv
import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command

from corpus.models import Clip, Dataset
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


def _interval_by_hand(decisions_by_clip: dict[str, list[bool]]) -> list[float]:
    """The seeded clip bootstrap, written out: 1000 draws of the clips (in the order of their keys as text) with
    replacement, 2.5 and 97.5 percentiles."""
    rng = np.random.default_rng(0)
    clips = sorted(decisions_by_clip)
    totals = []
    for draw in rng.integers(0, len(clips), (1000, len(clips))):
        chosen = [value for index in draw for value in decisions_by_clip[clips[index]]]
        totals.append(100 * sum(chosen) / len(chosen))
    return [round(float(value), 2) for value in np.percentile(totals, [2.5, 97.5])]


def test_the_command_shows_every_dataset_under_its_protocol_with_sizes_and_intervals(datasets, admin_client, capsys):
    call_command("metric_benchmark", "--metrics", METRICS, "--format", "json")
    table = json.loads(capsys.readouterr().out)

    assert [d["name"] for d in table["datasets"]] == ["brace-clotho-main", "clotho-eval", "hallu"]
    assert [d["protocol"] for d in table["datasets"]] == ["brace", "fense", "brace"]
    # matched by content, not by name: a 10-pair sample named like BRACE's Clotho-Main is not that benchmark
    assert [d["benchmark"] for d in table["datasets"]] == [None, None, None]
    assert table["datasets"][0]["not_the_benchmark_named"] == "BRACE Clotho-Main"
    assert all(d["small"] for d in table["datasets"])
    for name in ("brace-clotho-main", "clotho-eval", "hallu"):
        report = _agreement(name, capsys)
        for metric in ("BLEU_4", "ROUGE_L"):
            ours = table["cells"][metric][name]["ours"]
            assert {key: ours[key] for key in report["metrics"][metric]} == report["metrics"][metric]
            low, high = ours["interval"]
            assert low <= ours["total"] <= high
    # the interval against the bootstrap written out, from the pairs page's verdicts
    dataset = datasets["clotho-eval"]
    from metrics_bridge.services.evaluation.benchmark import (
        agreement_pairs,  # the rows the pairs page shows, page by page
    )

    pairs = agreement_pairs(dataset=dataset, metric="BLEU_4")["pairs"]
    clip_keys = {clip.external_id: str(clip.pk) for clip in Clip.objects.filter(dataset=dataset)}
    by_clip: dict[str, list[bool]] = {}
    for row in pairs:
        if row["correct"] is not None:
            by_clip.setdefault(clip_keys[row["clip"]], []).append(row["correct"])
    ours = table["cells"]["BLEU_4"]["clotho-eval"]["ours"]
    assert ours["pairs"] == sum(len(values) for values in by_clip.values())
    assert ours["interval"] == _interval_by_hand(by_clip)
    # no published figure beside a dataset that does not hold the benchmark's pairs; each such benchmark named
    assert not any("published" in cell for row in table["cells"].values() for cell in row.values())
    unmatched = {benchmark["key"]: benchmark["why"] for benchmark in table["unmatched_benchmarks"]}
    assert "1,750 judged pairs" in unmatched["clotho-eval"] and "not available" in unmatched["brace-clotho-main"]
    # CALIBRATED trained elsewhere: fitted on the other datasets that hold none of its clips or pairs -- the two
    # BRACE samples share two clips (street_01.wav, park_03.wav), so neither trains the other's model
    trained_on = {"brace-clotho-main": {"clotho-eval"}, "clotho-eval": {"brace-clotho-main", "hallu"}}
    trained_on["hallu"] = {"clotho-eval"}
    for name, sources in trained_on.items():
        cell = table["cells"]["CALIBRATED (trained elsewhere)"][name]
        assert set(cell["calibration"]["trained_on"].split(", ")) == sources
        assert cell["ours"]["total"] is not None
    left_out = table["cells"]["CALIBRATED (trained elsewhere)"]["hallu"]["calibration"]["left_out_sources"]
    assert list(left_out) == ["brace-clotho-main"] and left_out["brace-clotho-main"].startswith("2 clips' audio and ")
    # cross-validated CALIBRATED needs 5 clips: the 8-clip Clotho subset has it, the samples say why not
    assert table["cells"]["CALIBRATED"]["clotho-eval"]["calibration"]["mode"] == "cross-validation"
    assert "5-fold" in table["unavailable"]["CALIBRATED"]["hallu"]


def test_table_and_csv_formats(datasets, capsys):
    call_command("metric_benchmark", "--metrics", METRICS)  # computes
    capsys.readouterr()
    call_command("metric_benchmark", "--metrics", METRICS, "--stored-only")
    text = capsys.readouterr().out
    assert "brace-clotho-main is named like BRACE Clotho-Main but does not hold its judged pairs" in text
    assert "small set: hallu has" in text and "[published] BRACE Clotho-Main: not shown" in text
    call_command("metric_benchmark", "--metrics", METRICS, "--stored-only", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    bleu_hallu = next(row for row in rows if row["metric"] == "BLEU_4" and row["dataset"] == "hallu")
    assert bleu_hallu["protocol"] == "brace" and bleu_hallu["HALLU"] == bleu_hallu["total"]
    assert float(bleu_hallu["interval_low"]) <= float(bleu_hallu["total"]) <= float(bleu_hallu["interval_high"])


def test_a_dataset_holding_a_benchmarks_pairs_gets_its_records_whatever_its_name(shared_dir, capsys):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())
    pairwise_judgements_import(data=items, dataset_name="my-own-name", source_name="c.json")
    pairwise_judgements_import(data=items[:-1], dataset_name="clotho-eval", source_name="c.json")

    call_command("metric_benchmark", "--metrics", "BLEU_4", "--stored-only", "--format", "json")
    table = json.loads(capsys.readouterr().out)

    benchmarks = {d["name"]: d["benchmark"] for d in table["datasets"]}
    assert benchmarks == {"my-own-name": "clotho-eval", "clotho-eval": None}
    assert table["cells"]["FENSE"]["my-own-name"]["published"][0]["figures"]["total"] == 71.3
    assert "clotho-eval" not in table["cells"]["FENSE"]


def test_the_page_shows_what_metric_benchmark_stored_without_computing(datasets, admin_client, capsys, monkeypatch):
    from metrics_bridge.services.evaluation import benchmark

    call_command("metric_benchmark", "--metrics", METRICS)  # computes the scores (a subset: not the page's table)
    assert admin_client.get("/metrics/benchmark/?format=json").status_code == 409
    call_command("metric_benchmark", "--stored-only")  # every dataset and stored metric: the page's table, stored
    capsys.readouterr()

    def no_computing(**kwargs):
        raise AssertionError("the page recomputed the table")

    monkeypatch.setattr(benchmark, "benchmark_table", no_computing)
    page = admin_client.get("/metrics/benchmark/").content.decode()
    assert 'id="benchmark-table"' in page and 'id="dashboard-stale"' not in page
    assert "not BRACE Clotho-Main's pairs" in page and 'class="small size-caveat"' in page
    assert "n=10 · " in page and 'id="unmatched-benchmarks"' in page
    # the shipped fluency detector never saw Clotho-Eval's texts (a planted overlap's note: test_held_out_overlap)
    assert "was trained on" not in page
    downloaded = admin_client.get("/metrics/benchmark/?format=json").json()
    assert downloaded["cells"]["BLEU_4"]["hallu"]["ours"]["interval"] is not None


@pytest.mark.parametrize("model", ["calibration", "calibration_transfer"])
def test_a_new_calibrated_model_version_makes_the_stored_table_stale(
    datasets, admin_client, capsys, monkeypatch, model
):
    from metrics_bridge.agreement import calibration, calibration_transfer
    from metrics_bridge.services.evaluation import benchmark

    call_command("metric_benchmark", "--stored-only")  # the page's table, stored
    capsys.readouterr()
    assert benchmark.benchmark_state().fresh
    page = admin_client.get("/metrics/benchmark/").content.decode()
    assert 'id="benchmark-table"' in page and 'id="dashboard-stale"' not in page

    module = {"calibration": calibration, "calibration_transfer": calibration_transfer}[model]
    monkeypatch.setattr(module, "VERSION", module.VERSION + " (changed by the test)")
    state = benchmark.benchmark_state()
    assert not state.fresh and state.payload is not None  # the former table is kept, shown as stale
    page = admin_client.get("/metrics/benchmark/").content.decode()
    assert 'id="benchmark-table"' in page and 'id="dashboard-stale"' in page
    monkeypatch.undo()
    assert benchmark.benchmark_state().fresh


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

    assert 'id="benchmark-table"' in page and 'id="dashboard-stale"' not in page and "[73.21]" not in page
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
    assert [column for column in csv_rows[0] if "95%" not in column] == ["metric", "HALLU", "total", "f1"]


def test_pages_are_for_admins_only(datasets, client, make_user):
    client.force_login(make_user("rater", "rater"))
    assert client.get("/metrics/benchmark/").status_code in (302, 403)
    dataset = datasets["hallu"]
    assert client.get(f"/metrics/datasets/{dataset.pk}/agreement/pairs/?metric=SBERT").status_code in (302, 403)
