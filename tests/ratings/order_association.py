"""Measuring whether the order of a rater-visible list says anything: the figures the order tests assert on.

A list a rater reads is a sequence of rows; each row is tied (on the server) to things the rater must not
learn: a database id, a split, a gold flag, an author kind, a system. If the order follows any of them
(rows by id, splits in blocks, the human caption first), the rater learns it from the order alone. These
helpers put numbers on that, with scipy's Kendall tau as the independent reference:

- `tau`: Kendall's tau-b between row position and a value (|tau| near 1: the order follows the value);
- `adjacent_same`: the share of neighbouring rows with the same label, and what a random order gives
  (sum over labels of n_k (n_k - 1) / (n (n - 1)));
- `first_share`: the share of groups (items) whose first row has a property, with its chance level.

Figures are pooled over raters (means of taus, sums of counts), so one rater's chance order cannot pass or
fail a test on its own.
"""

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from scipy import stats

# What the order tests allow: no stronger association than this...
MAX_ABS_TAU = 0.3
# ...and clustering (neighbours alike, the human caption first) no more than chance plus this.
MAX_ABOVE_CHANCE = 0.15


def tau(values: Sequence[float]) -> float:
    """Kendall's tau-b between the position in the list and `values` (0 when undefined: constant values)."""
    if len(values) < 2 or len(set(values)) < 2:
        return 0.0
    statistic = stats.kendalltau(range(len(values)), list(values), variant="b").statistic
    return 0.0 if math.isnan(statistic) else float(statistic)


def adjacent_same(labels: Sequence[Hashable]) -> tuple[int, int, float]:
    """(neighbouring pairs with the same label, neighbouring pairs, expected share under a random order)."""
    n = len(labels)
    if n < 2:
        return 0, 0, 0.0
    same = sum(1 for first, second in zip(labels, labels[1:], strict=False) if first == second)
    counts = Counter(labels)
    chance = sum(count * (count - 1) for count in counts.values()) / (n * (n - 1))
    return same, n - 1, chance


@dataclass
class Association:
    """Pooled figures of one list over several raters."""

    name: str
    taus: dict[str, list[float]] = field(default_factory=dict)
    adjacency: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)
    firsts: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)  # (hits, groups, chance)
    rows: int = 0

    def add_tau(self, what: str, values: Sequence[float]) -> None:
        self.taus.setdefault(what, []).append(tau(values))

    def add_adjacency(self, what: str, labels: Sequence[Hashable]) -> None:
        self.adjacency.setdefault(what, []).append(adjacent_same(labels))

    def add_first(self, what: str, hits: int, groups: int, chance: float) -> None:
        self.firsts.setdefault(what, []).append((hits, groups, chance))

    def figures(self) -> dict[str, float]:
        figures = {f"tau(position, {what})": sum(values) / len(values) for what, values in self.taus.items()}
        for what, rows in self.adjacency.items():
            same, pairs = sum(row[0] for row in rows), sum(row[1] for row in rows)
            chance = sum(row[2] * row[1] for row in rows) / pairs if pairs else 0.0
            figures[f"adjacent same {what}"] = same / pairs if pairs else 0.0
            figures[f"adjacent same {what} (chance)"] = chance
        for what, rows in self.firsts.items():
            hits, groups = sum(row[0] for row in rows), sum(row[1] for row in rows)
            figures[f"{what} first"] = hits / groups if groups else 0.0
            figures[f"{what} first (chance)"] = sum(row[2] * row[1] for row in rows) / groups if groups else 0.0
        return figures

    def problems(self) -> list[str]:
        """Every figure beyond what the tests allow (empty: the order says nothing measurable)."""
        figures = self.figures()
        found = [
            f"{name}: {value:+.2f}"
            for name, value in figures.items()
            if name.startswith("tau(") and abs(value) >= MAX_ABS_TAU
        ]
        counts = {f"{what} first": sum(row[1] for row in rows) for what, rows in self.firsts.items()}
        for name, value in figures.items():
            if name.endswith("(chance)"):
                continue
            chance = figures.get(f"{name} (chance)")
            if chance is None:
                continue
            # A share holds a few gold items only (a rater of a gold gets no other item of its clip): over a
            # dozen items, 8 of 12 on the left is chance. The margin is three standard errors where that is wider.
            groups = counts.get(name, 0)
            noise = 3 * math.sqrt(chance * (1 - chance) / groups) if groups else 0.0
            if value > chance + max(MAX_ABOVE_CHANCE, noise):
                found.append(f"{name}: {value:.2f} against {chance:.2f} by chance ({groups} items)")
        return found

    def report(self) -> str:
        lines = [f"{self.name} ({self.rows} rows):"]
        lines += [f"  {name}: {value:+.3f}" for name, value in self.figures().items()]
        return "\n".join(lines)
