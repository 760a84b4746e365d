"""Greedy graph matching of X-ACE (paper section 3.2, Eq. 3-9).

P(x) = max_y S(x, y) for each node x (Eq. 3). Precision takes the candidate's nodes as x and the
reference's as y; recall the other way round. A child node (source, attribute) is scored under its
parent's best match (Eq. 4): P(C_ij) = P(C_ij | E_i) P(E_i) with P(E_i) = max_y S(E_i, y) at the best
matching event y*, and P(C_ij | E_i) = max over the children of y* of S(C_ij, c) (0 when y* has none).
Relations (Eq. 5): P(R_ik) = P(R | E_i, E_k) P(E_i) P(E_k), where P(R | E_i, E_k) is 1 when the other
graph holds the same relation between the best matches of E_i and E_k.

A factor with no node in either graph is not applicable: its precision, recall and F are None
(never 1.0), and it is left out of the macro average. Eq. 7-8 average over the four factors; with a
factor not applicable the paper is silent, so `match_graphs(..., macro=...)` offers both readings:
"present" (the average of the factors present, the default: see the scorer's docstring for the
measurement) and "four" (divide by four, an absent factor adding 0). S_G = macro F (Eq. 9).

S(x, y) between events is the mean of the bare-lemma cosine and the cosine of the events in context
(PhraseSimilarity.event_matrix); sources, attributes and tags compare bare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .graph import AND, AudioGraph
from .text import gender_of, normalize_phrase

FACTORS = ("event", "source", "attribute", "relation")
#: a node whose matching probability reaches this counts as matched in the explanations
MATCH_THRESHOLD = 0.6


def event_text(name: str) -> str:
    """What is embedded for an event or a source: the lemma form ("barking" -> "bark")."""
    return normalize_phrase(name) or name.lower()


def attribute_text(attribute: str) -> str:
    return " ".join(attribute.lower().replace("_", " ").split())


def event_context_text(graph: AudioGraph, event: str) -> str:
    """An event in its context: "dog barking" for the event "barking" with the source "dog".

    Bare words are ambiguous ("running" water / motor, "bark") and MiniLM places unrelated bare
    words close together; the phrase with its first source separates them. Events a graph only
    names in a relation (an expert annotation's relations come from the reference captions) have
    no context and embed bare.
    """
    sources = (graph.events.get(event) or {}).get("source") or []
    name = " ".join(event.lower().split())
    return f"{' '.join(sources[0].lower().split())} {name}" if sources else name


def graph_phrases(graph: AudioGraph) -> set[str]:
    """Every text S(x, y) embeds for a graph (events bare and in context, sources, attributes)."""
    events = list(graph.events) + [e for relation in graph.relations for e in relation[:2]]
    phrases = {event_text(e) for e in events} | {event_context_text(graph, e) for e in events}
    phrases.update(event_text(source) for _, source in graph.sources())
    phrases.update(attribute_text(attribute) for _, attribute in graph.attributes())
    return phrases


class PhraseSimilarity:
    """S(x, y): cosine of phrase vectors clipped to [0, 1]; 1 for the same lemma key; 0 across genders
    and between antonym attribute tags (loud / quiet) of the tag library.

    Events compare by the mean of the bare-lemma cosine and the in-context cosine (see
    event_context_text); `context=False` gives the bare-lemma S of the first version.
    """

    def __init__(
        self,
        vectors: dict[str, np.ndarray],
        antonyms: Callable[[str, str], bool] | None = None,
        context: bool = True,
    ) -> None:
        self.vectors = vectors
        self.antonyms = antonyms
        self.context = context

    def _cosines(self, xs: list[str], ys: list[str]) -> np.ndarray:
        x_vectors = np.stack([self.vectors[x] for x in xs])
        y_vectors = np.stack([self.vectors[y] for y in ys])
        return np.clip(x_vectors @ y_vectors.T, 0.0, 1.0).astype(np.float64)

    def event_matrix(
        self, x_graph: AudioGraph, y_graph: AudioGraph, x_events: list[str], y_events: list[str]
    ) -> np.ndarray:
        """S between events of two graphs (rows: x_events, columns: y_events)."""
        if not x_events or not y_events:
            return np.zeros((len(x_events), len(y_events)))
        x_bare, y_bare = [event_text(e) for e in x_events], [event_text(e) for e in y_events]
        scores = self._cosines(x_bare, y_bare)
        if self.context:
            in_context = self._cosines(
                [event_context_text(x_graph, e) for e in x_events], [event_context_text(y_graph, e) for e in y_events]
            )
            scores = (scores + in_context) / 2
        return self._apply_rules(scores, x_bare, y_bare, attributes=False)

    def matrix(self, xs: list[str], ys: list[str], attributes: bool = False) -> np.ndarray:
        if not xs or not ys:
            return np.zeros((len(xs), len(ys)))
        return self._apply_rules(self._cosines(xs, ys), xs, ys, attributes)

    def _apply_rules(self, scores: np.ndarray, xs: list[str], ys: list[str], attributes: bool) -> np.ndarray:
        x_keys = [normalize_phrase(x) for x in xs]
        y_keys = [normalize_phrase(y) for y in ys]
        x_genders = [gender_of(x) for x in xs]
        y_genders = [gender_of(y) for y in ys]
        for i, x in enumerate(xs):
            for j, y in enumerate(ys):
                if x_keys[i] and x_keys[i] == y_keys[j]:
                    scores[i, j] = 1.0
                elif x_genders[i] and y_genders[j] and x_genders[i] != y_genders[j]:
                    scores[i, j] = 0.0
                elif attributes and self.antonyms is not None and self.antonyms(x, y):
                    scores[i, j] = 0.0
        return scores


@dataclass
class NodeMatch:
    node: str
    score: float
    match: str | None
    event: str | None = None
    match_event: str | None = None

    def to_json(self) -> dict:
        data = {"node": self.node, "score": round(self.score, 4), "match": self.match}
        if self.event is not None:
            data["event"] = self.event
            data["match_event"] = self.match_event
        return data


@dataclass
class FactorResult:
    """precision / recall / f1 are None when the factor is not applicable (no node in either graph)."""

    precision: float | None
    recall: float | None
    f1: float | None
    #: False when neither graph has a node of this factor (left out of the macro average)
    included: bool
    candidate_nodes: list[NodeMatch] = field(default_factory=list)
    reference_nodes: list[NodeMatch] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "precision": _rounded(self.precision),
            "recall": _rounded(self.recall),
            "f1": _rounded(self.f1),
            "included": self.included,
            "matched": [m.to_json() for m in self.candidate_nodes if m.score >= MATCH_THRESHOLD],
            "hallucinated": [m.to_json() for m in self.candidate_nodes if m.score < MATCH_THRESHOLD],
            "missed": [m.to_json() for m in self.reference_nodes if m.score < MATCH_THRESHOLD],
        }


@dataclass
class GraphMatch:
    factors: dict[str, FactorResult]
    precision: float
    recall: float
    score: float


MACRO_READINGS = ("present", "four")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def f_measure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _factor(candidate: list[NodeMatch], reference: list[NodeMatch]) -> FactorResult:
    """Eq. 6: the mean matching probability of each side's nodes; a side without nodes scores 0, and a
    factor without nodes on either side is not applicable (None)."""
    if not candidate and not reference:
        return FactorResult(None, None, None, included=False)
    precision = float(np.mean([m.score for m in candidate])) if candidate else 0.0
    recall = float(np.mean([m.score for m in reference])) if reference else 0.0
    return FactorResult(precision, recall, f_measure(precision, recall), True, candidate, reference)


def not_applicable(factor: FactorResult) -> FactorResult:
    """The same factor marked not applicable (e.g. relations against a reference without temporal information)."""
    return FactorResult(None, None, None, False, factor.candidate_nodes, factor.reference_nodes)


def _children(
    x_graph: AudioGraph,
    y_graph: AudioGraph,
    x_events: list[str],
    y_events: list[str],
    event_scores: np.ndarray,
    kind: str,
    similarity: PhraseSimilarity,
) -> list[NodeMatch]:
    """Eq. 4: P(C_ij) = P(C_ij | E_i) P(E_i), under the parent's best match y* = argmax_y S(E_i, y):
    P(E_i) = S(E_i, y*), P(C_ij | E_i) = max over the children of y* of S(C_ij, c); 0 when y* has none."""
    text = event_text if kind == "source" else attribute_text
    key = "source" if kind == "source" else "attr"
    matches = []
    for i, event in enumerate(x_events):
        children = x_graph.events[event][key]
        if not children:
            continue
        if not y_events:
            matches.extend(NodeMatch(child, 0.0, None, event, None) for child in children)
            continue
        best = int(np.argmax(event_scores[i]))
        parent_probability = float(event_scores[i, best])
        partners = y_graph.events[y_events[best]][key]
        if not partners or parent_probability <= 0.0:
            matches.extend(NodeMatch(child, 0.0, None, event, y_events[best]) for child in children)
            continue
        scores = similarity.matrix(
            [text(c) for c in children], [text(p) for p in partners], attributes=kind == "attribute"
        )
        for c_index, child in enumerate(children):
            p_index = int(np.argmax(scores[c_index]))
            probability = parent_probability * float(scores[c_index, p_index])
            matches.append(NodeMatch(child, probability, partners[p_index], event, y_events[best]))
    return matches


def relation_endpoints(graph: AudioGraph) -> list[str]:
    """Events that take part in a relation (for an expert annotation: events of its reference captions)."""
    endpoints: list[str] = []
    for first, second, _ in graph.relations:
        for event in (first, second):
            if event not in endpoints:
                endpoints.append(event)
    return endpoints


def _relations(x_graph: AudioGraph, y_graph: AudioGraph, similarity: PhraseSimilarity) -> list[NodeMatch]:
    """P(R_ik) = P(R | E_i, E_k) P(E_i) P(E_k): the reference must hold the same relation between the best
    matches of both events (`and` in either direction, `before` in order; relations are canonical)."""
    x_events, y_events = relation_endpoints(x_graph), relation_endpoints(y_graph)
    y_relations = set(y_graph.relations)
    index = {event: i for i, event in enumerate(x_events)}
    event_scores = similarity.event_matrix(x_graph, y_graph, x_events, y_events)
    matches = []
    for first, second, relation in x_graph.relations:
        label = f"{first} {relation} {second}"
        if not y_events:
            matches.append(NodeMatch(label, 0.0, None))
            continue
        i, k = index[first], index[second]
        best_i, best_k = int(np.argmax(event_scores[i])), int(np.argmax(event_scores[k]))
        a, b = y_events[best_i], y_events[best_k]
        holds = (a, b, relation) in y_relations or (relation == AND and (b, a, AND) in y_relations)
        probability = float(event_scores[i, best_i] * event_scores[k, best_k]) if holds else 0.0
        matches.append(NodeMatch(label, probability, f"{a} {relation} {b}" if holds else None))
    return matches


def match_graphs(
    candidate: AudioGraph, reference: AudioGraph, similarity: PhraseSimilarity, *, macro: str = "present"
) -> GraphMatch:
    """Factor precision / recall / F and the graph score S_G of a candidate graph against a reference graph.

    macro: "present" averages the applicable factors, "four" divides their sum by four (Eq. 7-8 read
    literally, a factor that is not applicable adding 0).
    """
    if macro not in MACRO_READINGS:
        raise ValueError(f"macro must be one of {', '.join(MACRO_READINGS)}, not {macro!r}")
    c_events, r_events = list(candidate.events), list(reference.events)
    scores = similarity.event_matrix(candidate, reference, c_events, r_events)
    transposed = scores.T

    def event_nodes(events: list[str], matrix: np.ndarray, others: list[str]) -> list[NodeMatch]:
        nodes = []
        for i, event in enumerate(events):
            if matrix.shape[1]:
                j = int(np.argmax(matrix[i]))
                nodes.append(NodeMatch(event, float(matrix[i, j]), others[j]))
            else:
                nodes.append(NodeMatch(event, 0.0, None))
        return nodes

    factors = {
        "event": _factor(event_nodes(c_events, scores, r_events), event_nodes(r_events, transposed, c_events)),
        "source": _factor(
            _children(candidate, reference, c_events, r_events, scores, "source", similarity),
            _children(reference, candidate, r_events, c_events, transposed, "source", similarity),
        ),
        "attribute": _factor(
            _children(candidate, reference, c_events, r_events, scores, "attribute", similarity),
            _children(reference, candidate, r_events, c_events, transposed, "attribute", similarity),
        ),
    }
    relation = _factor(_relations(candidate, reference, similarity), _relations(reference, candidate, similarity))
    if not reference.has_relation_information:
        relation = not_applicable(relation)  # e.g. an expert annotation without any temporal information
    factors["relation"] = relation
    included = [f for f in factors.values() if f.included]
    denominator = len(FACTORS) if macro == "four" else len(included)
    precision = sum(f.precision for f in included) / denominator if included else 0.0
    recall = sum(f.recall for f in included) / denominator if included else 0.0
    return GraphMatch(factors, precision, recall, f_measure(precision, recall))
