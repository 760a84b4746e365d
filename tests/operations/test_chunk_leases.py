"""Exactly-once chunks: conditional claims, leases, attempt caps, recovery of lost work (no Celery here)."""

import ast
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from corpus.models import Caption, Clip, Dataset
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.services.runs import chunk_scoring, runs
from metrics_bridge.services.runs import chunks as chunk_service
from metrics_bridge.services.runs.chunks import (
    ChunkOutcome,
    LeaseKeeper,
    chunk_claim,
    chunk_process,
    chunks_recover,
    chunks_release_of_gone_worker,
)
from metrics_bridge.services.runs.runs import metric_run_cancel, metric_run_create

# db_specific: claims and leases are conditional UPDATEs; their exactly-once rests on the engine
pytestmark = pytest.mark.db_specific

PROJECT_DIR = Path(__file__).resolve().parents[2]
Status = MetricRunChunk.Status


class Outbox(list):
    """A fake `enqueue`: remembers the chunk ids it was asked to send."""

    def __call__(self, chunk_ids):
        self.extend(chunk_ids)


def small_run(*, clips: int = 4, chunk_size: int = 2, monkeypatch) -> MetricRun:
    monkeypatch.setattr(runs, "CHUNK_SIZE", chunk_size)
    dataset = Dataset.objects.create(name=f"lease-test-{Dataset.objects.count()}")
    for index in range(clips):
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{index}")
        for position in range(2):
            Caption.objects.create(
                clip=clip,
                text=f"a dog barks {position} {index}",
                role="reference",
                author_kind="human",
                position=position,
            )
        Caption.objects.create(clip=clip, text=f"a dog is barking {index}", role="candidate", author_kind="human")
    return metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])


