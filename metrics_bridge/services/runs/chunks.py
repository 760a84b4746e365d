"""A chunk's life on a worker: claim it under a lease, score it, store its scores exactly once.

The rules, each enforced by a conditional UPDATE on the chunk row (never read-then-write):
- claim: PENDING -> RUNNING, or RUNNING whose lease expired -> RUNNING with a new token, and
  only while attempts < METRICS_CHUNK_MAX_ATTEMPTS and the run is still active; each claim
  counts one attempt;
- lease: the claiming worker renews `lease_expires_at` from a background thread while it scores;
- finish: scores are written in the same transaction that flips RUNNING -> DONE for the
  claim's token, so a worker that lost its lease (paused past it while another worker took
  over) writes nothing;
- failure: an exception sends the chunk back to PENDING for another attempt, or to FAILED
  with its error once the attempts are used up;
- recovery (`chunks_recover`, run by every worker at start and on each heartbeat): an expired
  lease means the worker died or hung; the chunk is re-sent, or failed when it has used its
  attempts (a chunk that kills its worker every time ends FAILED, never RUNNING forever).
This module never imports Celery: `enqueue` is passed in by metrics_bridge.tasks.runs.
"""

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from common.structured_log import log_event
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore, SystemScore
from metrics_bridge.scoring import registry
from metrics_bridge.services.runs.chunk_scoring import chunk_score
from metrics_bridge.services.runs.runs import Enqueue, chunks_mark_dispatched, metric_run_refresh_progress
from metrics_bridge.services.runs.score_storage import ScoreRow, metric_scores_upsert

logger = logging.getLogger("captioneval.metric_runs")
Status = MetricRunChunk.Status


class ChunkOutcome:
    DONE = "done"
    RETRY = "retry"
    FAILED = "failed"
    SKIPPED = "skipped"
    LEASE_LOST = "lease-lost"


def chunk_log_fields(chunk: MetricRunChunk) -> dict:
    return {
        "run": chunk.run_id,
        "chunk": chunk.index,
        "chunk_id": chunk.pk,
        "metric": chunk.metric,
        "attempt": chunk.attempts,
    }


def lease_seconds() -> int:
    return settings.METRICS_CHUNK_LEASE_SECONDS


def max_attempts() -> int:
    return settings.METRICS_CHUNK_MAX_ATTEMPTS


def chunk_claim(*, chunk_id: int, worker: str, now: datetime | None = None) -> MetricRunChunk | None:
    """Take the chunk for scoring, or None when it is not claimable (done, leased by a live worker, run over).

    `now`: the time leases are judged and given at (tests drive leases with a clock of their own)."""
    now = now or timezone.now()
    token = uuid.uuid4().hex
    claimable = Q(status=Status.PENDING) | Q(status=Status.RUNNING, lease_expires_at__lt=now)
    # A subquery on the run table, not a join: the row conditions stay on the chunk row itself, which
    # PostgreSQL re-checks after waiting for a concurrent claim's lock (so two claims can't both win).
    active_runs = MetricRun.objects.filter(status__in=MetricRun.ACTIVE_STATUSES).values("pk")
    claimed = MetricRunChunk.objects.filter(
        claimable, pk=chunk_id, attempts__lt=max_attempts(), run_id__in=active_runs
    ).update(
        status=Status.RUNNING,
        attempts=F("attempts") + 1,
        lease_token=token,
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
        claimed_by=worker[:200],
    )
    if not claimed:
        chunks_fail_exhausted(now=now, chunk_ids=[chunk_id])
        log_event(logger, "chunk_skipped", chunk_id=chunk_id, worker=worker, level=logging.DEBUG)
        return None
    chunk = MetricRunChunk.objects.select_related("run__dataset").get(pk=chunk_id)
    chunk.lease_token = token  # ours, even if the row has moved on since: every later write is conditional on it
    MetricRun.objects.filter(pk=chunk.run_id, status=MetricRun.Status.PENDING).update(status=MetricRun.Status.RUNNING)
    log_event(
        logger,
        "chunk_claimed",
        **chunk_log_fields(chunk),
        worker=worker,
    )
    return chunk


class LeaseKeeper:
    """Renews a claimed chunk's lease every third of its length, from a thread, while the chunk is scored.

    Not started inside a transaction (eager tasks in tests): a second connection could not see the
    claim there. `lost` is set when the lease was taken away; the final conditional write is what
    actually protects the scores, this only lets the log say so early.
    """

    def __init__(
        self,
        *,
        chunk_id: int,
        token: str,
        seconds: int,
        clock: Callable[[], datetime] = timezone.now,
        renew_every: float | None = None,
    ):
        """`clock` gives the time a renewal counts from and `renew_every` the wait between renewals (a third of
        the lease): tests pass their own, to drive leases without waiting for them."""
        self.chunk_id, self.token, self.seconds = chunk_id, token, seconds
        self.clock, self.renew_every = clock, renew_every if renew_every is not None else seconds / 3
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "LeaseKeeper":
        if not connection.in_atomic_block:
            self._thread = threading.Thread(
                target=self._renew_until_stopped, name=f"lease-{self.chunk_id}", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=self.seconds)

    def _renew_until_stopped(self) -> None:
        try:
            while not self._stop.wait(self.renew_every):
                try:
                    renewed = MetricRunChunk.objects.filter(
                        pk=self.chunk_id, lease_token=self.token, status=Status.RUNNING
                    ).update(lease_expires_at=self.clock() + timedelta(seconds=self.seconds))
                except DatabaseError as error:  # e.g. the connection was terminated: try again next time
                    log_event(
                        logger,
                        "lease_renewal_failed",
                        chunk_id=self.chunk_id,
                        error=str(error)[:300],
                        level=logging.WARNING,
                    )
                    connection.close()
                    continue
                if not renewed:
                    self.lost.set()
                    return
        finally:
            connection.close()


