"""Correlation of a metric with human ratings (THumBS), caption level and system level. Plain Python.

    correlate(metric, human, method="kendall") -> Correlation(value, p_value, ci_low, ci_high, n)
    correlation_table(metric, human) -> {"pearson": ..., "spearman": ..., "kendall": ...}
    system_level_correlation_table(metric, human, systems) -> same, on per-system means
    metric_human_correlations(metric, {"overall": [...], "precision": [...], "recall": [...]}, systems=None)
        -> {"caption": {field: {method: Correlation}}, "system": {...}}   ("system" only with systems)

Pearson r, Spearman rho and Kendall tau-b come from scipy.stats (pearsonr, spearmanr, kendalltau
with variant "b"). Confidence intervals: seeded percentile bootstrap (default 1000 resamples, 95%)
over captions -- pairs (metric, human) are resampled together; at system level captions are
resampled and the system means recomputed, so the interval reflects caption sampling. Resamples
where the statistic is undefined (constant input) are skipped. Pairs with a NaN on either side are
dropped first. Fewer than 3 pairs: value and interval are NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

METHODS = ("pearson", "spearman", "kendall")
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Correlation:
    method: str
    value: float
    p_value: float
    ci_low: float
    ci_high: float
    n: int
    confidence: float = 0.95

    def as_dict(self) -> dict:
        return asdict(self)


def _statistic(method: str) -> Callable[[np.ndarray, np.ndarray], tuple[float, float]]:
    if method == "pearson":
        return lambda x, y: tuple(stats.pearsonr(x, y))
    if method == "spearman":
        return lambda x, y: tuple(stats.spearmanr(x, y))
    if method == "kendall":
        return lambda x, y: tuple(stats.kendalltau(x, y, variant="b"))
    raise ValueError(f"unknown correlation method {method!r} (use one of {', '.join(METHODS)})")


def _safe(function, *arrays) -> tuple[float, float]:
    """The statistic, or (nan, nan) when it is undefined (constant input, too few points)."""
    if len(arrays[0]) < 3 or any(np.ptp(a) == 0 for a in arrays):
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, p_value = function(*arrays)
    return float(value), float(p_value)


def _clean(metric: Sequence[float], human: Sequence[float], *extra: Sequence) -> tuple[np.ndarray, ...]:
    x = np.asarray(metric, dtype=float)
    y = np.asarray(human, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"metric and human values must be 1-D and the same length ({x.shape} vs {y.shape})")
    keep = ~(np.isnan(x) | np.isnan(y))
    return (x[keep], y[keep], *(np.asarray(e, dtype=object)[keep] for e in extra))


def _percentile_interval(samples: list[float], confidence: float) -> tuple[float, float]:
    values = np.asarray([s for s in samples if not np.isnan(s)])
    if values.size == 0:
        return float("nan"), float("nan")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def correlate(
    metric: Sequence[float],
    human: Sequence[float],
    *,
    method: str = "kendall",
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Correlation:
    """Caption-level correlation with a percentile-bootstrap confidence interval."""
    function = _statistic(method)
    x, y = _clean(metric, human)
    value, p_value = _safe(function, x, y)
    if np.isnan(value):
        return Correlation(method, value, p_value, float("nan"), float("nan"), len(x), confidence)
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(resamples):
        index = rng.integers(0, len(x), len(x))
        samples.append(_safe(function, x[index], y[index])[0])
    low, high = _percentile_interval(samples, confidence)
    return Correlation(method, value, p_value, low, high, len(x), confidence)


def correlation_table(metric: Sequence[float], human: Sequence[float], **options) -> dict[str, Correlation]:
    return {method: correlate(metric, human, method=method, **options) for method in METHODS}


def system_means(values: Sequence[float], systems: Sequence[Hashable]) -> dict[Hashable, float]:
    """Mean value per system (NaN values ignored), systems in first-seen order."""
    sums: dict[Hashable, list[float]] = {}
    for value, system in zip(values, systems, strict=True):
        if not np.isnan(value):
            sums.setdefault(system, []).append(float(value))
    return {system: float(np.mean(items)) for system, items in sums.items()}


def _system_arrays(x: np.ndarray, y: np.ndarray, systems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    metric_means = system_means(x, systems)
    human_means = system_means(y, systems)
    names = list(metric_means)
    return np.array([metric_means[n] for n in names]), np.array([human_means[n] for n in names])


def system_level_correlate(
    metric: Sequence[float],
    human: Sequence[float],
    systems: Sequence[Hashable],
    *,
    method: str = "kendall",
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Correlation:
    """Correlation of per-system means (n = number of systems); bootstrap resamples captions."""
    function = _statistic(method)
    x, y, labels = _clean(metric, human, systems)
    value, p_value = _safe(function, *_system_arrays(x, y, labels))
    count = len(set(labels.tolist()))
    if np.isnan(value):
        return Correlation(method, value, p_value, float("nan"), float("nan"), count, confidence)
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(resamples):
        index = rng.integers(0, len(x), len(x))
        samples.append(_safe(function, *_system_arrays(x[index], y[index], labels[index]))[0])
    low, high = _percentile_interval(samples, confidence)
    return Correlation(method, value, p_value, low, high, count, confidence)


def system_level_correlation_table(
    metric: Sequence[float], human: Sequence[float], systems: Sequence[Hashable], **options
) -> dict[str, Correlation]:
    return {method: system_level_correlate(metric, human, systems, method=method, **options) for method in METHODS}


def metric_human_correlations(
    metric: Sequence[float],
    human: Mapping[str, Sequence[float]],
    *,
    systems: Sequence[Hashable] | None = None,
    **options,
) -> dict[str, dict[str, dict[str, Correlation]]]:
    """Correlations of one metric with each human field (e.g. THumBS overall, precision, recall)."""
    result = {"caption": {field: correlation_table(metric, values, **options) for field, values in human.items()}}
    if systems is not None:
        result["system"] = {
            field: system_level_correlation_table(metric, values, systems, **options) for field, values in human.items()
        }
    return result
