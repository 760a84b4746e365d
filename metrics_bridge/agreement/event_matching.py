"""Events of one clip's annotations matched across annotators by what the sound is, merged into gold proposals,
and where the annotators disagree most. Plain Python (no Django): the review page shows what this returns.

Whether two events of different annotators name the same sound is event_similarity's rule (meaning weighed with
time overlap). For each pair of annotators the events that match are paired one to one, the best meaning first
(Hungarian assignment); linked events form a group.

Each group gets a merged proposal for the gold annotation: the name most annotators used, the union of
sources and of attributes with how many annotators gave each, the seconds most of its annotators marked, and
its relations to other groups as the annotators stated them (the kind most of them gave).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from common.time_relations import merged_spans
from metrics_bridge.agreement.event_similarity import Event, assignment_weights, pair_scores
from metrics_bridge.scoring.xace.matching import PhraseSimilarity

INVERSE = {"before": "after", "after": "before", "simultaneous": "simultaneous"}
Spans = list[tuple[float, float]]


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def events_of(annotator: str, document: dict) -> list[Event]:
    """The events of an AudioCaps-F document (annotation_as_audiocaps_f) in order."""
    return [
        Event(
            annotator=annotator,
            label=label,
            sources=list(node.get("source") or []),
            attributes=list(node.get("attr") or []),
            spans=[tuple(span) for span in node.get("spans") or []],
            relations=dict(node.get("relations") or {}),
        )
        for label, node in document.items()
        if isinstance(node, dict)
    ]


def _majority_spans(events: Sequence[Event]) -> Spans:
    """The seconds marked by at least half of the events that have spans (their union when none are)."""
    timed = [merged_spans(event.spans) for event in events if event.spans]
    if not timed:
        return []
    needed = (len(timed) + 1) // 2
    edges = sorted({t for spans in timed for span in spans for t in span})
    kept: Spans = []
    for start, end in zip(edges, edges[1:], strict=False):
        middle = (start + end) / 2
        if sum(any(a <= middle <= b for a, b in spans) for spans in timed) >= needed:
            if kept and kept[-1][1] == start:
                kept[-1] = (kept[-1][0], end)
            else:
                kept.append((start, end))
    return kept or merged_spans([span for spans in timed for span in spans])


def _counted(lists: Sequence[list[str]]) -> list[dict]:
    """Union of texts (compared case- and space-insensitively) with how many lists hold each, most held first."""
    counts: Counter = Counter()
    first_text: dict[str, str] = {}
    order: dict[str, int] = {}
    for texts in lists:
        for text in {_key(t): t.strip() for t in texts if t.strip()}.items():
            key, shown = text
            counts[key] += 1
            first_text.setdefault(key, shown)
            order.setdefault(key, len(order))
    return [
        {"text": first_text[key], "count": counts[key]} for key in sorted(counts, key=lambda k: (-counts[k], order[k]))
    ]


def merged_event(events: Sequence[Event]) -> dict:
    """The gold proposal of a group: its most used name, the counted union of sources and attributes, its spans."""
    by_annotator: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_annotator[event.annotator].append(event)
    names = Counter(_key(event.label) for event in events)
    label = next(e.label.strip() for e in sorted(events, key=lambda e: -names[_key(e.label)]))
    return {
        "label": label,
        "sources": _counted([[s for e in evs for s in e.sources] for evs in by_annotator.values()]),
        "attributes": _counted([[a for e in evs for a in e.attributes] for evs in by_annotator.values()]),
        "spans": [[round(a, 3), round(b, 3)] for a, b in _majority_spans(events)],
        "annotators": len(by_annotator),
    }


def group_events(
    events_by_annotator: dict[str, list[Event]], similarity: PhraseSimilarity
) -> tuple[list[list[Event]], list[dict]]:
    """(groups of matched events, the links: {"first", "second" (annotator, label), "score" (meaning), "needed"
    (what their time overlap needs), "parts"})."""
    nodes = [(annotator, index) for annotator, events in events_by_annotator.items() for index in range(len(events))]
    parent = {node: node for node in nodes}

    def root(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    links = []
    from scipy.optimize import linear_sum_assignment

    for a, b in combinations(events_by_annotator, 2):
        first, second = events_by_annotator[a], events_by_annotator[b]
        if not first or not second:
            continue
        scores = pair_scores(first, second, similarity)
        for i, j in zip(*linear_sum_assignment(-assignment_weights(scores)), strict=True):
            if scores[i][j].matched:
                parent[root((b, j))] = root((a, i))
                links.append({"first": [a, first[i].label], "second": [b, second[j].label], **scores[i][j].to_json()})
    grouped: dict[tuple, list[Event]] = {}
    for annotator, index in nodes:
        grouped.setdefault(root((annotator, index)), []).append(events_by_annotator[annotator][index])
    return list(grouped.values()), links


def group_relations(groups: Sequence[Sequence[Event]]) -> list[dict]:
    """Relations between groups as the annotators stated them: {"first", "second" (group indexes, first <
    second), "kind" (the one most gave), "count" (how many gave it), "annotators" (how many related the pair)}."""
    group_of = {(event.annotator, event.label): index for index, group in enumerate(groups) for event in group}
    votes: dict[tuple[int, int], dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for group in groups:
        for event in group:
            for other, kind in event.relations.items():
                i, j = group_of[(event.annotator, event.label)], group_of.get((event.annotator, other))
                if j is None or i == j:
                    continue
                pair, kind = ((i, j), kind) if i < j else ((j, i), INVERSE[kind])
                votes[pair][event.annotator][kind] += 1
    relations = []
    for (i, j), by_annotator in sorted(votes.items()):
        kinds = Counter(kinds.most_common(1)[0][0] for kinds in by_annotator.values())
        (kind, count), *rest = kinds.most_common()
        if rest and rest[0][1] == count:
            continue  # as many annotators one way as the other: the reviewer decides
        relations.append({"first": i, "second": j, "kind": kind, "count": count, "annotators": len(by_annotator)})
    return relations


def disagreements(
    groups: Sequence[Sequence[Event]], relations: list[dict], annotators: list[str], factors: dict
) -> list[dict]:
    """Per factor, lowest agreement first: {"factor", "agreement", "items": [what the annotators differ on]}."""
    total = len(annotators)
    names = [merged_event(group)["label"] for group in groups]
    items: dict[str, list[str]] = {"event": [], "source": [], "attribute": [], "relation": []}
    for name, group in zip(names, groups, strict=True):
        given = sorted({event.annotator for event in group})
        if len(given) < total:
            items["event"].append(f"'{name}': only {', '.join(given)} ({len(given)} of {total})")
        merged = merged_event(group)
        for factor, key in (("source", "sources"), ("attribute", "attributes")):
            partial = [
                f"{entry['text']} ({entry['count']}/{len(given)})"
                for entry in merged[key]
                if entry["count"] < len(given)
            ]
            if partial:
                items[factor].append(f"'{name}': " + ", ".join(partial))
    for relation in relations:
        if relation["count"] < relation["annotators"] or relation["annotators"] < total:
            first, second = names[relation["first"]], names[relation["second"]]
            items["relation"].append(
                f"'{first}' {relation['kind']} '{second}': {relation['count']} of {total} annotators"
            )
    ordered = sorted(items, key=lambda f: (factors.get(f) is None, factors.get(f) if factors.get(f) is not None else 0))
    return [{"factor": f, "agreement": factors.get(f), "items": items[f]} for f in ordered]


@dataclass
class ClipMatch:
    annotators: list[str]
    #: matched events, groups given by most annotators first
    groups: list[list[Event]]
    links: list[dict]
    relations: list[dict]

    def groups_json(self) -> list[dict]:
        """[{"events": {annotator: [labels]}, "similarity": weakest link, "links", "merged"}] for the page."""
        group_of = {(e.annotator, e.label): index for index, group in enumerate(self.groups) for e in group}
        result = []
        for index, group in enumerate(self.groups):
            own = [link for link in self.links if group_of[tuple(link["first"])] == index]
            members: dict[str, list[str]] = {}
            for event in group:
                members.setdefault(event.annotator, []).append(event.label)
            result.append(
                {
                    "events": members,
                    "similarity": min((link["score"] for link in own), default=None),
                    "links": own,
                    "merged": merged_event(group),
                }
            )
        return result


def clip_events(documents: dict[str, dict]) -> dict[str, list[Event]]:
    """annotator -> their events, from one clip's {annotator: AudioCaps-F document}, annotators sorted."""
    return {annotator: events_of(annotator, documents[annotator]) for annotator in sorted(documents)}


def match_clip_events(events: dict[str, list[Event]], similarity: PhraseSimilarity) -> ClipMatch:
    """Match one clip's events across annotators (clip_events); `similarity` must have every phrase of their
    label_graph()s embedded."""
    annotators = list(events)
    groups, links = group_events(events, similarity)
    order = {(e.annotator, e.label): index for index, e in enumerate(e for a in annotators for e in events[a])}
    groups.sort(key=lambda g: (-len({e.annotator for e in g}), min(order[(e.annotator, e.label)] for e in g)))
    return ClipMatch(annotators=annotators, groups=groups, links=links, relations=group_relations(groups))
