"""Whether two events name the same sound: meaning weighed with time overlap. Plain Python (no Django).

Meaning of two events (each part in [0, 1], the weighted mean of the parts both have):

- phrase (0.5): Sentence-BERT cosine of "the sound of <first source> <name>" ("the sound of insects buzzing" /
  "the sound of cicadas chirring"); the whole phrase carries what a bare name misses;
- name (0.3): X-ACE's event similarity S (the bare lemma and the event with its first source);
- source (0.2): 1 when the sources share a word ("car horn" / "horn"), else X-ACE's S between the source lists.

Attributes do not decide what the sound is (a loud and a quiet bark are one bark); they are shown beside.

Two events match when their meaning reaches what their time overlap needs: MEANING_TOGETHER when their spans
overlap strongly (intersection over union at least STRONG_OVERLAP: the seconds already say "the same sound"),
else MEANING_APART (no spans, or spans apart: a wrong match would hide a real event). Over the same seconds, two
events whose sources belong to one sound class (sound_classes.py: insects / cicadas, a hypernym and its
hyponym) count their sources as the same and need only MEANING_SAME_CLASS: the model alone puts "cicadas
chirring" far from "insects buzzing" (meaning 0.42), below a dog's bark and a door slam (0.45). The weights and
the thresholds were chosen on half "a" of the labelled event-name pairs (tests/metrics_bridge/data/
event_name_pairs.json, built by bench/event_name_pairs_build.py from AudioCaps-F); bench/event_matching_eval.py
chooses them and reports precision and recall on half "b" (docs/annotation.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from common.time_relations import merged_spans
from metrics_bridge.agreement.sound_classes import class_phrases, shared_class
from metrics_bridge.scoring.xace.graph import AudioGraph
from metrics_bridge.scoring.xace.matching import PhraseSimilarity, attribute_text, event_text
from metrics_bridge.scoring.xace.text import gender_of, normalize_phrase

MEANING_WEIGHTS = {"phrase": 0.5, "name": 0.3, "source": 0.2}
STRONG_OVERLAP = 0.5
#: highest recall with precision >= 0.95 on half "a": events apart in time must be unmistakably one sound
MEANING_APART = 0.65
#: best F1 on half "a": events over the same seconds (the seconds already speak for one sound)
MEANING_TOGETHER = 0.62
#: best F1 on half "a" of events over the same seconds whose sources share a sound class (with the source part
#: counted as 1), the highest of equals
MEANING_SAME_CLASS = 0.53
Spans = list[tuple[float, float]]


@dataclass
class Event:
    annotator: str
    label: str
    sources: list[str]
    attributes: list[str]
    spans: Spans
    #: other event label -> kind, as stated by this annotator (this event <kind> the other)
    relations: dict[str, str] = field(default_factory=dict)


@dataclass
class PairScore:
    meaning: float
    #: the meaning this pair's time overlap needs to match
    needed: float
    #: name, phrase, source, attribute (shown, not weighed), time (None: a part one of the events lacks)
    parts: dict[str, float | None]
    #: the sound class both sources belong to, when it decided what the pair needs (over the same seconds)
    kind: str | None = None

    @property
    def matched(self) -> bool:
        return self.meaning >= self.needed

    def to_json(self) -> dict:
        return {
            "score": round(self.meaning, 3),
            "needed": self.needed,
            "parts": {name: None if value is None else round(value, 3) for name, value in self.parts.items()},
            "kind": self.kind,
        }


def _length(spans: Spans) -> float:
    return sum(b - a for a, b in spans)


def time_overlap(first: Sequence[Sequence[float]], second: Sequence[Sequence[float]]) -> float | None:
    """Seconds both sound over seconds either sounds (intersection over union); None when one has no spans."""
    a, b = merged_spans(first), merged_spans(second)
    if not a or not b:
        return None
    both = sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in a for y0, y1 in b)
    union = _length(a) + _length(b) - both
    return both / union if union > 0 else (1.0 if both == 0 and a == b else 0.0)


def overlap_strong(overlap: float | None) -> bool:
    return overlap is not None and overlap >= STRONG_OVERLAP


def meaning_needed(overlap: float | None) -> float:
    """The meaning two events need to match, given how much their spans overlap (None: no spans)."""
    return MEANING_TOGETHER if overlap_strong(overlap) else MEANING_APART


def sound_phrase(label: str, sources: Sequence[str]) -> str:
    """The phrase embedded for an event's meaning: "the sound of insects buzzing"."""
    words = " ".join(f"{sources[0] if sources else ''} {label}".lower().split())
    return f"the sound of {words}"


