"""Temporal relations of an annotation graph: the relations they imply and the contradictions they contain.

Plain Python (no Django import): the annotation services validate drafts with it and
metrics_bridge's agreement code builds the relation nodes it compares from it. The browser
editor mirrors it in static/annotation/js/annotation_graph.js (kept in step by a test that runs both).

Implied relations follow the chain rule of X-ACE (paper Eq. 1-2), applied to any two relations
that share an event rather than only along a caption's chain: composing A r1 B with B r2 C gives
A r C where equal relations propagate (before . before = before), "simultaneous" yields the other
relation (simultaneous . before = before), and before . after tells nothing. A pair of events that
ends up with two different relations (A before B and B before A, A before B and A simultaneous B),
directly or through implied relations, is a contradiction.

The chain rule alone treats "simultaneous" as transitive, which sounds do not obey: a long background
sound is simultaneous with a tap early on and with a rustle late on without those two being simultaneous.
So a caller that knows more (the events' time spans, see common.time_relations.relations_derive) passes a
`veto`: an implied relation it vetoes is left out, not composed any further, and listed in `dropped`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

BEFORE, AFTER, SIMULTANEOUS = "before", "after", "simultaneous"
KINDS = (BEFORE, AFTER, SIMULTANEOUS)
INVERSE = {BEFORE: AFTER, AFTER: BEFORE, SIMULTANEOUS: SIMULTANEOUS}


def compose(first: str, second: str) -> str | None:
    """The relation of A to C from A `first` B and B `second` C; None when the chain rule says unknown."""
    if first == second:
        return first
    if first == SIMULTANEOUS:
        return second
    if second == SIMULTANEOUS:
        return first
    return None


@dataclass(frozen=True)
class Relation:
    first: Hashable
    second: Hashable
    kind: str
    #: for an implied relation: the two relations it was composed from (None when stated)
    via: tuple[Relation, Relation] | None = field(default=None, compare=False)
    #: True for the reverse reading of a relation (B after A for A before B); messages use the original
    reversed_reading: bool = field(default=False, compare=False)

    def inverse(self) -> Relation:
        return Relation(self.second, self.first, INVERSE[self.kind], self.via, not self.reversed_reading)


@dataclass
class RelationReport:
    #: stated relations, then every implied one, each pair of events once (in the direction first seen)
    implied: list[Relation]
    #: (index of the stated relation that brought the conflict in, message); empty when consistent
    contradictions: list[tuple[int, str]]
    #: (first, second) -> Relation for both directions of every related pair (see closure_with)
    closure: dict[tuple, Relation] = field(default_factory=dict, repr=False)
    #: implied relations a veto left out, with the veto's reason, in the order met (each pair once)
    dropped: list[tuple[Relation, str]] = field(default_factory=list)


#: why an implied relation must be left out, or None to keep it
Veto = Callable[[Relation], "str | None"]


def _describe(relation: Relation, names: dict) -> str:
    return f"{names.get(relation.first, relation.first)} {relation.kind} {names.get(relation.second, relation.second)}"


def _explain(relation: Relation, names: dict) -> str:
    if relation.reversed_reading:
        relation = relation.inverse()
    if relation.via is None:
        return _describe(relation, names)
    left, right = relation.via
    return f"{_describe(relation, names)} (implied by {_explain(left, names)} and {_explain(right, names)})"


def relations_analyse(
    relations: Iterable[tuple[Hashable, Hashable, str]], names: dict | None = None, veto: Veto | None = None
) -> RelationReport:
    """Close the stated relations (first, second, kind) under the chain rule and report contradictions.

    Relations are added in order; a stated relation that conflicts with what the earlier ones state or
    imply is reported (with the chain that explains it) and left out, so the report names exactly the
    relation an editor must refuse. `names` maps event keys to the names used in messages; `veto` (see the
    module docstring) is asked about every implied relation.
    """
    names = names or {}
    known: dict[tuple, Relation] = {}  # directed pair -> relation; both directions are stored
    order: list[tuple] = []
    contradictions: list[tuple[int, str]] = []
    dropped: dict[tuple, tuple[Relation, str]] = {}
    for index, (first, second, kind) in enumerate(relations):
        if kind not in KINDS:
            raise ValueError(f"relation kind {kind!r} is not one of {', '.join(KINDS)}")
        if first == second:
            contradictions.append((index, f"{names.get(first, first)}: an event cannot be related to itself"))
            continue
        trial_dropped = dict(dropped)
        trial, added, problem = _close(dict(known), Relation(first, second, kind), names, veto, trial_dropped)
        if problem is not None:
            contradictions.append((index, problem))
            continue
        known, dropped = trial, trial_dropped
        order.extend(added)
    kept_dropped = [item for pair, item in dropped.items() if pair not in known]
    return RelationReport(
        implied=[known[pair] for pair in order], contradictions=contradictions, closure=known, dropped=kept_dropped
    )


def closure_with(closure: dict[tuple, Relation], first: Hashable, second: Hashable, kind: str) -> dict | None:
    """A copy of `closure` (RelationReport.closure) with "first kind second" and all it implies added;
    None when that contradicts it. Lets a caller try relations one by one without closing everything again."""
    trial, _added, problem = _close(dict(closure), Relation(first, second, kind), {}, None, {})
    return None if problem is not None else trial


def _close(
    known: dict[tuple, Relation], stated: Relation, names: dict, veto: Veto | None, dropped: dict
) -> tuple[dict, list[tuple], str | None]:
    """Add `stated` and everything it implies to `known`; (known, pairs added in order, contradiction or None).
    Implied relations `veto` refuses go to `dropped` ((first, second) -> (relation, reason)) instead."""
    added: list[tuple] = []
    pending = [stated]
    while pending:
        relation = pending.pop(0)
        if relation.first == relation.second:
            continue  # X r Y with Y r' X only composes to "X simultaneous X" or to nothing
        existing = known.get((relation.first, relation.second))
        if existing is not None and existing.kind == relation.kind:
            continue
        if relation.via is not None and veto is not None:
            reason = veto(relation)  # asked first: what the spans refuse contradicts nothing
            if reason is not None:
                pair = (relation.first, relation.second)
                if pair not in dropped and (relation.second, relation.first) not in dropped:
                    dropped[pair] = (relation, reason)
                continue
        if existing is not None:
            return known, added, f"{_explain(relation, names)} contradicts {_explain(existing, names)}"
        known[(relation.first, relation.second)] = relation
        known[(relation.second, relation.first)] = relation.inverse()
        added.append((relation.first, relation.second))
        for other in list(known.values()):
            if other.first == relation.second:  # X r Y, Y s Z -> X (r.s) Z
                kind = compose(relation.kind, other.kind)
                if kind is not None:
                    pending.append(Relation(relation.first, other.second, kind, (relation, other)))
            if other.second == relation.first:  # W s X, X r Y -> W (s.r) Y
                kind = compose(other.kind, relation.kind)
                if kind is not None:
                    pending.append(Relation(other.first, relation.second, kind, (other, relation)))
    return known, added, None
