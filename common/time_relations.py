"""Temporal relations checked against the events' time spans: what the spans imply, which stated relations
they contradict, and which relations to propose. Plain Python (no Django import).

The browser editor runs the same rules in static/annotation/js/annotation_graph.js; both are tested against
the cases in tests/annotation/data/time_relation_cases.json (tests/annotation/test_time_relations.py here,
tests/browser/test_annotation_relations.py in the page), so the page and the server never disagree.

An event has a list of spans (several occurrences: a car passing three times). Two events' spans imply:

- simultaneous: the time both sound at once is at least half of the shorter event's total time (a point
  event, of no length, when it lies inside the other);
- before: the first ends before the second starts, with TOLERANCE_SECONDS of slack for boundaries drawn a
  hair apart (A after B: the other way round);
- nothing otherwise (a partial overlap, occurrences of one event on both sides of the other).

A stated relation contradicts the spans when they imply another one; when they imply nothing it still
contradicts them if it cannot hold at all: "simultaneous" for events that never sound together, "A before B"
when A starts and ends no earlier than B does (and "after" the other way round).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from common.graph_rules import AFTER, BEFORE, SIMULTANEOUS, closure_with, relations_analyse

TOLERANCE_SECONDS = 0.1
Span = tuple[float, float]


def merged_spans(spans: Iterable[Sequence[float]]) -> list[Span]:
    """The spans as sorted, non-overlapping intervals (overlapping or touching occurrences joined)."""
    merged: list[list[float]] = []
    for onset, offset in sorted((float(s[0]), float(s[1])) for s in spans):
        if merged and onset <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], offset)
        else:
            merged.append([onset, offset])
    return [(onset, offset) for onset, offset in merged]


def _total(spans: list[Span]) -> float:
    return sum(offset - onset for onset, offset in spans)


def overlap_seconds(first: list[Span], second: list[Span]) -> float:
    """Time during which both (merged) span lists sound."""
    total, i, j = 0.0, 0, 0
    while i < len(first) and j < len(second):
        start, end = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if end > start:
            total += end - start
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return total


def _point_inside(points: list[Span], other: list[Span]) -> bool:
    return any(onset <= point <= offset for point, _ in points for onset, offset in other)


def span_relation(first_spans: Iterable[Sequence[float]], second_spans: Iterable[Sequence[float]]) -> str | None:
    """before / after / simultaneous as the two events' spans imply it, or None (no spans, or undecided)."""
    first, second = merged_spans(first_spans), merged_spans(second_spans)
    if not first or not second:
        return None
    first_total, second_total = _total(first), _total(second)
    shorter = min(first_total, second_total)
    if shorter > 0:
        if overlap_seconds(first, second) >= 0.5 * shorter:
            return SIMULTANEOUS
    elif _point_inside(first, second) if first_total == 0 else _point_inside(second, first):
        return SIMULTANEOUS
    if first[-1][1] <= second[0][0] + TOLERANCE_SECONDS:
        return BEFORE
    if second[-1][1] <= first[0][0] + TOLERANCE_SECONDS:
        return AFTER
    return None


@dataclass(frozen=True)
class TimeConflict:
    #: "implied": the spans imply another relation (`implied`); "never_together": simultaneous events that
    #: never overlap; "order": before / after against the order of the spans
    reason: str
    implied: str | None
    message: str


def _extent(spans: list[Span]) -> str:
    return ", ".join(f"{onset:.2f}–{offset:.2f}" for onset, offset in spans) + " s"


def time_conflict(
    kind: str,
    first_spans: Iterable[Sequence[float]],
    second_spans: Iterable[Sequence[float]],
    names: tuple[str, str] = ("first", "second"),
) -> TimeConflict | None:
    """Why "first `kind` second" contradicts the spans, or None when it agrees with them (or either has none)."""
    first, second = merged_spans(first_spans), merged_spans(second_spans)
    if not first or not second:
        return None
    stated = f"{names[0]} ({_extent(first)}) {kind} {names[1]} ({_extent(second)})"
    implied = span_relation(first, second)
    if implied is not None:
        if implied == kind:
            return None
        return TimeConflict("implied", implied, f"{stated}: the spans say {implied}")
    if kind == SIMULTANEOUS and overlap_seconds(first, second) == 0:
        return TimeConflict("never_together", None, f"{stated}: they never sound at the same time")
    starts_later = first[0][0] >= second[0][0] and first[-1][1] >= second[-1][1]
    starts_earlier = first[0][0] <= second[0][0] and first[-1][1] <= second[-1][1]
    if (kind == BEFORE and starts_later) or (kind == AFTER and starts_earlier):
        return TimeConflict("order", None, f"{stated}: the spans are in the other order")
    return None


def time_proposals(
    events: Sequence[tuple[Hashable, Sequence[Sequence[float]]]],
    relations: Iterable[tuple[Hashable, Hashable, str]] = (),
) -> list[tuple[Hashable, Hashable, str]]:
    """Relations the spans imply between events not related yet, as (first, second, kind) in event order.

    `events`: (key, spans) in the editor's order; `relations`: the stated ones. Nearest pairs are tried first
    (simultaneous ones, then by the gap between them); a pair already related by the chain rule through the
    relations and the proposals taken so far is skipped, and so is a proposal that would contradict them or
    imply, through the chain rule, a relation the spans of some other pair contradict. For barking, then a door
    slam, then talking, it proposes the two neighbours, not also barking before talking (that one is implied).
    """
    closure = relations_analyse(list(relations)).closure
    order = {key: index for index, (key, _spans) in enumerate(events)}
    spans = {key: merged_spans(event_spans) for key, event_spans in events}
    candidates = []
    for i, (first, _first_spans) in enumerate(events):
        for second, _second_spans in events[i + 1 :]:
            kind = span_relation(spans[first], spans[second])
            if kind is None or (first, second) in closure:
                continue
            a, b = spans[first], spans[second]
            gap = 0.0 if kind == SIMULTANEOUS else max(0.0, b[0][0] - a[-1][1], a[0][0] - b[-1][1])
            candidates.append((gap, order[first], order[second], first, second, kind))
    proposals: list[tuple[Hashable, Hashable, str]] = []
    for _gap, _i, _j, first, second, kind in sorted(candidates, key=lambda candidate: candidate[:3]):
        if (first, second) in closure:
            continue  # implied by the proposals taken so far
        trial = closure_with(closure, first, second, kind)
        if trial is None or any(
            time_conflict(trial[pair].kind, spans.get(pair[0], []), spans.get(pair[1], []))
            for pair in trial.keys() - closure.keys()
        ):
            continue
        closure = trial
        proposals.append((first, second, kind))
    return sorted(proposals, key=lambda proposal: (order[proposal[0]], order[proposal[1]]))
