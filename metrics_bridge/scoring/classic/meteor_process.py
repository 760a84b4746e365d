"""METEOR 1.5 through pycocoevalcap's jar, one long-lived JVM per process, many segments per round trip.

pycocoevalcap.meteor.Meteor starts a JVM (~5-10 s: it loads the paraphrase table) per instance and
sends one `SCORE ||| ref_1 ||| ... ||| ref_n ||| hypothesis` line at a time, then one `EVAL` line
with every segment's statistics; the per-segment METEOR values printed by EVAL are what it returns.

Here the same jar runs with the same arguments, but:
- the JVM is started once and kept (`warm_up()` starts it in the background);
- METEOR scores a hypothesis against several references by scoring it against each one and keeping
  the best (Meteor 1.5's multi-reference rule), so a hypothesis seen with several overlapping
  reference lists (the 5 leave-one-out passes of an MM caption) is scored once per distinct
  reference and each request takes the maximum over its references; other requests are sent as
  pycocoevalcap's own multi-reference line. The tests and the benchmark check that the maximum
  equals pycocoevalcap's multi-reference value (it is exact, |delta| = 0);
- lines are streamed by a writer thread instead of one blocking round trip each;
- values are cached by (hypothesis, reference) for the life of the process.
Inputs are PTB-tokenized texts (as pycocoevalcap's scorers receive them).
"""

from __future__ import annotations

import atexit
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence

from .java_runtime import java_executable
from .ptb_tokenizer import pycocoevalcap_dir

METEOR_JAR_NAME = "meteor-1.5.jar"
# -Xmx2G as pycocoevalcap; serial GC because the machine's cores are shared with the other workers;
# UTF-8 so the reading of stdin does not depend on the worker's locale.
JVM_OPTIONS = ["-Xmx2G", "-XX:+UseSerialGC", "-Dfile.encoding=UTF-8"]
METEOR_ARGUMENTS = ["-", "-", "-stdio", "-l", "en", "-norm"]
CACHE_SIZE = 500_000
LINE_COST = 0.3  # ms per SCORE line on the JVM (see _single_reference_hypotheses)
REFERENCE_COST = 0.37  # ms per reference in a line


def _hypothesis_text(hypothesis: str) -> str:
    return hypothesis.replace("|||", "").replace("  ", " ")


def _score_line(hypothesis: str, references: Sequence[str]) -> str:
    """Exactly pycocoevalcap's Meteor._stat line."""
    return " ||| ".join(("SCORE", " ||| ".join(references), _hypothesis_text(hypothesis)))


def _single_reference_hypotheses(requests: Sequence[tuple[str, tuple[str, ...]]]) -> set[str]:
    """Hypotheses cheaper to score one reference at a time (then max) than one line per request.

    A hypothesis scored against several overlapping reference lists (leave-one-out passes) costs
    less as one line per distinct reference; one scored against a single list costs less as that
    one multi-reference line. Costs measured on the METEOR 1.5 JVM: ~0.3 ms per line plus ~0.37 ms
    per reference. A reference containing the `|||` separator forces pycocoevalcap's own line.
    """
    lists: dict[str, set[tuple[str, ...]]] = {}
    for hypothesis, references in requests:
        lists.setdefault(hypothesis, set()).add(references)
    chosen = set()
    for hypothesis, reference_lists in lists.items():
        distinct = {reference for references in reference_lists for reference in references}
        if any("|||" in reference for reference in distinct):
            continue
        per_request = sum(LINE_COST + REFERENCE_COST * len(references) for references in reference_lists)
        if len(distinct) * (LINE_COST + REFERENCE_COST) < per_request:
            chosen.add(hypothesis)
    return chosen


