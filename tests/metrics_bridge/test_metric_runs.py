"""Metric runs in eager mode: storage, idempotence, versions, cancellation, errors, agreement assembly."""

import json

import pytest
from django.core.management import call_command

from annotation.models import Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.services.agreement import agreement_report_build
from metrics_bridge.services.runs import metric_run_cancel, metric_run_create
from metrics_bridge.tasks import enqueue_chunks, execute_metric_run
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def clotho_items(shared_dir):
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:12]


@pytest.fixture
def dataset(clotho_items) -> Dataset:
    pairwise_judgements_import(data=clotho_items, dataset_name="clotho-sample", source_name="clotho_eval.json")
    return Dataset.objects.get(name="clotho-sample")


def test_a_run_stores_one_score_per_request_and_a_second_run_is_a_no_op(dataset):
    run = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["ROUGE_L"]))
    assert run.status == MetricRun.Status.DONE
    assert run.chunks_done == run.chunks_total > 0
    stored = MetricScore.objects.filter(metric="ROUGE_L").count()
    planned = {(r["caption_id"], r["reference_set_key"]) for chunk in run.chunks.all() for r in chunk.requests}
    assert stored == len(planned)

    again = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    assert again.chunks_total == 0
    assert again.status == MetricRun.Status.DONE
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == stored


def test_a_new_scorer_version_adds_rows_beside_the_old_ones(dataset, monkeypatch):
    execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["ROUGE_L"]))
    old_version = registry.scorer_for("ROUGE_L").version
    old_count = MetricScore.objects.filter(metric="ROUGE_L").count()
    monkeypatch.setattr(type(registry.scorer_for("ROUGE_L")), "version", old_version + "-next", raising=False)

    execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["ROUGE_L"]))

    assert MetricScore.objects.filter(metric="ROUGE_L", version=old_version).count() == old_count
    assert MetricScore.objects.filter(metric="ROUGE_L", version=old_version + "-next").count() == old_count


def test_a_cancelled_run_scores_nothing(dataset):
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    metric_run_cancel(run=run)
    run = execute_metric_run(run=run)
    assert run.status == MetricRun.Status.CANCELLED
    assert not MetricScore.objects.exists()
    assert set(run.chunks.values_list("status", flat=True)) == {MetricRunChunk.Status.CANCELLED}


def test_a_scorer_error_is_retried_up_to_the_cap_then_recorded_on_the_chunk_and_the_run(dataset, monkeypatch, settings):
    settings.METRICS_CHUNK_MAX_ATTEMPTS = 3
    scorer = registry.scorer_for("ROUGE_L")
    calls = []

    def broken(requests, context):
        calls.append(len(requests))
        raise RuntimeError("tokenizer exploded")

    monkeypatch.setattr(scorer, "score_batch", broken)
    run = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["ROUGE_L"]))
    assert run.status == MetricRun.Status.FAILED  # every chunk failed
    assert len(calls) == 3 * run.chunks_total
    assert run.error.startswith(
        f"{run.chunks_total} chunk(s) failed: ROUGE_L chunk 0 (3 attempt(s)): RuntimeError: tokenizer"
    )
    for chunk in run.chunks.all():
        assert (chunk.status, chunk.attempts) == (MetricRunChunk.Status.FAILED, 3)
        assert "tokenizer exploded" in chunk.error


def test_unknown_and_unavailable_metrics_are_named(dataset):
    with pytest.raises(ValueError, match="NOT_A_METRIC"):
        metric_run_create(dataset=dataset, metric_names=["NOT_A_METRIC"])
    run = metric_run_create(dataset=dataset, metric_names=["SPICE", "ROUGE_L"])
    assert "SPICE" in run.unavailable and "CoreNLP" in run.unavailable["SPICE"]
    assert run.metrics == ["ROUGE_L"]


def test_the_report_from_stored_scores_equals_the_plain_protocol_run(dataset, clotho_items):
    # Given scores computed through metric runs and stored in the database
    report = agreement_report_build(
        dataset=dataset, metric_names=["ROUGE_L", "BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4"], enqueue=enqueue_chunks
    )
    # When the same clips go through the plain-Python protocol with the same scorers
    clips = protocol.clips_from_fense_items(clotho_items)
    expected = {}
    for name in ["ROUGE_L", "BLEU_4"]:
        direct = protocol.fense_agreement(clips, registry.scorer_for(name))[name]
        expected[name] = {**{s: direct.splits[s].accuracy for s in direct.splits}, "total": direct.total.accuracy}
        expected_pairs = {**{s: direct.splits[s].counted for s in direct.splits}, "total": direct.total.counted}
    # Then the numbers are identical
    assert {name: report["metrics"][name] for name in expected} == expected
    assert report["pairs"] == expected_pairs
    assert list(report["metrics"]) == ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L"]


def test_agreement_report_command_prints_the_exact_json_shape(dataset, capsys):
    call_command("agreement_report", "--dataset", "clotho-sample", "--format", "json", "--metrics", "ROUGE_L,SPICE")
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"dataset", "pairs", "metrics", "unavailable", "scored_against_annotation_graphs"}
    assert report["dataset"] == "clotho-sample"
    assert set(report["pairs"]) == {"HC", "HI", "HM", "MM", "total"}
    assert set(report["metrics"]["ROUGE_L"]) == {"HC", "HI", "HM", "MM", "total"}
    assert report["scored_against_annotation_graphs"] == {"ROUGE_L": 0}
    assert "SPICE" in report["unavailable"]


def test_chunks_of_a_slow_starting_scorer_alternate_with_the_second_half_of_the_others(dataset, monkeypatch):
    from metrics_bridge.services import runs

    monkeypatch.setattr(runs, "CHUNK_SIZE", 7)
    run = metric_run_create(dataset=dataset, metric_names=["BLEU_1", "METEOR", "ROUGE_L"])
    order = list(run.chunks.order_by("index").values_list("metric", flat=True))
    fast = [metric for metric in order if metric != "METEOR"]
    slow_positions = [position for position, metric in enumerate(order) if metric == "METEOR"]
    assert len(slow_positions) >= 3 and len(fast) >= 6
    # METEOR's JVM loads (started with the run's first chunk) while the first half of the others is scored
    assert slow_positions[0] == len(fast) // 2 + 1
    # then one METEOR chunk after each other chunk, as long as there are others left
    assert all(order[position - 1] != "METEOR" for position in slow_positions[: len(fast) - len(fast) // 2])
    assert sorted(run.chunks.values_list("index", flat=True)) == list(range(run.chunks_total))
