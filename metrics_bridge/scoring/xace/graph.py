"""The audio graph of X-ACE: events (parent nodes) with sources and attributes (child nodes),
and temporal relations between events.

JSON form (the LLM-extracted graphs use the same): {"node": {event: {"source": [...], "attr": [...]}},
"relationship": {"a|&|b": "and" | "before" | "after"}}; relationships are between adjacent events in
caption order and the other pairs are inferred with the chain rule (paper Eq. 1-2).
A gold annotation from this product may instead carry "relations": [[event, event, relation], ...]
between any two of its events (an annotator's statements, not a caption's order), and "spans":
{event: [[onset, offset], ...]}: the relations are taken as given and closed under the same chain rule,
keeping only implied relations the spans allow (`AudioGraph.set_relations`, through
common.time_relations.relations_derive, the rule the editor, publishing and the importer use).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from common.time_relations import relations_derive

from .text import normalize_phrase

AND, BEFORE, AFTER, UNKNOWN = "and", "before", "after", "unknown"
RELATIONS = (AND, BEFORE, AFTER)
KEY_SEPARATOR = "|&|"


def chain_relation(current: str, previous: str) -> str:
    """G(x, x^) of Eq. 2: equal relations propagate, `and` yields the other one, anything else is unknown.

    `previous` is the inferred R(i, k-1), `current` the adjacent R(k-1, k); the result is R(i, k).
    """
    if current == previous:
        return current
    if AND in (current, previous):
        other = previous if current == AND else current
        return other if other in RELATIONS else UNKNOWN
    return UNKNOWN


def infer_chain(events: list[str], adjacent: list[str]) -> list[tuple[str, str, str]]:
    """All pairwise relations of a chain of events, R(i,k) = G(R(k-1,k), R(i,k-1)) (Eq. 1).

    `adjacent[i]` is the relation between events[i] and events[i+1]. Unknown pairs are left out.
    """
    if len(adjacent) != len(events) - 1:
        raise ValueError(
            f"a chain of {len(events)} events needs {len(events) - 1} adjacent relations, got {len(adjacent)}"
        )
    inferred: list[tuple[str, str, str]] = []
    for i in range(len(events) - 1):
        relation = adjacent[i]
        if relation in RELATIONS:
            inferred.append((events[i], events[i + 1], relation))
        for k in range(i + 2, len(events)):
            relation = chain_relation(adjacent[k - 1], relation)
            if relation in RELATIONS:
                inferred.append((events[i], events[k], relation))
    return inferred


def canonical_relation(first: str, second: str, relation: str) -> tuple[str, str, str]:
    """`after` written as `before` with the events swapped, so equivalent relations compare equal."""
    if relation == AFTER:
        return (second, first, BEFORE)
    return (first, second, relation)


def _unique(items: Iterable[str]) -> list[str]:
    seen, kept = set(), []
    for item in items:
        text = " ".join(str(item).split())
        key = normalize_phrase(text)
        if text and key and key not in seen:
            seen.add(key)
            kept.append(text)
    return kept


@dataclass
class AudioGraph:
    #: event name -> {"source": [...], "attr": [...]}, in caption order
    events: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: ((event_a, event_b), relation) between adjacent events, as extracted
    adjacent: list[tuple[str, str, str]] = field(default_factory=list)
    #: all known pairwise relations (adjacent + chain-inferred), canonical (no `after`)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    #: False when the graph's source carries no temporal information at all (AudioCaps-F annotations)
    has_relation_information: bool = True

    def add_event(self, name: str, sources: Iterable[str] = (), attributes: Iterable[str] = ()) -> str:
        """Add or merge an event (events with the same lemma key are one node); returns the node's name."""
        name = " ".join(name.split())
        key = normalize_phrase(name)
        for existing in self.events:
            if normalize_phrase(existing) == key:
                name = existing
                break
        node = self.events.setdefault(name, {"source": [], "attr": []})
        node["source"] = _unique([*node["source"], *sources])
        node["attr"] = _unique([*node["attr"], *attributes])
        return name

    def set_adjacent_relations(self, adjacent: list[tuple[str, str, str]]) -> None:
        """Store adjacent relations and infer every other pair along each chain (a new chain starts at a break)."""
        self.adjacent = [(a, b, r) for a, b, r in adjacent if a != b]
        inferred: list[tuple[str, str, str]] = []
        chain_events: list[str] = []
        chain_relations: list[str] = []

        def flush() -> None:
            if len(chain_events) > 1:
                inferred.extend(infer_chain(chain_events, chain_relations))

        for first, second, relation in self.adjacent:
            if chain_events and chain_events[-1] == first:
                chain_events.append(second)
                chain_relations.append(relation)
            else:
                flush()
                chain_events, chain_relations = [first, second], [relation]
        flush()
        seen, relations = set(), []
        for first, second, relation in inferred:
            triple = canonical_relation(first, second, relation)
            if triple[0] != triple[1] and triple not in seen:
                seen.add(triple)
                relations.append(triple)
        self.relations = relations

    def set_relations(
        self,
        relations: Iterable[tuple[str, str, str]],
        spans: Mapping[str, Sequence[Sequence[float]]] | None = None,
    ) -> None:
        """Take stated pairwise relations (any two events) and add what the chain rule of Eq. 1-2 infers
        from them (A before B, B and C -> A before C) unless the events' `spans` contradict it; stored
        canonical, like the caption relations. A stated relation contradicting earlier ones is left out."""
        stated = []
        for first, second, relation in relations:
            kind = "simultaneous" if relation == AND else relation  # the annotation schema's name for "and"
            if first != second and kind in ("simultaneous", BEFORE, AFTER):
                stated.append((first, second, kind))
        report = relations_derive(stated, spans)
        seen, canonical = set(), []
        for derived in sorted(report.closure.values(), key=lambda item: (item.first, item.second, item.kind)):
            triple = canonical_relation(
                derived.first, derived.second, AND if derived.kind == "simultaneous" else derived.kind
            )
            if triple[2] == AND:
                triple = (min(triple[0], triple[1]), max(triple[0], triple[1]), AND)
            if triple not in seen:
                seen.add(triple)
                canonical.append(triple)
        self.adjacent = []
        self.relations = canonical
        self.has_relation_information = True

    def sources(self) -> list[tuple[str, str]]:
        return [(event, source) for event, node in self.events.items() for source in node["source"]]

    def attributes(self) -> list[tuple[str, str]]:
        return [(event, attribute) for event, node in self.events.items() for attribute in node["attr"]]

    def to_json(self) -> dict:
        return {
            "node": {
                event: {"source": list(node["source"]), "attr": list(node["attr"])}
                for event, node in self.events.items()
            },
            "relationship": {f"{a}{KEY_SEPARATOR}{b}": r for a, b, r in self.adjacent},
        }

    @classmethod
    def from_json(cls, data: dict) -> AudioGraph:
        """Read the {"node", "relationship"} form or a bare AudioCaps-F annotation {event: {...}}.

        Relationship keys may name events by their last word (as the LLM-extracted graphs do); such
        keys are resolved to the event whose name ends with (or starts) that word.
        """
        if not isinstance(data, dict):
            raise ValueError(f"an audio graph must be a JSON object, got {type(data).__name__}")
        is_annotation = "node" not in data
        nodes = data if is_annotation else (data.get("node") or {})
        graph = cls(has_relation_information=not is_annotation)
        for event, node in nodes.items():
            node = node if isinstance(node, dict) else {}
            graph.add_event(str(event), node.get("source") or [], node.get("attr") or [])
        if not is_annotation and "relations" in data:
            stated = []
            for first, second, relation in data.get("relations") or []:
                first_event, second_event = graph.resolve_event(str(first)), graph.resolve_event(str(second))
                if first_event and second_event:
                    stated.append((first_event, second_event, relation))
            spans = {}
            for event, event_spans in (data.get("spans") or {}).items():
                resolved = graph.resolve_event(str(event))
                if resolved and isinstance(event_spans, list):
                    spans[resolved] = event_spans
            graph.set_relations(stated, spans)
            return graph
        adjacent = []
        for key, relation in (data.get("relationship") or {}).items() if not is_annotation else []:
            if KEY_SEPARATOR not in key or relation not in RELATIONS:
                continue
            first, second = key.split(KEY_SEPARATOR, 1)
            first_event, second_event = graph.resolve_event(first), graph.resolve_event(second)
            if first_event and second_event:
                adjacent.append((first_event, second_event, relation))
        graph.set_adjacent_relations(adjacent)
        return graph

    def resolve_event(self, mention: str) -> str | None:
        """The event a relationship key refers to: exact name, same lemma, or name ending with the word."""
        mention = mention.strip().lower()
        if mention in self.events:
            return mention
        key = normalize_phrase(mention)
        for event in self.events:
            if normalize_phrase(event) == key:
                return event
        for event in self.events:
            last = event.lower().split()[-1] if event.split() else ""
            if last and (last == mention or mention.startswith(last) or last.startswith(mention)):
                return event
        return None


def merge_graphs(graphs: Iterable[AudioGraph]) -> AudioGraph:
    """Union of several reference graphs (X-ACE "w/o anno": one graph per clip from all its references).

    Events with the same lemma key become one node whose sources and attributes are the union;
    relation nodes are the union of each graph's (inferred) relations.
    """
    merged = AudioGraph()
    relations: list[tuple[str, str, str]] = []
    has_information = False
    for graph in graphs:
        has_information = has_information or graph.has_relation_information
        renamed = {}
        for event, node in graph.events.items():
            renamed[event] = merged.add_event(event, node["source"], node["attr"])
        merged.adjacent.extend(
            (renamed[a], renamed[b], r) for a, b, r in graph.adjacent if a in renamed and b in renamed
        )
        for first, second, relation in graph.relations:
            if first in renamed and second in renamed:
                triple = (renamed[first], renamed[second], relation)
                if triple[0] != triple[1] and triple not in relations:
                    relations.append(triple)
    merged.relations = relations
    merged.has_relation_information = has_information
    return merged