def event_phrases(events: Sequence[Event]) -> set[str]:
    """The phrases pair_scores embeds beyond X-ACE's (graph_phrases of label_graph)."""
    phrases = {sound_phrase(event.label, event.sources) for event in events}
    return phrases | class_phrases([event.sources[0] for event in events if event.sources])


def label_graph(events: Sequence[Event]) -> AudioGraph:
    """An X-ACE graph with one node per event label (AudioGraph.add_event would join "bark" and "barking")."""
    graph = AudioGraph()
    for event in events:
        graph.events[event.label] = {"source": list(event.sources), "attr": list(event.attributes)}
    return graph


def list_similarity(xs: list[str], ys: list[str], similarity: PhraseSimilarity, attributes: bool) -> float | None:
    """X-ACE's S between two lists: each item's best match, averaged both ways (None when one is empty)."""
    if not xs or not ys:
        return None
    text = attribute_text if attributes else event_text
    scores = similarity.matrix([text(x) for x in xs], [text(y) for y in ys], attributes=attributes)
    return float((scores.max(axis=1).mean() + scores.max(axis=0).mean()) / 2)


def _source_words(sources: Sequence[str]) -> set[str]:
    return {word for source in sources for word in (normalize_phrase(source) or source.lower()).split()}


def source_similarity(xs: list[str], ys: list[str], similarity: PhraseSimilarity) -> float | None:
    """1 when the sources share a word (a "car horn" is a "horn"), else X-ACE's S between the lists (0 for a
    man's and a woman's voice, X-ACE's gender rule)."""
    if not xs or not ys:
        return None
    genders = {gender for gender in map(gender_of, [*xs, *ys]) if gender}
    if len(genders) < 2 and _source_words(xs) & _source_words(ys):
        return 1.0
    return list_similarity(xs, ys, similarity, attributes=False)


def _phrase_cosine(first: Event, second: Event, similarity: PhraseSimilarity) -> float:
    x, y = sound_phrase(first.label, first.sources), sound_phrase(second.label, second.sources)
    if x == y:
        return 1.0  # float32 cosines of a vector with itself can fall a hair below 1
    return float(np.clip(np.dot(similarity.vectors[x], similarity.vectors[y]), 0.0, 1.0))


def meaning(parts: dict[str, float | None]) -> float:
    present = {name: parts[name] for name in MEANING_WEIGHTS if parts.get(name) is not None}
    return sum(MEANING_WEIGHTS[name] * value for name, value in present.items()) / sum(
        MEANING_WEIGHTS[name] for name in present
    )


def pair_scores(first: Sequence[Event], second: Sequence[Event], similarity: PhraseSimilarity) -> list[list[PairScore]]:
    """The score of each event of `first` against each of `second`; `similarity` must have every phrase of their
    label_graph()s and event_phrases() embedded."""
    names = similarity.event_matrix(
        label_graph(first), label_graph(second), [e.label for e in first], [e.label for e in second]
    )
    rows = []
    for i, a in enumerate(first):
        row = []
        for j, b in enumerate(second):
            parts = {
                "phrase": _phrase_cosine(a, b, similarity),
                "name": float(names[i, j]),
                "source": source_similarity(a.sources, b.sources, similarity),
                "attribute": list_similarity(a.attributes, b.attributes, similarity, attributes=True),
                "time": time_overlap(a.spans, b.spans),
            }
            row.append(_pair_score(a, b, parts, similarity))
        rows.append(row)
    return rows


def _pair_score(first: Event, second: Event, parts: dict[str, float | None], similarity: PhraseSimilarity) -> PairScore:
    """Over the same seconds, sources of one sound class count as the same source and need MEANING_SAME_CLASS;
    apart in time a hypernym is not enough (a wrong match would hide a real event)."""
    kind = shared_class(first.sources, second.sources, similarity.vectors) if overlap_strong(parts["time"]) else None
    if kind is None:
        return PairScore(meaning=meaning(parts), needed=meaning_needed(parts["time"]), parts=parts)
    return PairScore(meaning=meaning({**parts, "source": 1.0}), needed=MEANING_SAME_CLASS, parts=parts, kind=kind)


def assignment_weights(scores: list[list[PairScore]]) -> np.ndarray:
    """Weights for a one-to-one assignment: any matching pair outweighs none, better meaning (then more shared
    seconds) first; pairs that do not match weigh 0."""
    weights = np.zeros((len(scores), len(scores[0]) if scores else 0))
    for i, row in enumerate(scores):
        for j, score in enumerate(row):
            if score.matched:
                weights[i, j] = 1.0 + score.meaning - score.needed + 0.01 * (score.parts["time"] or 0.0)
    return weights
