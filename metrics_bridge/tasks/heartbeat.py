"""The worker's heartbeat thread: its row in the database, and lost chunks recovered, every period."""

import logging
import os
import threading
import time
from datetime import timedelta

from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from common.structured_log import log_event
from metrics_bridge.services.runs.chunks import chunks_recover
from metrics_bridge.services.runs.workers import (
    worker_has_running_chunk,
    worker_heartbeat_beat,
    worker_heartbeat_remove,
)
from metrics_bridge.tasks.runs import enqueue_chunks

logger = logging.getLogger("captioneval.workers")

#: When this process started (this module is imported while a worker boots, before it consumes messages).
PROCESS_STARTED_AT = timezone.now()

#: An idle worker re-sends pending chunks sent at least this long ago (their messages were lost).
RESEND_AFTER_SECONDS = 10


class Heartbeat(threading.Thread):
    """In the worker's main process: writes the heartbeat row and recovers lost chunks every period.

    At start-up it re-sends every pending chunk of an active run sent before this process started (a
    run whose worker died resumes when a worker returns; chunks sent since then are in the broker's
    queue for this worker, and sending them twice would only add work); later it re-sends pending
    chunks only while this worker is idle, which means their messages are gone (a broker restarted
    without persistence, a worker killed after taking a message). Leases that expired are released or
    failed on every beat.
    """

    def __init__(self, *, name: str, broker: str, period: float):
        super().__init__(name="captioneval-heartbeat", daemon=True)
        self.worker_name, self.broker, self.period = name, broker, period
        self.started_at = timezone.now()
        self.stopping = threading.Event()
        self.last_busy = time.monotonic()

    def run(self) -> None:
        first = True
        while not self.stopping.is_set():
            try:
                worker_heartbeat_beat(
                    name=self.worker_name, pid=os.getpid(), broker=self.broker, started_at=self.started_at
                )
                chunks_recover(enqueue=enqueue_chunks, resend_pending_before=self._resend_before(first))
                first = False
            except DatabaseError as error:  # database restarting or connection terminated: try again next period
                log_event(
                    logger, "heartbeat_failed", level=logging.WARNING, worker=self.worker_name, error=str(error)[:300]
                )
                connection.close()
            except Exception as error:  # never let the heartbeat die silently
                log_event(
                    logger,
                    "heartbeat_failed",
                    level=logging.ERROR,
                    worker=self.worker_name,
                    error=f"{type(error).__name__}: {error}"[:300],
                )
            self.stopping.wait(self.period)
        close_old_connections()

    def _resend_before(self, first: bool):
        """Cut-off for re-sending pending chunks: all of them at start-up; later only while this worker is idle.

        Idle means no chunk claimed by this worker for a while (read from the chunk rows, not from Celery's
        in-memory state, which a lost broker connection can leave stale). An idle worker with prefetch 1
        would have received any message still queued, so pending chunks sent before the cut-off are lost.
        """
        if first:
            return PROCESS_STARTED_AT
        if worker_has_running_chunk(name=self.worker_name):
            self.last_busy = time.monotonic()
            return None
        wait = max(2 * self.period, RESEND_AFTER_SECONDS)
        if time.monotonic() - self.last_busy < wait:
            return None
        return timezone.now() - timedelta(seconds=wait)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.period + 5)
        try:
            worker_heartbeat_remove(name=self.worker_name)
        except DatabaseError:
            pass
        finally:
            connection.close()
