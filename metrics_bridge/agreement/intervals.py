"""95 % bootstrap intervals of agreement figures, resampling clips, and whether a column's best metric is
separable from the next. Plain Python (numpy).

    agreement_intervals({metric: [PairDecision, ...]}, columns=["HC", ..., "total"]) -> AgreementIntervals
    rank_agreement_intervals({metric: [system value, ...]}, tallies) -> {metric: (low, high) | None}

Every figure of an agreement table is a ratio of sums over pairs: accuracy = correct / counted pairs (per split,
or all of them for "total"), BRACE's F1 = 2 TP / (2 TP + FP + FN) with "caption_1 preferred" positive. Pairs of
one clip share its references and often its captions, so they are not independent: the bootstrap resamples
clips (with their pairs), seeded, the same draws as the THumBS correlations' (statistics._resample_indices),
and every metric is evaluated on the same resamples. That makes the comparison paired: the best value of a
column is "separable" from the next only when the 95 % percentile interval of their difference over the
resamples lies above zero; otherwise the table says "not separable" (two metrics judged on the same 50 pairs
can differ by several points by chance). Resamples where a column has no pair are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .protocol import PairDecision, split_of
from .statistics import DEFAULT_RESAMPLES, DEFAULT_SEED, _percentile_interval, _resample_indices, _rowwise_statistic

F1 = "f1"
TOTAL = "total"


@dataclass(frozen=True)
class Separation:
    """The best metric of a column against the next best."""

    best: str
    runner_up: str | None  # None: the only metric with a value
    difference_low: float | None  # 95 % interval of best - runner-up, percentage points
    difference_high: float | None

    @property
    def separable(self) -> bool:
        return self.runner_up is None or (self.difference_low is not None and self.difference_low > 0)

    def as_dict(self) -> dict:
        return {
            "best": self.best,
            "runner_up": self.runner_up,
            "difference": [self.difference_low, self.difference_high],
            "separable": self.separable,
        }


@dataclass
class AgreementIntervals:
    confidence: float
    resamples: int
    seed: int
    clips: int
    #: {metric: {column: (low, high)}}; (None, None) where the column has no pair
    intervals: dict[str, dict[str, tuple[float | None, float | None]]] = field(default_factory=dict)
    #: {column: Separation} for the columns where some metric has a value
    best: dict[str, Separation] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "clips": self.clips,
            "intervals": {name: {c: list(v) for c, v in by.items()} for name, by in self.intervals.items()},
            "best": {column: separation.as_dict() for column, separation in self.best.items()},
        }


def _answer_is_b(decision: PairDecision) -> bool:
    # the pair's answer in BRACE terms: the caption people preferred is b when the truth is negative
    return decision.pair.truth < 0


def clip_sums(
    decisions: Sequence[PairDecision], clips: Sequence, columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator), each clips x columns: the figure of a column over any set of clips is
    100 * sum(numerator) / sum(denominator) over them (the counted pairs: `correct` not None)."""
    position = {clip: index for index, clip in enumerate(clips)}
    numerator = np.zeros((len(clips), len(columns)))
    denominator = np.zeros((len(clips), len(columns)))
    index_of = {column: index for index, column in enumerate(columns)}
    for decision in decisions:
        if decision.correct is None:
            continue
        row = position[decision.clip_key]
        targets = [split_of(decision.pair.split), TOTAL]
        for column in targets:
            if column in index_of:
                numerator[row, index_of[column]] += decision.correct
                denominator[row, index_of[column]] += 1
        if F1 in index_of and decision.prediction is not None:
            predicted_b, answer_b = decision.prediction == "b", _answer_is_b(decision)
            true_positive = predicted_b and answer_b
            numerator[row, index_of[F1]] += 2 * true_positive
            denominator[row, index_of[F1]] += 2 * true_positive + (predicted_b and not answer_b)
            denominator[row, index_of[F1]] += (not predicted_b) and answer_b
    return numerator, denominator


def clip_resample_weights(clips: int, *, resamples: int, seed: int) -> np.ndarray:
    """resamples x clips: how many times each clip is drawn in each resample (the THumBS bootstrap's draws)."""
    indices = _resample_indices(clips, resamples, seed)
    offsets = indices + clips * np.arange(resamples)[:, None]
    return np.bincount(offsets.ravel(), minlength=resamples * clips).reshape(resamples, clips).astype(float)


