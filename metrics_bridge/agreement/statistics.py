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
where the statistic is undefined (constant input) are skipped. The resamples are drawn at once and the
statistic computed for all of them together (Pearson, Spearman, small-n Kendall vectorised; same values
as calling scipy on each resample, which the tests check). Pairs with a NaN on either side are
dropped first. Fewer than 3 pairs: value and interval are NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

METHODS = ("pearson", "spearman", "kendall")
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
#: up to this many points, bootstrap Kendall tau-b is computed for all resamples at once (n^2 memory per row)
SMALL_KENDALL = 64


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
    # scipy.stats on first use, here and below: the web server and every management command import this
    # module with the dashboards' views, and scipy.stats takes ~0.4 s to import.
    from scipy import stats

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


def _resample_indices(size: int, resamples: int, seed: int) -> np.ndarray:
    """resamples x size bootstrap indices; the same draws as `resamples` calls of rng.integers(0, size, size)."""
    return np.random.default_rng(seed).integers(0, size, (resamples, size))


def _rowwise_statistic(method: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The statistic of each row pair of two (resamples, n) arrays, NaN where undefined (as `_safe`).

    Pearson and Spearman (Pearson on average ranks) are computed for all rows at once; Kendall's tau-b
    calls scipy per row. Same values as scipy row by row, up to float rounding.
    """
    result = np.full(x.shape[0], np.nan)
    defined = (np.ptp(x, axis=1) > 0) & (np.ptp(y, axis=1) > 0) if x.shape[1] >= 3 else np.zeros(x.shape[0], bool)
    if not defined.any():
        return result
    x, y = x[defined], y[defined]
    if method == "kendall":
        if x.shape[1] <= SMALL_KENDALL:
            result[defined] = _kendall_tau_b_rows(x, y)
        else:
            function = _statistic(method)
            result[defined] = [_safe(function, row_x, row_y)[0] for row_x, row_y in zip(x, y, strict=True)]
        return result
    if method == "spearman":
        from scipy import stats

        x, y = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    elif method != "pearson":
        _statistic(method)  # raises for an unknown method
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    values = (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    result[defined] = np.clip(values, -1.0, 1.0)
    return result


def _kendall_tau_b_rows(x: np.ndarray, y: np.ndarray, block: int = 64) -> np.ndarray:
    """tau-b per row from the signs of all pairwise differences: sum(sx*sy) / sqrt(sum(sx^2) * sum(sy^2)),
    i.e. (concordant - discordant) / sqrt((pairs untied in x) * (pairs untied in y)), as scipy's variant "b"."""
    values = []
    for start in range(0, x.shape[0], block):
        bx, by = x[start : start + block], y[start : start + block]
        sx = np.sign(bx[:, :, None] - bx[:, None, :])
        sy = np.sign(by[:, :, None] - by[:, None, :])
        values.append((sx * sy).sum(axis=(1, 2)) / np.sqrt((sx * sx).sum(axis=(1, 2)) * (sy * sy).sum(axis=(1, 2))))
    return np.concatenate(values)


def _system_resample_statistics(method, function, x, y, labels, indices: np.ndarray) -> np.ndarray:
    """Per resample of captions: the statistic of the per-system means (systems present in the resample)."""
    _, codes = np.unique(labels.astype(str), return_inverse=True)
    systems = int(codes.max()) + 1 if len(codes) else 0
    resamples = indices.shape[0]
    flat = (codes[indices] + systems * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * systems).reshape(resamples, systems)
    sums_x = np.bincount(flat, weights=x[indices].ravel(), minlength=resamples * systems).reshape(resamples, systems)
    sums_y = np.bincount(flat, weights=y[indices].ravel(), minlength=resamples * systems).reshape(resamples, systems)
    complete = (counts > 0).all(axis=1)
    result = np.full(resamples, np.nan)
    if complete.any():
        means_x, means_y = sums_x[complete] / counts[complete], sums_y[complete] / counts[complete]
        result[complete] = _rowwise_statistic(method, means_x, means_y)
    for row in np.flatnonzero(~complete):  # a system drawn no caption: its mean is left out, as system_means does
        present = counts[row] > 0
        means_x, means_y = sums_x[row, present] / counts[row, present], sums_y[row, present] / counts[row, present]
        result[row] = _safe(function, means_x, means_y)[0]
    return result


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
    indices = _resample_indices(len(x), resamples, seed)
    samples = _rowwise_statistic(method, x[indices], y[indices])
    low, high = _percentile_interval(list(samples), confidence)
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
    indices = _resample_indices(len(x), resamples, seed)
    samples = _system_resample_statistics(method, function, x, y, labels, indices)
    low, high = _percentile_interval(list(samples), confidence)
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
