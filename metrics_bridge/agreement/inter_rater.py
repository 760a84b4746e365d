"""Agreement between human raters. Plain Python.

krippendorff_alpha_interval(ratings) -> float
    ratings: iterable of (rater, item, value); missing cells allowed. Krippendorff's alpha with
    the interval difference function (the `krippendorff` package). Use it per THumBS field:
thumbs_alpha(rows, fields=THUMBS_FIELDS) -> {field: alpha}
    rows: iterable of (rater, item, {field: value}); None/NaN values are missing.
icc_2k_of_ratings(ratings) -> IntraclassCorrelation(value, items, raters)
    ICC(2,k) (two-way random, absolute agreement, mean of k raters) over the items rated by the most
    common complete set of raters; icc_2k(matrix) on a complete items x raters matrix.
rater_bias(ratings) -> {rater: (mean difference from the other raters on the same items, items)}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

THUMBS_FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance", "overall")


def reliability_matrix(ratings: Iterable[tuple[Hashable, Hashable, float | None]]) -> np.ndarray:
    """raters x items matrix, NaN where a rater did not rate an item (first-seen order)."""
    raters: dict[Hashable, int] = {}
    items: dict[Hashable, int] = {}
    cells = []
    for rater, item, value in ratings:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        cells.append((raters.setdefault(rater, len(raters)), items.setdefault(item, len(items)), float(value)))
    matrix = np.full((len(raters), len(items)), np.nan)
    for row, column, value in cells:
        matrix[row, column] = value
    return matrix


def krippendorff_alpha_interval(ratings: Iterable[tuple[Hashable, Hashable, float | None]]) -> float:
    """Interval alpha; NaN when fewer than two raters or no item has two ratings."""
    import krippendorff

    matrix = reliability_matrix(ratings)
    pairable = np.sum(~np.isnan(matrix), axis=0) >= 2
    if matrix.shape[0] < 2 or not pairable.any():
        return float("nan")
    values = matrix[:, pairable]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return float("nan")  # every rating identical: alpha is undefined (0/0)
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement="interval"))


def thumbs_alpha(
    rows: Iterable[tuple[Hashable, Hashable, Mapping[str, float | None]]], fields: Sequence[str] = THUMBS_FIELDS
) -> dict[str, float]:
    rows = list(rows)
    return {
        field: krippendorff_alpha_interval((rater, item, values.get(field)) for rater, item, values in rows)
        for field in fields
    }


@dataclass(frozen=True)
class IntraclassCorrelation:
    """ICC(2,k) (Shrout & Fleiss: two-way random effects, absolute agreement, mean of k raters)."""

    value: float
    items: int
    raters: int

    def as_dict(self) -> dict:
        return asdict(self)


def icc_2k(matrix: np.ndarray) -> float:
    """ICC(2,k) of a complete items x raters matrix: (MSR - MSE) / (MSR + (MSC - MSE) / n)."""
    matrix = np.asarray(matrix, dtype=float)
    n, k = matrix.shape
    if n < 2 or k < 2 or np.isnan(matrix).any():
        return float("nan")
    grand = matrix.mean()
    ss_rows = k * ((matrix.mean(axis=1) - grand) ** 2).sum()
    ss_columns = n * ((matrix.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((matrix - grand) ** 2).sum() - ss_rows - ss_columns
    ms_rows, ms_columns = ss_rows / (n - 1), ss_columns / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    denominator = ms_rows + (ms_columns - ms_error) / n
    return float((ms_rows - ms_error) / denominator) if denominator else float("nan")


def icc_2k_of_ratings(ratings: Iterable[tuple[Hashable, Hashable, float | None]]) -> IntraclassCorrelation:
    """ICC(2,k) over the largest complete block: items rated by the most common set of (>= 2) raters.

    ICC(2,k) needs every rater to rate every item; in a campaign where each item gets k of many raters,
    the items sharing the most common rater set form that block (the others are left out).
    """
    by_item: dict[Hashable, dict[Hashable, float]] = {}
    for rater, item, value in ratings:
        if value is not None and not (isinstance(value, float) and np.isnan(value)):
            by_item.setdefault(item, {})[rater] = float(value)
    sets = Counter(frozenset(values) for values in by_item.values() if len(values) >= 2)
    if not sets:
        return IntraclassCorrelation(float("nan"), 0, 0)
    raters = max(sets, key=lambda rater_set: (sets[rater_set] * len(rater_set), len(rater_set)))
    order = sorted(raters, key=str)
    rows = [[values[r] for r in order] for values in by_item.values() if frozenset(values) == raters]
    return IntraclassCorrelation(icc_2k(np.array(rows)), len(rows), len(order))


def rater_bias(ratings: Iterable[tuple[Hashable, Hashable, float | None]]) -> dict[Hashable, tuple[float, int]]:
    """Per rater: mean of (their value - the mean of the other raters' values on the same item), and the number
    of items that had another rater. Positive: the rater scores higher than the others."""
    by_item: dict[Hashable, dict[Hashable, float]] = {}
    for rater, item, value in ratings:
        if value is not None and not (isinstance(value, float) and np.isnan(value)):
            by_item.setdefault(item, {})[rater] = float(value)
    differences: dict[Hashable, list[float]] = {}
    for values in by_item.values():
        if len(values) < 2:
            continue
        total = sum(values.values())
        for rater, value in values.items():
            differences.setdefault(rater, []).append(value - (total - value) / (len(values) - 1))
    return {rater: (float(np.mean(items)), len(items)) for rater, items in differences.items()}
