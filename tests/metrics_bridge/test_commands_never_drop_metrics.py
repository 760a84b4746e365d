"""agreement_report, leaderboard and compute_metrics never print a result that quietly lacks a requested metric.

A metric that could not be computed (its chunks failed, the metric cannot run here, the worker was starved and
never started) makes the command exit non-zero naming it and why, and print no report. Under heavy load an
agreement_report once printed a table with none of the 8 requested metrics and exited 0.
"""

import io
import json
import os
import signal

import pytest
from django.core.management import CommandError, call_command

from corpus.services.system_captions import system_captions_import
from metrics_bridge.models import MetricRun, MetricScore, SystemScore
from metrics_bridge.scoring import registry
from metrics_bridge.worker_process import WorkerOnDemand, WorkerProcess
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(shared_dir):
    """Four Clotho-Eval clips with their judged pairs, and a submitted system (for the leaderboard)."""
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:4]
    pairwise_judgements_import(data=items, dataset_name="judged", source_name="clotho_eval.json")
    lines = ["file_name,caption_predicted", *(f'{item["raw_name"]},"{item["MM_1"][0]}"' for item in items)]
    content = "\n".join(lines).encode()
    system_captions_import(content=content, source_name="s.csv", dataset_name="judged", system_name="s")
    return items


@pytest.fixture
def rouge_crashes(monkeypatch):
    """Every ROUGE_L chunk raises (a scorer bug, a worker out of memory): its chunks end FAILED."""
    scorer_class = type(registry.scorer_for("ROUGE_L"))

    def crash(*args, **kwargs):
        raise RuntimeError("ROUGE_L scorer crashed on purpose (test)")

    monkeypatch.setattr(scorer_class, "score_batch", crash)
    monkeypatch.setattr(scorer_class, "score_batches", crash, raising=False)


def _run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _refused(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as refusal:
        call_command(*args, stdout=out, stderr=err)
    return str(refusal.value), out.getvalue()


@pytest.mark.parametrize("command", ["agreement_report", "leaderboard"])
def test_a_report_whose_metric_failed_is_not_printed_and_names_it(judged, rouge_crashes, command):
    message, printed = _refused(command, "--dataset", "judged", "--metrics", "BLEU_4,ROUGE_L", "--format", "json")
    assert printed == "", "no report at all, not one without ROUGE_L"
    assert "could not compute 1 requested metric(s): ROUGE_L: metric run" in message
    assert "ended done with errors" in message and "ROUGE_L scorer crashed on purpose" in message
    assert "BLEU_4:" not in message  # computed: its scores are stored for the next attempt
    stored = MetricScore if command == "agreement_report" else SystemScore
    assert stored.objects.filter(metric="BLEU_4").exists() and not stored.objects.filter(metric="ROUGE_L").exists()


def test_the_same_reports_print_when_every_metric_is_there(judged):
    """The oracle of the refusals above: with nothing broken, the same commands print every requested metric."""
    agreement = json.loads(_run("agreement_report", "--dataset", "judged", "--metrics", "BLEU_4,ROUGE_L",
                                "--format", "json")[0])
    assert {"BLEU_4", "ROUGE_L"} <= set(agreement["metrics"]) and "unavailable" not in agreement
    board = json.loads(_run("leaderboard", "--dataset", "judged", "--metrics", "BLEU_4,ROUGE_L", "--format", "json")[0])
    assert {"BLEU_4", "ROUGE_L"} <= set(board["rank_agreement"])
    mine = next(row for row in board["systems"] if row["system"] == "s")
    assert mine["metrics"]["ROUGE_L"] is not None and mine["metrics"]["BLEU_4"] is not None


def test_compute_metrics_names_the_metric_whose_chunks_failed(judged, rouge_crashes):
    message, printed = _refused("compute_metrics", "--dataset", "judged", "--metrics", "BLEU_4,ROUGE_L", "--wait")
    assert "could not compute 1 requested metric(s): ROUGE_L: metric run" in message
    assert "ROUGE_L scorer crashed on purpose" in message
    assert "done:" not in printed
    assert MetricRun.objects.get().status == MetricRun.Status.DONE_WITH_ERRORS


@pytest.mark.parametrize(
    "command",
    [
        ("agreement_report", "--format", "json"),
        ("leaderboard", "--format", "json"),
        ("compute_metrics", "--wait"),
        ("compute_metrics",),  # queued for the workers: SPICE is not among what was queued
    ],
    ids=["agreement_report", "leaderboard", "compute_metrics-wait", "compute_metrics-queued"],
)
def test_a_requested_metric_that_cannot_run_here_is_an_error_naming_it(judged, command):
    """SPICE needs the Stanford CoreNLP jars (not installed for the tests): asked for by name, it fails the command."""
    assert "SPICE" in registry.unavailable_metrics()
    message, printed = _refused(*command, "--dataset", "judged", "--metrics", "ROUGE_L,SPICE")
    assert "could not compute 1 requested metric(s): SPICE:" in message and "CoreNLP" in message
    assert "{" not in printed


@pytest.mark.slow
def test_a_starved_worker_that_never_starts_fails_the_report_naming_every_metric(
    judged, embedded_celery, monkeypatch
):
    """No worker is alive, so the command starts a temporary one; it gets no CPU at all (SIGSTOP right after it
    is spawned) and never sends a heartbeat. The command gives up after the start timeout, naming the metrics."""
    monkeypatch.setattr(WorkerOnDemand, "START_TIMEOUT", 3)
    spawned = []
    original_start = WorkerProcess.start

    def start_starved(self):
        started = original_start(self)
        os.killpg(self.process.pid, signal.SIGSTOP)
        spawned.append(self)
        return started

    monkeypatch.setattr(WorkerProcess, "start", start_starved)
    monkeypatch.setattr(WorkerProcess, "stop", WorkerProcess.kill)  # a stopped process ignores SIGTERM
    message, printed = _refused("agreement_report", "--dataset", "judged", "--metrics", "BLEU_4,ROUGE_L")
    assert len(spawned) == 1 and not spawned[0].alive()
    assert message.startswith("could not compute BLEU_4, ROUGE_L: ")
    assert "the temporary worker did not start within 3 s" in message
    assert printed == ""
    assert not MetricScore.objects.exists()
