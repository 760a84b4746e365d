"""Metric runs through a real Redis broker and real Celery worker processes started by the test."""

import time

import pytest

from corpus.models import Caption, Clip, Dataset
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.services.runs import runs
from metrics_bridge.services.runs.contexts import scoring_context_for
from metrics_bridge.services.runs.plans import scoring_requests_for
from metrics_bridge.services.runs.runs import metric_run_create, metric_run_dispatch
from metrics_bridge.tasks.runs import enqueue_chunks
from tests.chunk_gate import ChunkGate

pytestmark = [pytest.mark.redis, pytest.mark.slow]

SOUNDS = ["a dog barks", "rain falls on a roof", "a car engine idles", "birds chirp", "a bell rings", "wind blows"]


def make_dataset(*, clips: int) -> Dataset:
    dataset = Dataset.objects.create(name="worker-test")
    for index in range(clips):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{index}")
        base = SOUNDS[index % len(SOUNDS)]
        for position in range(5):
            Caption.objects.create(
                clip=clip,
                text=f"{base} {position} times nearby",
                role="reference",
                author_kind="human",
                position=position,
            )
        Caption.objects.create(
            clip=clip, text=f"{base} while {SOUNDS[(index + 1) % len(SOUNDS)]}", role="candidate", author_kind="human"
        )
    return dataset


def wait_for(predicate, *, timeout: float, worker=None, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    log = worker.log_tail() if worker else ""
    raise AssertionError(f"timed out waiting for {what}\n{log}")


def expected_values(run: MetricRun, metric: str) -> dict[tuple[int, str], float]:
    """The same requests scored in this process, straight through the scorer."""
    scorer = registry.scorer_for(metric)
    expected = {}
    for chunk in run.chunks.all():
        requests, _ = scoring_requests_for(chunk_requests=chunk.requests)
        values = scorer.score_batch(requests, scoring_context_for(clip_ids=set()))[metric]
        for planned, result in zip(chunk.requests, values, strict=True):
            expected[(planned["caption_id"], planned["reference_set_key"])] = result.value
    return expected


def stored_values(run: MetricRun, metric: str) -> dict[tuple[int, str], float]:
    rows = MetricScore.objects.filter(metric=metric, caption__clip__dataset=run.dataset)
    return {
        (caption_id, key): value
        for caption_id, key, value in rows.values_list("caption_id", "reference_set__key", "value")
    }


def test_a_run_sent_through_redis_is_scored_by_a_worker_process(real_celery):
    # Given a dataset and a running worker
    dataset = make_dataset(clips=6)
    worker = real_celery()
    # When a ROUGE_L run is queued through the broker
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)
    # Then the worker stores every score and marks the run done
    wait_for(
        lambda: MetricRun.objects.get(pk=run.pk).status == MetricRun.Status.DONE,
        timeout=120,
        worker=worker,
        what="run done",
    )
    run.refresh_from_db()
    assert run.chunks_done == run.chunks_total == 1
    assert stored_values(run, "ROUGE_L") == pytest.approx(expected_values(run, "ROUGE_L"))
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == 6


def test_a_worker_killed_mid_run_is_replaced_and_the_run_finishes_without_duplicates(
    real_celery, monkeypatch, tmp_path
):
    # Given a run of 20 small chunks and a worker that may score 4 of them (tests/chunk_gate.py)
    monkeypatch.setattr(runs, "CHUNK_SIZE", 2)
    dataset = make_dataset(clips=40)
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    assert run.chunks_total == 20
    gate = ChunkGate(tmp_path / "gate")
    gate.allow(4)
    first = real_celery(gate=gate)
    metric_run_dispatch(run=run, enqueue=enqueue_chunks)

    # When the worker is killed (SIGKILL, no chance to ack) while it holds its fifth chunk
    gate.wait_until_waiting(5, worker=first)
    wait_for(lambda: MetricRun.objects.get(pk=run.pk).chunks_done == 4, timeout=120, worker=first, what="4 chunks")
    first.kill()
    run.refresh_from_db()
    assert run.chunks_done == 4 and run.chunks.filter(status=MetricRunChunk.Status.RUNNING).count() == 1
    done_at_kill = run.chunks_done

    # and a new worker is started
    second = real_celery()
    wait_for(
        lambda: MetricRun.objects.get(pk=run.pk).status == MetricRun.Status.DONE,
        timeout=180,
        worker=second,
        what="run done after restart",
    )

    # Then every request has exactly one score, equal to a direct computation
    run.refresh_from_db()
    assert run.chunks_done == run.chunks_total == 20 > done_at_kill
    assert MetricScore.objects.filter(metric="ROUGE_L").count() == 40
    assert stored_values(run, "ROUGE_L") == pytest.approx(expected_values(run, "ROUGE_L"))