def resampled_figures(numerator: np.ndarray, denominator: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """resamples x columns figures in percent (NaN where a resample has no pair in the column)."""
    top, bottom = weights @ numerator, weights @ denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        figures = 100.0 * top / bottom
    # F1 with no positive on either side is 0 (sklearn's zero_division=0), as is a count of 0 of n pairs
    return np.where(bottom > 0, figures, np.nan)


def _interval(samples: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    low, high = _percentile_interval(list(samples), confidence)
    if np.isnan(low):
        return None, None
    return float(low), float(high)


def agreement_intervals(
    decisions: Mapping[str, Sequence[PairDecision]],
    *,
    columns: Sequence[str],
    values: Mapping[str, Mapping[str, float | None]] | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> AgreementIntervals:
    """Intervals of every metric's figures and the separation of each column's best metric from the next.

    `values` ({metric: {column: value}}, the table's own figures) decides which metric is best and next; by
    default the figures over all clips computed here."""
    clips = sorted({decision.clip_key for metric in decisions.values() for decision in metric}, key=str)
    result = AgreementIntervals(confidence=confidence, resamples=resamples, seed=seed, clips=len(clips))
    if not clips:
        return result
    weights = clip_resample_weights(len(clips), resamples=resamples, seed=seed)
    samples, point = {}, {}
    for name, metric_decisions in decisions.items():
        numerator, denominator = clip_sums(metric_decisions, clips, columns)
        samples[name] = resampled_figures(numerator, denominator, weights)
        totals = denominator.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            point[name] = np.where(totals > 0, 100.0 * numerator.sum(axis=0) / totals, np.nan)
        result.intervals[name] = {
            column: _interval(samples[name][:, index], confidence) for index, column in enumerate(columns)
        }
    for index, column in enumerate(columns):
        ranked = []
        for name in decisions:
            value = values[name].get(column) if values is not None and name in values else point[name][index]
            if value is not None and not np.isnan(value):
                ranked.append((value, name))
        if not ranked:
            continue
        # the highest value, the first in table order among equals
        ranked.sort(key=lambda item: -item[0])
        (best_value, best), others = ranked[0], ranked[1:]
        if not others:
            result.best[column] = Separation(best, None, None, None)
            continue
        runner_value, runner_up = others[0]
        low, high = _interval(samples[best][:, index] - samples[runner_up][:, index], confidence)
        if runner_value == best_value:  # a tie is never separable, whatever the resamples say
            low = None
        result.best[column] = Separation(best, runner_up, low, high)
    return result


def rank_agreement_intervals(
    metric_values: Mapping[str, Sequence[float | None]],
    tallies: np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, tuple[float, float] | None]:
    """95 % interval of each metric's Kendall tau-b with the systems' human win rates, resampling clips.

    `tallies`: clips x systems x 3, each system's votes on the clip's pairs [for, no preference, against];
    `metric_values[name][s]`: the metric's value of system s (None: no value). The win rates are recomputed on
    each resample of clips (1 per vote for, 1/2 per no preference); the metrics' system values are held, since
    corpus-level scores (CIDEr-D, BLEU) do not split by clip: the interval shows how much the human ranking the
    metric is compared with moves when other clips had been judged. None with fewer than 3 systems."""
    clips = tallies.shape[0]
    result: dict[str, tuple[float, float] | None] = {name: None for name in metric_values}
    if clips == 0:
        return result
    weights = clip_resample_weights(clips, resamples=resamples, seed=seed)
    totals = np.einsum("rc,csk->rsk", weights, tallies)
    votes = totals.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(votes > 0, (totals[..., 0] + 0.5 * totals[..., 1]) / votes, np.nan)
    for name, values in metric_values.items():
        present = [index for index, value in enumerate(values) if value is not None]
        if len(present) < 3:
            continue
        x = np.asarray([values[index] for index in present], dtype=float)
        y = rates[:, present]
        complete = ~np.isnan(y).any(axis=1)
        samples = list(_rowwise_statistic("kendall", np.broadcast_to(x, y[complete].shape), y[complete]))
        for row in y[~complete]:  # a system without votes in this resample: tau over the others
            kept = ~np.isnan(row)
            if kept.sum() >= 3:
                samples.extend(_rowwise_statistic("kendall", x[kept][None, :], row[kept][None, :]))
        low, high = _interval(np.asarray(samples), confidence)
        result[name] = None if low is None else (low, high)
    return result
