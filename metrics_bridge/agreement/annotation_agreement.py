"""Inter-annotator agreement of AudioCaps-F annotations, per X-ACE factor. Plain Python (no Django).

For each clip with at least two annotations and each pair of annotators, the F-measure between their
two graphs for a factor (event, source, attribute, relation) comes from X-ACE's greedy matching with its
phrase similarity S (metrics_bridge.scoring.xace.matching). It is symmetric: swapping the graphs swaps
precision and recall. A factor absent from both graphs of a pair is not applicable to that pair (left
out, never counted as 1). Per factor the pair values are averaged per clip, then over the clips where
the factor applied to at least one pair; the result is None when it applied nowhere.

Relations: an annotation's stated relations are closed under the chain rule as far as its spans allow
(common.time_relations.relations_derive, the same rule the editor shows), then written as X-ACE relation
nodes (after = before with the events swapped, simultaneous = and), so "A before B, B before C" and
"A before C, A before B" agree on A-C.

Every distinct phrase is embedded once for the whole call (one encoder batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from common.graph_rules import AFTER, BEFORE
from common.time_relations import relations_derive
from metrics_bridge.agreement.event_matching import clip_events, disagreements, events_of, match_clip_events
from metrics_bridge.agreement.event_similarity import event_phrases, label_graph, pair_scores
from metrics_bridge.agreement.matched_agreement import matched_pairs
from metrics_bridge.scoring.xace.graph import AND, AudioGraph
from metrics_bridge.scoring.xace.graph import BEFORE as XACE_BEFORE
from metrics_bridge.scoring.xace.matching import PhraseSimilarity, graph_phrases, match_graphs

FACTORS = ("event", "source", "attribute", "relation")
#: clip key -> annotator -> AudioCaps-F document {event: {"source": [...], "attr": [...], "relations": {...}}}
Submissions = dict[str, dict[str, dict]]
Encoder = Callable[[list[str]], np.ndarray]


def annotation_graph(document: dict) -> AudioGraph:
    """An X-ACE audio graph of one annotation (events with sources and attributes, closed relations)."""
    graph = AudioGraph()
    names = {}
    for label, node in document.items():
        node = node if isinstance(node, dict) else {}
        names[label] = graph.add_event(label, node.get("source") or [], node.get("attr") or [])
    stated = [
        (names[label], names[other], kind)
        for label, node in document.items()
        if isinstance(node, dict)
        for other, kind in (node.get("relations") or {}).items()
        if other in names and names[other] != names[label]
    ]
    spans = {names[label]: node.get("spans") or [] for label, node in document.items() if isinstance(node, dict)}
    relations = []
    for relation in relations_derive(stated, spans).implied:
        if relation.kind == BEFORE:
            triple = (relation.first, relation.second, XACE_BEFORE)
        elif relation.kind == AFTER:
            triple = (relation.second, relation.first, XACE_BEFORE)
        else:
            triple = (relation.first, relation.second, AND)
        if triple not in relations:
            relations.append(triple)
    graph.relations = relations
    graph.has_relation_information = True  # "no relation stated" is information here: F = 0 against one that has some
    return graph


def factor_present(graph: AudioGraph, factor: str) -> bool:
    if factor == "event":
        return bool(graph.events)
    if factor == "source":
        return bool(graph.sources())
    if factor == "attribute":
        return bool(graph.attributes())
    return bool(graph.relations)


class ExactPhraseSimilarity(PhraseSimilarity):
    """X-ACE's S with S(x, x) = 1 exactly for the same text (float32 cosines of a vector with itself can
    fall a hair below 1; identical annotations must agree exactly)."""

    def _apply_rules(self, scores: np.ndarray, xs: list[str], ys: list[str], attributes: bool) -> np.ndarray:
        scores = super()._apply_rules(scores, xs, ys, attributes)
        columns = {y: j for j, y in enumerate(ys)}
        for i, x in enumerate(xs):
            if x in columns:
                scores[i, columns[x]] = 1.0
        return scores


def similarity_for(
    graphs: Iterable[AudioGraph], encoder: Encoder, antonyms=None, extra_phrases: Iterable[str] = ()
) -> ExactPhraseSimilarity:
    phrases: set[str] = set(extra_phrases)
    for graph in graphs:
        phrases |= graph_phrases(graph)
    ordered = sorted(phrases)
    vectors = dict(zip(ordered, encoder(ordered), strict=True)) if ordered else {}
    return ExactPhraseSimilarity(vectors, antonyms=antonyms)


@dataclass
class PairAgreement:
    clip: str
    annotators: tuple[str, str]
    #: factor -> F in [0, 1], or None when the factor is absent from both graphs
    factors: dict[str, float | None]


@dataclass
class AgreementReport:
    clips: int
    annotators: int
    pairs: int
    factors: dict[str, float | None]
    per_annotator: dict[str, dict] = field(default_factory=dict)
    per_clip: dict[str, dict[str, float | None]] = field(default_factory=dict)
    pair_values: list[PairAgreement] = field(default_factory=list)

    def summary(self) -> dict:
        """The `annotation_agreement --format json` object."""
        return {"clips": self.clips, "annotators": self.annotators, "pairs": self.pairs, "factors": dict(self.factors)}


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def pair_agreement(first: AudioGraph, second: AudioGraph, similarity: PhraseSimilarity) -> dict[str, float | None]:
    match = match_graphs(first, second, similarity)
    return {
        factor: float(match.factors[factor].f1)
        if factor_present(first, factor) or factor_present(second, factor)
        else None
        for factor in FACTORS
    }


def _clip_means(pairs: list[PairAgreement]) -> dict[str, float | None]:
    return {factor: _mean([p.factors[factor] for p in pairs if p.factors[factor] is not None]) for factor in FACTORS}


def _over_clips(per_clip: Iterable[dict[str, float | None]]) -> dict[str, float | None]:
    per_clip = list(per_clip)
    return {factor: _mean([clip[factor] for clip in per_clip if clip[factor] is not None]) for factor in FACTORS}


def annotation_agreement(submissions: Submissions, *, encoder: Encoder, antonyms=None) -> AgreementReport:
    """Agreement over every clip with >= 2 annotations (see the module docstring)."""
    graphs = {
        clip: {annotator: annotation_graph(document) for annotator, document in sorted(by_annotator.items())}
        for clip, by_annotator in submissions.items()
        if len(by_annotator) >= 2
    }
    similarity = similarity_for((g for by in graphs.values() for g in by.values()), encoder, antonyms)
    pairs_by_clip: dict[str, list[PairAgreement]] = {}
    for clip, by_annotator in graphs.items():
        pairs_by_clip[clip] = [
            PairAgreement(clip, (a, b), pair_agreement(by_annotator[a], by_annotator[b], similarity))
            for a, b in combinations(by_annotator, 2)
        ]
    per_clip = {clip: _clip_means(pairs) for clip, pairs in pairs_by_clip.items()}
    pair_values = [pair for pairs in pairs_by_clip.values() for pair in pairs]
    annotators = sorted({annotator for by in graphs.values() for annotator in by})
    per_annotator = {}
    for annotator in annotators:
        own_clips = [[pair for pair in pairs if annotator in pair.annotators] for pairs in pairs_by_clip.values()]
        own_clips = [own for own in own_clips if own]
        per_annotator[annotator] = {
            "clips": len(own_clips),
            "pairs": sum(len(own) for own in own_clips),
            "factors": _over_clips(_clip_means(own) for own in own_clips),
        }
    return AgreementReport(
        clips=len(graphs),
        annotators=len(annotators),
        pairs=len(pair_values),
        factors=_over_clips(per_clip.values()),
        per_annotator=per_annotator,
        per_clip=per_clip,
        pair_values=pair_values,
    )


# --- Matched events of one clip (the review page) ---------------------------------------------------------


def matched_events(documents: dict[str, dict], *, encoder: Encoder, antonyms=None) -> dict:
    """Events of one clip's annotations matched across annotators by what the sound is (event_matching.py), the
    clip's per-factor agreement on that matching (matched_agreement.py), and where the annotators disagree,
    lowest agreement first.

    Returns {"annotators": [...], "groups": [{"events": {annotator: [labels]}, "similarity": weakest link,
    "links": [...], "merged": gold proposal}], "relations": [relations between groups], "factors": {factor: F
    or None}, "pairs": [{"annotators": [a, b], "factors": {...}}], "disagreements": [{"factor", "agreement",
    "items"}]}.
    """
    annotators = sorted(documents)
    events = clip_events(documents)
    every_event = [event for own in events.values() for event in own]
    similarity = similarity_for(map(label_graph, events.values()), encoder, antonyms, event_phrases(every_event))
    match = match_clip_events(events, similarity)
    pairs = matched_pairs(events, match.groups, match.links, similarity)
    factors = _clip_means([PairAgreement("clip", tuple(p["annotators"]), p["factors"]) for p in pairs])
    return {
        "annotators": annotators,
        "groups": match.groups_json(),
        "relations": match.relations,
        "factors": factors,
        "pairs": pairs,
        "disagreements": disagreements(match.groups, match.relations, annotators, factors),
    }


def duplicate_events(document: dict, *, encoder: Encoder, antonyms=None) -> list[dict]:
    """Pairs of one annotation's events that name the same sound by the review's matching rule (a gold
    annotation holding one sound twice): [{"first", "second" (labels), "score", "needed", "parts"}]."""
    return duplicate_events_many([document], encoder=encoder, antonyms=antonyms)[0]


def duplicate_events_many(documents: Sequence[dict], *, encoder: Encoder, antonyms=None) -> list[list[dict]]:
    """duplicate_events of each document, their phrases embedded in one encoder call: a gold import of 957 clips
    checked clip by clip took 226 s with no phrase embedded before, most of it in a thousand small encoder calls;
    in one batch the whole import takes 32-49 s."""
    events_per_document = [events_of("gold", document) for document in documents]
    checked = [events for events in events_per_document if len(events) >= 2]
    if not checked:
        return [[] for _ in documents]
    phrases = set().union(*(event_phrases(events) for events in checked))
    similarity = similarity_for(map(label_graph, checked), encoder, antonyms, phrases)
    found = []
    for events in events_per_document:
        scores = pair_scores(events, events, similarity) if len(events) >= 2 else []
        found.append(
            [
                {"first": events[i].label, "second": events[j].label, **scores[i][j].to_json()}
                for i, j in combinations(range(len(events)), 2)
                if scores[i][j].matched
            ]
        )
    return found
