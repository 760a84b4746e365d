"""Agreement between human raters. Plain Python.

krippendorff_alpha_interval(ratings) -> float
    ratings: iterable of (rater, item, value); missing cells allowed. Krippendorff's alpha with
    the interval difference function (the `krippendorff` package). Use it per THumBS field:
thumbs_alpha(rows, fields=THUMBS_FIELDS) -> {field: alpha}
    rows: iterable of (rater, item, {field: value}); None/NaN values are missing.
vote_agreement(votes_per_pair) -> VoteAgreement(fleiss_kappa, percent_agreement, unanimous_percent, ...)
    votes_per_pair: per judged pair, the raters' votes (+1 a better, -1 b better, 0 no preference).
    Fleiss' kappa via statsmodels; it assumes the same number of raters per item, so only items
    with the most common number of votes are used (items_used says how many). percent_agreement
    is the mean share of agreeing rater pairs per item (Fleiss' observed agreement P-bar, in %);
    unanimous_percent the share of items where every rater gave the same vote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

THUMBS_FIELDS = ("precision", "recall", "fluency", "conciseness", "irrelevance", "overall")
VOTE_CATEGORIES = (-1, 0, 1)


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
class VoteAgreement:
    fleiss_kappa: float
    percent_agreement: float
    unanimous_percent: float
    items_used: int
    items_total: int
    raters_per_item: int

    def as_dict(self) -> dict:
        return asdict(self)


def vote_agreement(votes_per_pair: Iterable[Sequence[int]]) -> VoteAgreement:
    from statsmodels.stats.inter_rater import fleiss_kappa

    votes = [list(v) for v in votes_per_pair]
    total = len(votes)
    sizes = Counter(len(v) for v in votes if len(v) >= 2)
    if not sizes:
        return VoteAgreement(float("nan"), float("nan"), float("nan"), 0, total, 0)
    raters = max(sizes, key=lambda size: (sizes[size], size))
    used = [v for v in votes if len(v) == raters]
    table = np.array([[v.count(category) for category in VOTE_CATEGORIES] for v in used])
    pair_agreement = (table * (table - 1)).sum(axis=1) / (raters * (raters - 1))
    unanimous = (table.max(axis=1) == raters).mean()
    if len(set(VOTE_CATEGORIES) & {c for v in used for c in v}) < 2:
        kappa = float("nan")  # a single category overall: chance agreement is 1, kappa undefined
    else:
        kappa = float(fleiss_kappa(table, method="fleiss"))
    return VoteAgreement(
        fleiss_kappa=kappa,
        percent_agreement=float(100 * pair_agreement.mean()),
        unanimous_percent=float(100 * unanimous),
        items_used=len(used),
        items_total=total,
        raters_per_item=raters,
    )
