"""A clip's agreement on the matching the review page shows. Plain Python (no Django).

The dataset's agreement (annotation_agreement.annotation_agreement) is X-ACE's soft F-measure: every event
counts by its similarity to the nearest one, so three events matched one to one with names such as "passing" /
"driving by" gave the event factor 0.55. The review page shows matched rows, so its agreement counts them:

- event: 2 x linked events / (events of one + events of the other), linked as the page's rows link them;
- source / attribute: over linked events, the items of each that the other's event also gives (the same text,
  or X-ACE's S at least MATCH_THRESHOLD; antonym tags never agree), F of both directions; the items of events
  the other annotator did not give are already counted by the event factor;
- relation: each annotator's relations (stated and derived within their spans, as the editor shows them)
  between matched rows, 2 x shared / (one's + the other's).

A factor neither annotator of a pair gave is None, and per clip the pairs' values are averaged.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from common.graph_rules import INVERSE
from common.time_relations import relations_derive
from metrics_bridge.agreement.event_similarity import Event
from metrics_bridge.scoring.xace.matching import MATCH_THRESHOLD, PhraseSimilarity, attribute_text, event_text

FACTORS = ("event", "source", "attribute", "relation")


def _dice(shared: float, first: int, second: int) -> float | None:
    return None if first + second == 0 else 2 * shared / (first + second)


def _items_agreed(xs: list[str], ys: list[str], similarity: PhraseSimilarity, attributes: bool) -> tuple[int, int]:
    """(items of xs the other list also gives, items of ys the first list also gives)."""
    if not xs or not ys:
        return 0, 0
    text = attribute_text if attributes else event_text
    scores = similarity.matrix([text(x) for x in xs], [text(y) for y in ys], attributes=attributes)
    return int((scores.max(axis=1) >= MATCH_THRESHOLD).sum()), int((scores.max(axis=0) >= MATCH_THRESHOLD).sum())


def _items_factor(
    linked: Sequence[tuple[Event, Event]], similarity: PhraseSimilarity, attributes: bool
) -> float | None:
    agreed_first = agreed_second = total_first = total_second = 0
    for first, second in linked:
        xs, ys = (first.attributes, second.attributes) if attributes else (first.sources, second.sources)
        a, b = _items_agreed(xs, ys, similarity, attributes)
        agreed_first, agreed_second = agreed_first + a, agreed_second + b
        total_first, total_second = total_first + len(xs), total_second + len(ys)
    if total_first + total_second == 0:
        return None
    precision = agreed_first / total_first if total_first else 0.0
    recall = agreed_second / total_second if total_second else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _row_relations(events: Sequence[Event], row_of: dict[tuple[str, str], int]) -> set[tuple[int, int, str]]:
    """An annotator's relations (closed within their spans) as (row, row, kind) with the lower row first."""
    labels = {event.label for event in events}
    stated = [
        (event.label, other, kind)
        for event in events
        for other, kind in event.relations.items()
        if other in labels and other != event.label
    ]
    spans = {event.label: event.spans for event in events}
    relations = set()
    for relation in relations_derive(stated, spans).implied:
        first = row_of.get((events[0].annotator, relation.first))
        second = row_of.get((events[0].annotator, relation.second))
        if first is None or second is None or first == second:
            continue
        if first > second:
            relations.add((second, first, INVERSE[relation.kind]))
        else:
            relations.add((first, second, relation.kind))
    return relations


def pair_factors(
    first: Sequence[Event],
    second: Sequence[Event],
    links: Sequence[dict],
    row_of: dict[tuple[str, str], int],
    similarity: PhraseSimilarity,
) -> dict[str, float | None]:
    """The four factors between two annotators' events, `links` being the page's links between them."""
    by_label = {(event.annotator, event.label): event for event in [*first, *second]}
    linked = [(by_label[tuple(link["first"])], by_label[tuple(link["second"])]) for link in links]
    first_relations = _row_relations(first, row_of) if first else set()
    second_relations = _row_relations(second, row_of) if second else set()
    return {
        "event": _dice(len(linked), len(first), len(second)),
        "source": _items_factor(linked, similarity, attributes=False),
        "attribute": _items_factor(linked, similarity, attributes=True),
        "relation": _dice(len(first_relations & second_relations), len(first_relations), len(second_relations)),
    }


def matched_pairs(
    events: dict[str, list[Event]],
    groups: Sequence[Sequence[Event]],
    links: Sequence[dict],
    similarity: PhraseSimilarity,
) -> list[dict]:
    """[{"annotators": [a, b], "factors": {...}}] for every pair of annotators (events: annotator -> events)."""
    row_of = {(event.annotator, event.label): index for index, group in enumerate(groups) for event in group}
    pairs = []
    for a, b in combinations(events, 2):
        between = [link for link in links if {link["first"][0], link["second"][0]} == {a, b}]
        oriented = [
            link if link["first"][0] == a else {**link, "first": link["second"], "second": link["first"]}
            for link in between
        ]
        pairs.append(
            {"annotators": [a, b], "factors": pair_factors(events[a], events[b], oriented, row_of, similarity)}
        )
    return pairs
