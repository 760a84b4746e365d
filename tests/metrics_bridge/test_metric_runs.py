"""Metric runs in eager mode: storage, idempotence, versions, cancellation, errors, agreement assembly."""

import json

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.agreement import agreement_report_build
from metrics_bridge.services.runs.runs import metric_run_cancel, metric_run_create
from metrics_bridge.tasks.runs import enqueue_chunks, execute_metric_run
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
    call_command("agreement_report", "--dataset", "clotho-sample", "--format", "json", "--metrics", "ROUGE_L")
    report = json.loads(capsys.readouterr().out)
    # no note: the shipped fluency detector was trained on no text of Clotho-Eval (nor of any imported benchmark)
    assert set(report) == {"dataset", "protocol", "pairs", "metrics", "scored_against_annotation_graphs"}
    assert report["protocol"] == "fense"
    assert report["dataset"] == "clotho-sample"
    assert set(report["pairs"]) == {"HC", "HI", "HM", "MM", "total"}
    assert set(report["metrics"]["ROUGE_L"]) == {"HC", "HI", "HM", "MM", "total"}
    assert report["scored_against_annotation_graphs"] == {"ROUGE_L": 0}
    # A metric that cannot run here (SPICE without CoreNLP), asked for by name, fails the command naming it:
    # tests/metrics_bridge/test_commands_never_drop_metrics.py.


def _chunk_order(run):
    rows = run.chunks.order_by("index").values_list("metric", "requests")
    return [(metric, len(requests)) for metric, requests in rows]


def test_slow_scorer_chunks_are_few_and_spread_over_the_others_for_a_standing_worker(dataset, monkeypatch):
    from metrics_bridge.services.runs import runs

    monkeypatch.setattr(runs, "CHUNK_SIZE", 7)
    run = metric_run_create(dataset=dataset, metric_names=["BLEU_1", "METEOR", "ROUGE_L", "CIDEr_D"])
    order = _chunk_order(run)
    slow_positions = [position for position, (metric, _) in enumerate(order) if metric == "METEOR"]
    fast_sizes = [size for metric, size in order if metric != "METEOR"]
    meteor_sizes = [size for metric, size in order if metric == "METEOR"]
    assert len(slow_positions) >= 3 and len(fast_sizes) >= 3 * len(slow_positions)
    # METEOR's chunks are 8x the size (one JVM scores one chunk at a time), the last one holding the rest
    assert set(meteor_sizes[:-1]) == {56} and 0 < meteor_sizes[-1] <= 56
    assert set(size for metric, size in order if metric in ("BLEU_1", "ROUGE_L")) <= set(range(1, 8))
    # from the first chunk on, one METEOR chunk per equal share of the others' requests; those go largest first
    assert slow_positions[0] == 0
    share = sum(fast_sizes) / len(slow_positions)
    sent_before = [sum(size for metric, size in order[:position] if metric != "METEOR") for position in slow_positions]
    for k, sent in enumerate(sent_before):
        assert k * share <= sent < k * share + max(fast_sizes), (k, sent, share)
    assert fast_sizes == sorted(fast_sizes, reverse=True) and fast_sizes[0] > 7  # a CIDEr-D corpus leads
    assert sorted(run.chunks.values_list("index", flat=True)) == list(range(run.chunks_total))


def test_slow_scorer_chunks_come_last_for_a_worker_still_loading_them(dataset, monkeypatch):
    from metrics_bridge.services.runs import runs

    monkeypatch.setattr(runs, "CHUNK_SIZE", 7)
    names = ["BLEU_1", "METEOR", "ROUGE_L", "CIDEr_D"]
    run = metric_run_create(dataset=dataset, metric_names=names, slow_resources_loading=True)
    order = _chunk_order(run)
    metrics = [metric for metric, _ in order]
    first_slow = metrics.index("METEOR")
    assert first_slow > 0 and set(metrics[first_slow:]) == {"METEOR"}
    fast_sizes = [size for _, size in order[:first_slow]]
    assert fast_sizes == sorted(fast_sizes, reverse=True)
    assert sorted(run.chunks.values_list("index", flat=True)) == list(range(run.chunks_total))


@pytest.mark.parametrize("wait", [False, True])
def test_compute_metrics_stops_on_a_failing_model_check_but_not_on_a_url_check(dataset, wait):
    from django.core import checks
    from django.core.management.base import SystemCheckError

    def broken_model(app_configs=None, **kwargs):
        return [checks.Error("a broken model", id="test.E001")]

    def broken_url(app_configs=None, **kwargs):
        return [checks.Error("a broken URL", id="test.E002")]

    options = {"dataset": dataset.name, "metrics": "ROUGE_L", "wait": wait}
    checks.register(broken_url, checks.Tags.urls)
    try:
        call_command("compute_metrics", **options)
        assert MetricRun.objects.count() == 1
        checks.register(broken_model, checks.Tags.models)
        with pytest.raises(SystemCheckError, match="a broken model"):
            call_command("compute_metrics", **options)
        assert MetricRun.objects.count() == 1
    finally:
        checks.registry.registry.registered_checks.discard(broken_url)
        checks.registry.registry.registered_checks.discard(broken_model)


def test_two_slow_scorers_take_turns(dataset, monkeypatch):
    from metrics_bridge.services.runs import runs

    monkeypatch.setattr(runs, "CHUNK_SIZE", 7)
    names = ["BLEU_1", "METEOR", "SBERT"]
    run = metric_run_create(dataset=dataset, metric_names=names, slow_resources_loading=True)
    metrics = [metric for metric, _ in _chunk_order(run)]
    tail = [metric for metric in metrics if metric != "BLEU_1"]
    assert metrics[-len(tail) :] == tail  # both after the others
    turns = min(tail.count("METEOR"), tail.count("SBERT"))
    assert turns >= 2
    assert tail[: 2 * turns] == ["METEOR", "SBERT"] * turns


def test_an_agreement_run_plans_the_protocol_batches_only_and_a_full_run_adds_the_rest(dataset):
    from metrics_bridge.models import ReferenceSet

    def contexts(run):
        keys = {request["reference_set_key"] for chunk in run.chunks.all() for request in chunk.requests}
        return set(ReferenceSet.objects.filter(key__in=keys).values_list("context", flat=True))

    planned = metric_run_create(dataset=dataset, metric_names=["CIDEr_D"], protocol_only=True)
    protocol_run = execute_metric_run(run=planned)
    assert contexts(protocol_run) and all(context.startswith("fense:") for context in contexts(protocol_run))
    rest = metric_run_create(dataset=dataset, metric_names=["CIDEr_D"])
    assert contexts(rest) == {"all-references"} and rest.chunks_total == 1