_warmed_up_runs: set[int] = set()


def run_warm_up(*, run: MetricRun) -> None:
    """The first time this process works on a run, start the slow resources of all its metrics in the background.

    METEOR's JVM takes seconds to load its paraphrase table: started when the worker takes the run's
    first chunk (the planner puts the chunks of such scorers last), it loads while the others are scored.
    """
    if run.pk not in _warmed_up_runs:
        _warmed_up_runs.add(run.pk)
        started = registry.warm_up_metrics(run.metrics)
        if started:
            log_event(logger, "run_warm_up", run=run.pk, scorers=started)


def chunk_process(*, chunk_id: int, worker: str) -> str:
    """Claim, score and store one chunk; returns a ChunkOutcome (RETRY: the caller sends it again)."""
    chunk = chunk_claim(chunk_id=chunk_id, worker=worker)
    if chunk is None:
        return ChunkOutcome.SKIPPED
    run_warm_up(run=chunk.run)
    started = time.monotonic()
    try:
        with LeaseKeeper(chunk_id=chunk.pk, token=chunk.lease_token, seconds=lease_seconds()) as lease:
            scores = chunk_score(chunk=chunk)
        outcome = _chunk_store(chunk=chunk, scores=scores)
    except Exception as error:  # recorded on the chunk; the attempt cap decides between retry and failure
        return _chunk_attempt_failed(chunk=chunk, error=error, worker=worker)
    log_event(
        logger,
        "chunk_done" if outcome == ChunkOutcome.DONE else "chunk_lease_lost",
        level=logging.INFO if outcome == ChunkOutcome.DONE else logging.WARNING,
        **chunk_log_fields(chunk),
        worker=worker,
        scores=len(scores),
        seconds=round(time.monotonic() - started, 3),
        lease_lost_early=lease.lost.is_set(),
    )
    return outcome


#: How each kind of model row a chunk produces is upserted: (its identity fields, the fields a re-run rewrites).
#: A metric chunk's caption scores come as ScoreRow tuples instead (score_storage: one prepared statement).
SCORE_UPSERTS = {
    MetricScore: (["metric", "version", "caption", "reference_set"], ["value", "details", "run"]),
    SystemScore: (["dataset", "system", "metric", "version", "fingerprint"], ["value", "details", "run"]),
}


def _chunk_store(*, chunk: MetricRunChunk, scores: list[ScoreRow | MetricScore | SystemScore]) -> str:
    """Write the scores and finish the chunk in one transaction, only if this claim still holds the lease."""
    with transaction.atomic():
        finished = MetricRunChunk.objects.filter(
            pk=chunk.pk, lease_token=chunk.lease_token, status=Status.RUNNING
        ).update(status=Status.DONE, error="", lease_expires_at=None, finished_at=timezone.now())
        if not finished:
            return ChunkOutcome.LEASE_LOST
        metric_scores_upsert(rows=[row for row in scores if isinstance(row, ScoreRow)], run_id=chunk.run_id)
        for model, (unique_fields, update_fields) in SCORE_UPSERTS.items():
            rows = [row for row in scores if type(row) is model]
            if rows:
                model.objects.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=unique_fields,
                    update_fields=update_fields,
                    batch_size=500,
                )
        metric_run_refresh_progress(run_id=chunk.run_id)
    return ChunkOutcome.DONE


def _chunk_attempt_failed(*, chunk: MetricRunChunk, error: Exception, worker: str) -> str:
    """Record the error; back to PENDING while attempts remain, else FAILED (and the run may end)."""
    if isinstance(error, DatabaseError) and not connection.in_atomic_block:
        connection.close()  # a broken connection (server restart, terminated backend): the next query reconnects
    message = f"attempt {chunk.attempts} on {worker}: " + "".join(traceback.format_exception(error))[-4000:]
    give_up = chunk.attempts >= max_attempts()
    with transaction.atomic():
        updated = MetricRunChunk.objects.filter(
            pk=chunk.pk, lease_token=chunk.lease_token, status=Status.RUNNING
        ).update(
            status=Status.FAILED if give_up else Status.PENDING,
            error=message,
            lease_expires_at=None,
            finished_at=timezone.now() if give_up else None,
            dispatched_at=None if give_up else timezone.now(),
        )
        if updated and give_up:
            metric_run_refresh_progress(run_id=chunk.run_id)
    log_event(
        logger,
        "chunk_failed" if give_up else "chunk_attempt_failed",
        level=logging.ERROR if give_up else logging.WARNING,
        **chunk_log_fields(chunk),
        max_attempts=max_attempts(),
        worker=worker,
        error=f"{type(error).__name__}: {error}"[:500],
    )
    if not updated:
        return ChunkOutcome.LEASE_LOST
    return ChunkOutcome.FAILED if give_up else ChunkOutcome.RETRY


