"""Temporal relations checked against the events' time spans: what the spans imply, which stated relations
they contradict, and which relations to propose. Plain Python (no Django import).

The browser editor runs the same rules in static/annotation/js/annotation_graph.js; both are tested against
the cases in tests/annotation/data/time_relation_cases.json (tests/annotation/test_time_relations.py here,
tests/browser/test_annotation_expert_editor.py in the page), so the page and the server never disagree.

An event has a list of spans (several occurrences: a car passing three times). Two events' spans imply:

- simultaneous: the time both sound at once is at least half of the shorter event's total time (a point
  event, of no length, when it lies inside the other);
- before: the first ends before the second starts, with TOLERANCE_SECONDS of slack for boundaries drawn a
  hair apart (A after B: the other way round);
- nothing otherwise (a partial overlap, occurrences of one event on both sides of the other).

A stated relation contradicts the spans when they imply another one; when they imply nothing it still
contradicts them if it cannot hold at all: "simultaneous" for events that never sound together, "A before B"
when A starts and ends no earlier than B does (and "after" the other way round).

Derived relations (relations_derive): the stated relations closed under the chain rule, keeping only what
the spans allow as well. The chain rule treats "simultaneous" as transitive and lets it carry order, which
is wrong for a long background sound (simultaneous with a tap and with a later rustle, which are not
simultaneous with each other); so between two events that both have spans, an implied relation is kept
only when it is what their spans imply (span_relation): one the spans contradict, or do not decide (a
partial overlap), is dropped, composed no further, and reported with the reason. Stated relations that
each agree with the spans therefore never contradict each other through implied ones. Where an event has
no spans the chain rule alone decides. The editor's checks, gold publishing, the AudioCaps-F importer,
agreement and X-ACE's reading of a gold annotation all derive relations with this one function.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.graph_rules import AFTER, BEFORE, SIMULTANEOUS, Relation, RelationReport, closure_with, relations_analyse

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


def relations_derive(
    relations: Iterable[tuple[Hashable, Hashable, str]],
    spans: Mapping[Hashable, Iterable[Sequence[float]]] | None = None,
    names: Mapping | None = None,
) -> RelationReport:
    """The stated relations (first, second, kind), every relation they imply that the spans allow, and the
    contradictions among the stated ones (see common.graph_rules.relations_analyse).

    `spans`: event key -> its spans (an event missing or without spans constrains nothing); `names`: event
    key -> name for messages. report.dropped lists the implied relations the spans refused, each with why.
    """
    merged = {key: merged_spans(event_spans) for key, event_spans in (spans or {}).items()}
    names = dict(names or {})

    def veto(relation: Relation) -> str | None:
        first, second = merged.get(relation.first, []), merged.get(relation.second, [])
        if not first or not second or span_relation(first, second) == relation.kind:
            return None
        pair = (str(names.get(relation.first, relation.first)), str(names.get(relation.second, relation.second)))
        conflict = time_conflict(relation.kind, first, second, pair)
        if conflict is not None:
            return conflict.message
        return f"{pair[0]} ({_extent(first)}) {relation.kind} {pair[1]} ({_extent(second)}): the spans do not say so"

    return relations_analyse(list(relations), names=names, veto=veto)


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
    spans = {key: merged_spans(event_spans) for key, event_spans in events}
    closure = relations_derive(relations, spans).closure
    order = {key: index for index, (key, _spans) in enumerate(events)}
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