def expire_lease(chunk: MetricRunChunk) -> None:
    MetricRunChunk.objects.filter(pk=chunk.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_a_chunk_is_claimed_once_while_its_lease_holds(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    chunk = run.chunks.first()
    first = chunk_claim(chunk_id=chunk.pk, worker="w1")
    assert first is not None and first.attempts == 1 and first.claimed_by == "w1"
    assert chunk_claim(chunk_id=chunk.pk, worker="w2") is None
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts, chunk.claimed_by) == (Status.RUNNING, 1, "w1")
    assert chunk.lease_expires_at > timezone.now()
    run.refresh_from_db()
    assert run.status == MetricRun.Status.RUNNING


@pytest.mark.django_db
def test_an_expired_lease_makes_the_chunk_claimable_and_the_old_holder_writes_nothing(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    chunk = run.chunks.first()
    stale = chunk_claim(chunk_id=chunk.pk, worker="slow worker")
    expire_lease(chunk)
    fresh = chunk_claim(chunk_id=chunk.pk, worker="new worker")
    assert fresh is not None and fresh.attempts == 2 and fresh.lease_token != stale.lease_token

    # The slow worker wakes up and tries to store its scores: refused, nothing written
    scores = chunk_scoring.chunk_score(chunk=stale)
    assert chunk_service._chunk_store(chunk=stale, scores=scores) == ChunkOutcome.LEASE_LOST
    assert not MetricScore.objects.exists()
    # The new holder's scores go in, once
    assert chunk_service._chunk_store(chunk=fresh, scores=chunk_scoring.chunk_score(chunk=fresh)) == ChunkOutcome.DONE
    assert MetricScore.objects.count() == len(chunk.requests)
    assert chunk_claim(chunk_id=chunk.pk, worker="third") is None


@pytest.mark.django_db
def test_chunks_of_a_cancelled_run_are_not_claimed(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    chunk = run.chunks.first()
    metric_run_cancel(run=run)
    assert chunk_claim(chunk_id=chunk.pk, worker="w") is None
    assert chunk_process(chunk_id=chunk.pk, worker="w") == ChunkOutcome.SKIPPED


class Clock:
    """The time leases are judged at, moved by the test (no waiting for a lease to run out)."""

    def __init__(self):
        self.now = timezone.now()

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def wait_for(condition, *, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_the_chunk_is_scored(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    clock, lease = Clock(), 60
    monkeypatch.setattr(chunk_service, "lease_seconds", lambda: lease)
    chunk = chunk_claim(chunk_id=run.chunks.first().pk, worker="w1", now=clock())
    clock.advance(lease + 30)  # the first lease is long over by this clock...
    keeper = LeaseKeeper(chunk_id=chunk.pk, token=chunk.lease_token, seconds=lease, clock=clock, renew_every=0.02)
    with keeper:
        # ...but the keeper renews it from the same clock while the chunk is scored
        renewed = clock() + timedelta(seconds=lease)
        wait_for(lambda: MetricRunChunk.objects.get(pk=chunk.pk).lease_expires_at == renewed, what="a renewal")
        assert chunk_claim(chunk_id=chunk.pk, worker="w2", now=clock()) is None
    assert not keeper.lost.is_set()
    clock.advance(lease + 1)  # renewal stopped with the scoring: the lease runs out
    assert chunk_claim(chunk_id=chunk.pk, worker="w2", now=clock()) is not None


@pytest.mark.django_db(transaction=True)
def test_a_lease_keeper_notices_when_its_lease_was_taken(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    chunk = chunk_claim(chunk_id=run.chunks.first().pk, worker="w1")
    with LeaseKeeper(chunk_id=chunk.pk, token=chunk.lease_token, seconds=60, renew_every=0.02) as lease:
        MetricRunChunk.objects.filter(pk=chunk.pk).update(lease_token="someone-else")
        assert lease.lost.wait(timeout=60)


@pytest.mark.django_db
def test_a_chunk_whose_worker_keeps_dying_fails_after_the_attempt_cap_and_the_run_names_it(monkeypatch, settings):
    settings.METRICS_CHUNK_MAX_ATTEMPTS = 3
    run = small_run(monkeypatch=monkeypatch)
    poisoned, *others = list(run.chunks.order_by("index"))
    for other in others:
        assert chunk_process(chunk_id=other.pk, worker="healthy") == ChunkOutcome.DONE
    outbox = Outbox()
    for attempt in range(1, 4):
        claimed = chunk_claim(chunk_id=poisoned.pk, worker=f"doomed-{attempt}")
        assert claimed.attempts == attempt
        expire_lease(poisoned)  # the worker was killed: nobody renews
        chunks_recover(enqueue=outbox)
    poisoned.refresh_from_db()
    run.refresh_from_db()
    assert poisoned.status == Status.FAILED and poisoned.attempts == 3
    assert "gave up after 3 attempt(s)" in poisoned.error and "doomed-3" in poisoned.error
    assert outbox == [poisoned.pk, poisoned.pk]  # re-sent after the first two deaths only
    assert run.status == MetricRun.Status.DONE_WITH_ERRORS
    assert run.chunks_done == len(others) and run.chunks_failed == 1
    assert f"1 chunk(s) failed: ROUGE_L chunk {poisoned.index} (3 attempt(s))" in run.error
    assert not MetricRunChunk.objects.filter(status=Status.RUNNING).exists()
    # No further claim, even by a message still in some queue
    assert chunk_claim(chunk_id=poisoned.pk, worker="late") is None


@pytest.mark.django_db
def test_recovery_resends_pending_chunks_only_when_asked(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    pending = sorted(run.chunks.values_list("pk", flat=True))
    runs.chunks_mark_dispatched(chunk_ids=pending)
    outbox = Outbox()
    chunks_recover(enqueue=outbox)
    assert outbox == []  # a busy worker: the messages are presumably still queued
    chunks_recover(enqueue=outbox, resend_pending_before=timezone.now() - timedelta(minutes=1))
    assert outbox == []  # sent a moment ago: not yet considered lost
    chunks_recover(enqueue=outbox, resend_pending_before=timezone.now())
    assert sorted(outbox) == pending
    metric_run_cancel(run=run)
    outbox.clear()
    chunks_recover(enqueue=outbox, resend_pending_before=timezone.now())
    assert outbox == []


@pytest.mark.django_db
def test_chunks_of_a_killed_worker_are_sent_again_at_once_and_others_keep_their_lease(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    first, second, *_ = list(run.chunks.order_by("index"))
    chunk_claim(chunk_id=first.pk, worker="compute-metrics-7@host pid 7")
    chunk_claim(chunk_id=second.pk, worker="compute-metrics-77@host pid 77")  # another worker, same name prefix
    assert chunks_release_of_gone_worker(name="compute-metrics-7@host") == 1
    outbox = Outbox()
    chunks_recover(enqueue=outbox)
    assert outbox == [first.pk]
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.attempts) == (Status.PENDING, 1)  # the killed claim counts as an attempt
    assert second.status == Status.RUNNING and second.lease_expires_at > timezone.now()
    assert chunk_claim(chunk_id=first.pk, worker="next pid 8").attempts == 2


@pytest.mark.django_db
def test_chunks_never_sent_count_as_sent_when_their_run_was_planned(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)  # planned, its chunks not sent yet (dispatched_at is null)
    outbox = Outbox()
    chunks_recover(enqueue=outbox, resend_pending_before=run.created_at - timedelta(seconds=1))
    assert outbox == []  # a worker started after the planning: the planner is sending them right now
    chunks_recover(enqueue=outbox, resend_pending_before=run.created_at + timedelta(seconds=1))
    assert sorted(outbox) == sorted(run.chunks.values_list("pk", flat=True))  # planned before it started: lost


@pytest.mark.django_db
def test_a_run_left_active_with_nothing_open_is_ended_by_recovery(monkeypatch):
    run = small_run(monkeypatch=monkeypatch)
    run.chunks.update(status=Status.DONE)  # e.g. the last worker died between its commit and the recount
    chunks_recover(enqueue=Outbox())
    run.refresh_from_db()
    assert run.status == MetricRun.Status.DONE and run.chunks_done == run.chunks_total


def test_services_never_import_celery_or_the_tasks():
    """Tasks call services, never the reverse."""
    offenders = []
    for path in sorted((PROJECT_DIR / "metrics_bridge" / "services").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                if name.split(".")[0] == "celery" or name.startswith(
                    ("metrics_bridge.tasks", "metrics_bridge.worker_process")
                ):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []
