"""Choosing and measuring event_similarity's weights and thresholds on labelled event-name pairs. Plain Python.

The pairs (tests/metrics_bridge/data/event_name_pairs.json) carry a name and a first source per side, a label
(same kind of sound or not) and a half: "a" chooses, "b" measures. They carry no time spans, so each pair is
judged twice: as two events over the same seconds (the MEANING_TOGETHER threshold applies) and as two events
without spans or apart in time (MEANING_APART).

    report = tuning_report(pairs, encoder=...)   # {"weights", "apart", "together"} chosen on "a", measured on "b"
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from metrics_bridge.agreement import event_similarity
from metrics_bridge.agreement.event_similarity import Event, event_phrases, label_graph, pair_scores
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


def pair_parts(pairs: Sequence[dict], *, encoder: Encoder) -> list[dict]:
    """The parts (phrase, name, source) of each pair's score, one encoder batch for every phrase."""
    events = [event for pair in pairs for event in pair_events(pair)]
    phrases = sorted(set().union(*(graph_phrases(label_graph([e])) for e in events), event_phrases(events)))
    similarity = PhraseSimilarity(dict(zip(phrases, encoder(phrases), strict=True)))
    parts = []
    for pair in pairs:
        first, second = pair_events(pair)
        parts.append(pair_scores([first], [second], similarity)[0][0].parts)
    return parts


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


def tuning_report(pairs: Sequence[dict], *, encoder: Encoder) -> dict:
    """Weights and thresholds chosen on half "a", precision / recall / F1 of the matching rule on both halves."""
    parts = pair_parts(pairs, encoder=encoder)
    labels = np.array([bool(pair["same"]) for pair in pairs])
    tuning = np.array([pair["half"] == "a" for pair in pairs])
    weights = choose_weights([p for p, keep in zip(parts, tuning, strict=True) if keep], labels[tuning])
    scores = meanings(parts, weights)
    thresholds = {
        "apart": choose_apart(scores[tuning], labels[tuning]),
        "together": choose_together(scores[tuning], labels[tuning]),
    }
    report = {"weights": weights, "pairs": {"a": int(tuning.sum()), "b": int((~tuning).sum())}}
    for rule, threshold in thresholds.items():
        entry = {"threshold": threshold}
        for half, mask in (("a", tuning), ("b", ~tuning)):
            precision, recall = precision_recall(scores[mask] >= threshold, labels[mask])
            entry[half] = {
                "precision": round(precision, 3),
                "recall": round(recall, 3),
                "f1": round(_f_beta(precision, recall), 3),
            }
        report[rule] = entry
    return report