def chunks_fail_exhausted(*, now: datetime, chunk_ids: list[int] | None = None) -> set[int]:
    """Chunks whose last allowed attempt lost its worker (lease expired) become FAILED; returns their run ids."""
    exhausted = MetricRunChunk.objects.filter(
        status=Status.RUNNING, lease_expires_at__lt=now, attempts__gte=max_attempts()
    )
    if chunk_ids is not None:
        exhausted = exhausted.filter(pk__in=chunk_ids)
    run_ids = set()
    for chunk in exhausted.only("pk", "run_id", "index", "metric", "attempts", "claimed_by", "error"):
        reason = (
            f"gave up after {chunk.attempts} attempt(s): the worker scoring it ({chunk.claimed_by or 'unknown'}) "
            "stopped renewing its lease (killed, out of memory or hung)"
        )
        previous = f"\nprevious error: {chunk.error}" if chunk.error else ""
        failed = MetricRunChunk.objects.filter(pk=chunk.pk, status=Status.RUNNING, lease_expires_at__lt=now).update(
            status=Status.FAILED, error=(reason + previous)[:8000], lease_expires_at=None, finished_at=now
        )
        if failed:
            run_ids.add(chunk.run_id)
            log_event(
                logger,
                "chunk_failed",
                level=logging.ERROR,
                **chunk_log_fields(chunk),
                max_attempts=max_attempts(),
                error=reason,
            )
    for run_id in run_ids:
        metric_run_refresh_progress(run_id=run_id)
    return run_ids


def chunks_release_of_gone_worker(*, name: str) -> int:
    """End the leases of chunks claimed by the worker called `name`, known to be gone (its starter killed it):
    the next recovery sweep sends them again at once instead of after the lease. Returns how many."""
    return MetricRunChunk.objects.filter(status=Status.RUNNING, claimed_by__startswith=f"{name} ").update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def chunks_recover(*, enqueue: Enqueue, resend_pending_before: datetime | None = None) -> dict[str, int]:
    """Put lost work back in motion; returns counts of what it did.

    - expired leases with attempts left: back to PENDING and sent again;
    - expired leases with no attempt left: FAILED (see chunks_fail_exhausted);
    - with `resend_pending_before`: PENDING chunks of active runs last sent before then are sent again
      (a worker calls this at start-up and when it is idle while such chunks wait: their messages were
      lost with a broker restart or a worker killed between taking a message and claiming its chunk).
    Resending is harmless: a second message for a chunk finds nothing to claim.
    """
    now = timezone.now()
    failed_runs = chunks_fail_exhausted(now=now)
    expired = list(
        MetricRunChunk.objects.filter(status=Status.RUNNING, lease_expires_at__lt=now).values_list(
            "pk", "run_id", "claimed_by"
        )
    )
    released = []
    for chunk_id, run_id, claimed_by in expired:
        if MetricRunChunk.objects.filter(pk=chunk_id, status=Status.RUNNING, lease_expires_at__lt=now).update(
            status=Status.PENDING, lease_expires_at=None, dispatched_at=now
        ):
            released.append(chunk_id)
            log_event(
                logger, "chunk_lease_expired", level=logging.WARNING, run=run_id, chunk_id=chunk_id, worker=claimed_by
            )
    resent: list[int] = []
    if resend_pending_before is not None:
        # A chunk never sent counts as sent when its run was planned: the planner sends right after saving,
        # and resending a run that is being sent at this moment would only duplicate its messages.
        waiting = MetricRunChunk.objects.filter(
            Q(dispatched_at__isnull=True, run__created_at__lt=resend_pending_before)
            | Q(dispatched_at__lt=resend_pending_before),
            status=Status.PENDING,
            run__status__in=MetricRun.ACTIVE_STATUSES,
        )
        resent = list(waiting.values_list("pk", flat=True))
        chunks_mark_dispatched(chunk_ids=resent)
    to_send = released + resent
    if to_send:
        enqueue(to_send)
    # Runs left active with nothing open (e.g. their last chunk's worker died after committing): end them.
    stuck = MetricRun.objects.filter(status__in=MetricRun.ACTIVE_STATUSES).exclude(
        chunks__status__in=[Status.PENDING, Status.RUNNING]
    )
    for run_id in stuck.values_list("pk", flat=True):
        metric_run_refresh_progress(run_id=run_id)
    if to_send or failed_runs:
        log_event(
            logger, "chunks_recovered", released=len(released), resent=len(resent), failed_runs=sorted(failed_runs)
        )
    return {"released": len(released), "resent": len(resent), "failed_runs": len(failed_runs)}
