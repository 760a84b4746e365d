"""A gate in front of every chunk a test's worker process scores: "mid-run" on purpose, never by timing.

A test that must see a run half done (a progress bar between two values, a worker killed while it holds a
chunk) starts its worker with a `ChunkGate` (tests/conftest.py: `start_worker(gate=...)`). The worker then
imports this module (`celery worker --include tests.chunk_gate`), which wraps the chunk service's scoring
step: before scoring a chunk it records the chunk in the gate's folder and waits until the test has let
that many chunks through. The claimed chunk keeps its lease meanwhile (the lease keeper renews it), exactly
like a chunk that takes long to score.

    gate.allow(2)                      # two chunks may be scored
    gate.wait_until_waiting(3)         # the third has been claimed and waits at the gate
    ...                                # the run is now exactly 2 chunks done, 1 running
    gate.open()                        # let everything through
    gate.hold(chunk_id)                # ...except this chunk, which waits at the gate whoever claims it
"""

import os
import time
from pathlib import Path

FOLDER_VARIABLE = "CHUNK_GATE_DIR"
UNLIMITED = 10**9


class ChunkGate:
    """The test's side: how many chunks may pass, and which have arrived (the files in `folder`)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.allow(0)

    def allow(self, count: int) -> None:
        """Let `count` chunks in all be scored (counted from the worker's start)."""
        temporary = self.folder / "allowed.tmp"
        temporary.write_text(str(count))
        temporary.replace(self.folder / "allowed")  # atomic: the worker never reads a half-written number

    def open(self) -> None:
        self.allow(UNLIMITED)

    def hold(self, chunk_id: int) -> None:
        """Whatever the count allows, this chunk waits at the gate (every attempt at it)."""
        (self.folder / f"hold-{chunk_id}").touch()

    def chunk_arrivals(self, chunk_id: int) -> int:
        """How many attempts at this chunk reached the gate."""
        return len(list(self.folder.glob(f"arrived-*-chunk-{chunk_id}-attempt-*")))

    def arrived(self) -> int:
        """Chunks that reached the gate (scored, or waiting to be)."""
        return len(list(self.folder.glob("arrived-*")))

    def wait_until_waiting(self, count: int, *, timeout: float = 180, worker=None) -> None:
        """Wait until `count` chunks reached the gate (the last of them waits there when the gate allows fewer)."""
        self._wait(lambda: self.arrived() >= count, f"{count} chunks at the gate", timeout, worker)

    def wait_for_chunk(self, chunk_id: int, *, attempts: int, timeout: float = 180, worker=None) -> None:
        """Wait until attempt number `attempts` at the chunk reached the gate."""
        what = f"attempt {attempts} at chunk {chunk_id}"
        self._wait(lambda: self.chunk_arrivals(chunk_id) >= attempts, what, timeout, worker)

    def _wait(self, condition, what: str, timeout: float, worker) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                log = worker.log_tail() if worker else ""
                raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{log}")
            if worker is not None and not worker.alive():
                raise AssertionError(f"the worker exited before {what}\n{worker.log_tail()}")
            time.sleep(0.05)


def _allowed(folder: Path) -> int:
    try:
        return int((folder / "allowed").read_text())
    except (FileNotFoundError, ValueError):
        return 0


def _install(folder: Path) -> None:
    """Worker side: wrap chunks.chunk_score so each chunk passes the gate first."""
    from metrics_bridge.services.runs import chunks

    scored = chunks.chunk_score

    def gated_chunk_score(*, chunk):
        ticket = len(list(folder.glob("arrived-*"))) + 1
        (folder / f"arrived-{ticket:04d}-chunk-{chunk.pk}-attempt-{chunk.attempts}").touch()
        while _allowed(folder) < ticket or (folder / f"hold-{chunk.pk}").exists():
            time.sleep(0.05)
        return scored(chunk=chunk)

    chunks.chunk_score = gated_chunk_score


if os.environ.get(FOLDER_VARIABLE):
    _install(Path(os.environ[FOLDER_VARIABLE]))
