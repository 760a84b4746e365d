"""Choosing and measuring event_similarity's weights and thresholds on labelled event-name pairs. Plain Python.

The pairs (tests/metrics_bridge/data/event_name_pairs.json) carry a name and a first source per side, a label
(same kind of sound or not) and a half: "a" chooses, "b" measures. They carry no time spans, so each pair is
judged twice: as two events over the same seconds (MEANING_TOGETHER, or MEANING_SAME_CLASS when their sources
share a sound class that is not generic) and as two events without spans or apart in time (MEANING_APART).

    report = tuning_report(pairs, encoder=...)
    # {"weights", "generic_classes", "apart", "together", "together_without_classes"}: chosen on "a", measured on "b"
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from metrics_bridge.agreement import event_similarity
from metrics_bridge.agreement.event_similarity import Event, event_phrases, label_graph, pair_scores
from metrics_bridge.agreement.sound_classes import sound_class
from metrics_bridge.scoring.xace.matching import PhraseSimilarity, graph_phrases

Encoder = Callable[[list[str]], np.ndarray]
#: precision events apart in time must reach on half "a" (a wrong match hides a real event)
APART_PRECISION = 0.95
#: recall weighs this many times precision for events over the same seconds (1: F1)
TOGETHER_BETA = 1.0


def pair_events(pair: dict) -> tuple[Event, Event]:
    """The two sides of a labelled pair as events (meaning does not depend on the spans, only what it needs)."""

    def event(side: dict, annotator: str) -> Event:
        return Event(annotator, side["name"], [side["source"]] if side.get("source") else [], [], [])

    return event(pair["first"], "first"), event(pair["second"], "second")


def pair_similarity(pairs: Sequence[dict], *, encoder: Encoder) -> PhraseSimilarity:
    """Every phrase the pairs' scores need, one encoder batch."""
    events = [event for pair in pairs for event in pair_events(pair)]
    phrases = sorted(set().union(*(graph_phrases(label_graph([e])) for e in events), event_phrases(events)))
    return PhraseSimilarity(dict(zip(phrases, encoder(phrases), strict=True)))


def pair_parts(pairs: Sequence[dict], *, encoder: Encoder, similarity: PhraseSimilarity | None = None) -> list[dict]:
    """The parts (phrase, name, source) of each pair's score."""
    similarity = similarity or pair_similarity(pairs, encoder=encoder)
    parts = []
    for pair in pairs:
        first, second = pair_events(pair)
        parts.append(pair_scores([first], [second], similarity)[0][0].parts)
    return parts


def pair_classes(pairs: Sequence[dict], similarity: PhraseSimilarity) -> list[str | None]:
    """The sound class both sides' sources belong to, generic or not (None: different classes or no source)."""
    classes = []
    for pair in pairs:
        first, second = (
            sound_class(pair[side].get("source") or "", similarity.vectors) for side in ("first", "second")
        )
        classes.append(first if first is not None and first == second else None)
    return classes


def choose_generic_classes(classes: Sequence[str | None], labels: np.ndarray) -> frozenset[str]:
    """Classes in which most pairs are different sounds (people speak, laugh and cough): sharing one says
    nothing about whether two events are one sound."""
    generic = set()
    for name in {kind for kind in classes if kind is not None}:
        members = np.array([kind == name for kind in classes])
        if labels[members].mean() < 0.5:
            generic.add(name)
    return frozenset(generic)


def together_predictions(
    parts: Sequence[dict], shared: np.ndarray, weights: dict[str, float], together: float, same_class: float
) -> np.ndarray:
    """Which pairs over the same seconds match: by meaning, or, sources sharing a sound class (`shared`), by the
    meaning with their source part counted as 1."""
    kin_scores = meanings([{**part, "source": 1.0} for part in parts], weights)
    return np.where(shared, kin_scores >= same_class, meanings(parts, weights) >= together)


def meanings(parts: Sequence[dict], weights: dict[str, float]) -> np.ndarray:
    saved = event_similarity.MEANING_WEIGHTS
    event_similarity.MEANING_WEIGHTS = weights
    try:
        return np.array([event_similarity.meaning(part) for part in parts])
    finally:
        event_similarity.MEANING_WEIGHTS = saved