class MeteorProcess:
    """A METEOR 1.5 JVM in -stdio mode. Thread-safe; restarts once if the JVM has died."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._cache: OrderedDict[tuple, float] = OrderedDict()
        #: JVM starts in this process (tests/metrics_bridge/test_scoring_classic.py reads it)
        self.starts = 0

    def start(self) -> None:
        """Start the JVM if it isn't running; returns at once (the paraphrase table loads meanwhile)."""
        with self._start_lock:
            if self._process is None or self._process.poll() is not None:
                self._launch()

    def _launch(self) -> None:
        self._terminate()  # a JVM that exited on its own still holds its stderr file
        meteor_dir = pycocoevalcap_dir() / "meteor"
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [java_executable(), *JVM_OPTIONS, "-jar", METEOR_JAR_NAME, *METEOR_ARGUMENTS],
            cwd=meteor_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.starts += 1

    def close(self) -> None:
        with self._lock:
            self._terminate()

    def _terminate(self) -> None:
        if self._process is not None:
            try:
                self._process.stdin.close()
                self._process.kill()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def score(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[float]:
        """METEOR of each (tokenized hypothesis, tokenized references), as pycocoevalcap computes it."""
        requests = [(hypothesis, tuple(references)) for hypothesis, references in requests]
        if any(not references for _, references in requests):
            raise ValueError("METEOR needs at least one reference per candidate")
        single_reference = _single_reference_hypotheses(requests)
        units_per_request = [
            [(hypothesis, (reference,)) for reference in references]
            if hypothesis in single_reference
            else [(hypothesis, references)]
            for hypothesis, references in requests
        ]
        with self._lock:
            missing = list(dict.fromkeys(u for units in units_per_request for u in units if u not in self._cache))
            fresh = dict(zip(missing, self._score_units(missing), strict=True)) if missing else {}
            result = []
            for units in units_per_request:
                result.append(max(fresh[u] if u in fresh else self._cached(u) for u in units))
            self._cache.update(fresh)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result

    def corpus_score(self, requests: Sequence[tuple[str, Sequence[str]]]) -> float:
        """pycocoevalcap's Meteor().compute_score value for the corpus: one SCORE line per request (all its
        references on the line), one EVAL line with every segment's statistics, and the aggregate METEOR
        the JVM prints after the per-segment values (not their mean)."""
        lines = [_score_line(hypothesis, tuple(references)) for hypothesis, references in requests]
        if not lines:
            raise ValueError("METEOR needs at least one request")
        with self._lock:
            for attempt in (1, 2):
                self.start()
                try:
                    stats = self._stream(lines, len(lines))
                    answers = self._stream(["EVAL" + "".join(f" ||| {line}" for line in stats)], len(stats) + 1)
                    return float(answers[-1])
                except (BrokenPipeError, RuntimeError):
                    self._terminate()
                    if attempt == 2:
                        raise
                except BaseException:
                    self._terminate()
                    raise
        raise AssertionError("unreachable")

    def _cached(self, unit: tuple) -> float:
        self._cache.move_to_end(unit)
        return self._cache[unit]

    def _score_units(self, units: list[tuple[str, tuple[str, ...]]]) -> list[float]:
        lines = [_score_line(hypothesis, references) for hypothesis, references in units]
        for attempt in (1, 2):
            self.start()
            try:
                return self._exchange(lines)
            except (BrokenPipeError, RuntimeError):
                self._terminate()  # the JVM died (killed, out of memory): one fresh start, then give up
                if attempt == 2:
                    raise
            except BaseException:
                self._terminate()  # never leave unread answers in the pipe for the next caller
                raise
        raise AssertionError("unreachable")

    def _exchange(self, score_lines: list[str]) -> list[float]:
        stats = self._stream(score_lines, len(score_lines))
        eval_line = "EVAL" + "".join(f" ||| {line}" for line in stats)
        answers = self._stream([eval_line], len(stats) + 1)  # per-segment values, then the aggregate
        return [float(value) for value in answers[: len(stats)]]

    def _stream(self, lines: list[str], expected: int) -> list[str]:
        """Send the lines and read `expected` answer lines, in large blocks both ways.

        A writer thread sends while this thread reads (the JVM answers as it goes; the pipes would fill
        up otherwise). Both move whole blocks: a worker scoring another chunk in a second thread holds
        the GIL most of the time, and a line-by-line loop would wait for it once per line (~5 ms each).
        """
        process = self._process
        failure: list[BaseException] = []
        payload = "".join(f"{line}\n" for line in lines).encode()

        def write() -> None:
            try:
                process.stdin.write(payload)
                process.stdin.flush()
            except BaseException as error:  # reported by the reader below
                failure.append(error)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        received = bytearray()
        newlines = 0
        while newlines < expected:
            block = process.stdout.read1(1 << 20)
            if not block:
                writer.join(timeout=1)
                raise RuntimeError(f"METEOR JVM stopped (exit {process.poll()}): {self._stderr_tail()}")
            received += block
            newlines += block.count(b"\n")
        writer.join()
        if failure:
            raise failure[0]
        answers = received.decode().split("\n")
        if newlines > expected or answers[-1]:
            raise RuntimeError(f"METEOR JVM answered {newlines} lines to {expected}: {self._stderr_tail()}")
        return [answer.strip() for answer in answers[:expected]]

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-500:]


_shared: MeteorProcess | None = None
_shared_lock = threading.Lock()


def shared_process() -> MeteorProcess:
    """The process-wide METEOR JVM (started on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MeteorProcess()
            atexit.register(_shared.close)
        return _shared