def precision_recall(predicted: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    hits = int((predicted & labels).sum())
    return hits / max(int(predicted.sum()), 1), hits / max(int(labels.sum()), 1)


def _f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    weight = beta * beta
    return (1 + weight) * precision * recall / (weight * precision + recall) if precision + recall else 0.0


def _ranking_quality(scores: np.ndarray, labels: np.ndarray) -> float:
    """Share of (same, different) pairs ranked the right way (ROC AUC; ties count half)."""
    same, different = scores[labels], scores[~labels]
    return float(
        ((same[:, None] > different[None, :]).sum() + 0.5 * (same[:, None] == different[None, :]).sum())
        / (len(same) * len(different))
    )


def choose_weights(parts: Sequence[dict], labels: np.ndarray) -> dict[str, float]:
    """Weights in steps of 0.1 (summing to 1) that rank the pairs best."""
    best = None
    for phrase, name in itertools.product(np.arange(0, 11), repeat=2):
        if phrase + name > 10:
            continue
        weights = {"phrase": phrase / 10, "name": name / 10, "source": (10 - phrase - name) / 10}
        if weights["phrase"] + weights["name"] == 0:
            continue
        quality = _ranking_quality(meanings(parts, weights), labels)
        if best is None or quality > best[0] + 1e-12:
            best = (quality, weights)
    return best[1]


CANDIDATES = np.round(np.arange(0.2, 0.96, 0.01), 2)


def choose_apart(scores: np.ndarray, labels: np.ndarray) -> float:
    """The lowest threshold whose precision reaches APART_PRECISION (most recall)."""
    for threshold in CANDIDATES:
        precision, _recall = precision_recall(scores >= threshold, labels)
        if precision >= APART_PRECISION:
            return float(threshold)
    return float(CANDIDATES[-1])


def choose_together(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold with the best F1, the lowest of equals. (F2 was measured too: 0.43, precision 0.68 on half
    "b", which joins a dog's bark and a door slam, or wind and birds heard all along, into one row.)"""
    return float(
        max(CANDIDATES, key=lambda t: (round(_f_beta(*precision_recall(scores >= t, labels), TOGETHER_BETA), 9), -t))
    )


def choose_same_class(
    parts: Sequence[dict], shared: np.ndarray, labels: np.ndarray, weights: dict[str, float], together: float
) -> float:
    """The MEANING_SAME_CLASS with the best F1 of the whole rule over the same seconds, the highest of equals (as
    much meaning as the pairs allow asking of a hypernym)."""

    def quality(threshold: float) -> tuple[float, float]:
        predicted = together_predictions(parts, shared, weights, together, threshold)
        return round(_f_beta(*precision_recall(predicted, labels)), 9), threshold

    return float(max(CANDIDATES, key=quality))


def _figures(predicted: np.ndarray, labels: np.ndarray) -> dict:
    precision, recall = precision_recall(predicted, labels)
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(_f_beta(precision, recall), 3)}


def tuning_report(pairs: Sequence[dict], *, encoder: Encoder) -> dict:
    """Weights, generic classes and thresholds chosen on half "a", precision / recall / F1 of the matching rule
    on both halves ("together_without_classes": the rule over the same seconds before sound classes)."""
    similarity = pair_similarity(pairs, encoder=encoder)
    parts = pair_parts(pairs, encoder=encoder, similarity=similarity)
    classes = pair_classes(pairs, similarity)
    labels = np.array([bool(pair["same"]) for pair in pairs])
    tuning = np.array([pair["half"] == "a" for pair in pairs])
    tuning_parts = [p for p, keep in zip(parts, tuning, strict=True) if keep]
    weights = choose_weights(tuning_parts, labels[tuning])
    generic = choose_generic_classes([c for c, keep in zip(classes, tuning, strict=True) if keep], labels[tuning])
    shared = np.array([kind is not None and kind not in generic for kind in classes])
    scores = meanings(parts, weights)
    apart = choose_apart(scores[tuning], labels[tuning])
    together = choose_together(scores[tuning], labels[tuning])
    same_class = choose_same_class(tuning_parts, shared[tuning], labels[tuning], weights, together)
    rules = {
        "apart": ({"threshold": apart}, scores >= apart),
        "together": (
            {"threshold": together, "same_class": same_class},
            together_predictions(parts, shared, weights, together, same_class),
        ),
        "together_without_classes": ({"threshold": together}, scores >= together),
    }
    report = {
        "weights": weights,
        "generic_classes": sorted(generic),
        "pairs": {"a": int(tuning.sum()), "b": int((~tuning).sum())},
    }
    for rule, (entry, predicted) in rules.items():
        report[rule] = {
            **entry,
            "a": _figures(predicted[tuning], labels[tuning]),
            "b": _figures(predicted[~tuning], labels[~tuning]),
        }
    return report
