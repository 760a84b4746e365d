"""CALIBRATED trained elsewhere: a pair model meant to carry from the studies it was fitted on to a study it never saw.

The in-study model (`calibration.fit_calibrated_model`, cross-validated on a study's own clips) learns whatever
separates that study's pairs, and some of it belongs to the study, not to caption quality:
- its columns are scaled by the training study's root mean square differences, so a metric whose differences run
  wider on another study (other systems, other reference style) weighs more there than it did when it was fitted;
- collinear metrics (BLEU_1..4, the X-ACE copies) take weights of both signs that cancel on the training study's
  correlations and stop cancelling on another's;
- C is chosen for in-study log loss on the training study.

This model changes those, each a rule that uses no vote of the evaluated study:
- every dataset is scaled by its own root mean square differences (label-free: computed from scores only, on
  every pair, judged or tied), for the training datasets and the evaluated one alike;
- a feature whose direction is known takes a weight of that sign only (a higher metric score or a closer match
  to the references is better: weight >= 0; the fluency detector's error probability: weight <= 0); the
  margin × similarity block stays free (a correction of each weight between alike captions); the
  weights are fitted by L-BFGS-B with those bounds on the L2-penalised log loss (sklearn's objective);
- C and the blocks (margins + margin × similarity) are fixed constants chosen by transfer between clip-disjoint
  halves of two studies (docs/metrics.md, "CALIBRATED trained elsewhere"), not by in-study fit.

No intercept and antisymmetric columns, as in the in-study model: swapping a and b flips the decision.
Plain Python (NumPy + SciPy), no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .calibration import MARGIN, MARGIN_BY_SIMILARITY, MODEL_BLOCKS, PairRow, column_name, column_names, model_matrix

#: what the version strings of reports say about the transfer model
VERSION = "transfer-2: per-dataset RMS scaling, sign-constrained margins + similarity block, C fixed at 0.01"
#: chosen by transfer between the dev halves of Clotho-Eval and AudioCaps-Eval (docs/metrics.md), with a fluency
#: detector that saw neither study, so its error probability and FENSE are features on both sides
TRANSFER_REGULARISATION = 0.01
#: margins (sign-constrained) and margins times the two captions' similarity (free sign: a correction of each
#: weight between alike captions); without known similarities the model falls back to the margins
TRANSFER_BLOCKS: tuple[str, ...] = (MARGIN, MARGIN_BY_SIMILARITY)

#: features whose better side has a lower value; every other metric and reference match is better when higher
LOWER_IS_BETTER = frozenset({"fluency_error"})
#: features with no known direction (a longer caption is not better or worse in itself)
UNSIGNED = frozenset({"caption_words"})


def feature_direction(name: str) -> int:
    """+1 when a higher value is better (weight >= 0), -1 when lower is better (weight <= 0), 0 when unknown."""
    if name in UNSIGNED:
        return 0
    return -1 if name in LOWER_IS_BETTER else 1


def dataset_scales(matrix: np.ndarray) -> np.ndarray:
    """Root mean square of each column over one dataset's pairs (no labels; constant-zero columns get 1)."""
    scales = np.sqrt(np.mean(matrix**2, axis=0)) if len(matrix) else np.ones(matrix.shape[1])
    return np.where(scales > 0, scales, 1.0)


def scaled_matrix(rows: Sequence[PairRow], blocks: Sequence[str]) -> np.ndarray:
    """The model's columns for one dataset, each divided by that dataset's own root mean square."""
    matrix = model_matrix(rows, blocks)
    return matrix / dataset_scales(matrix)


Bound = tuple[float | None, float | None]


def _bounds(feature_names: Sequence[str], blocks: Sequence[str], signed: bool) -> list[Bound]:
    bounds = []
    for block in blocks:
        for name in feature_names:
            direction = feature_direction(name) if signed and block == MARGIN else 0
            bounds.append((0.0, None) if direction > 0 else (None, 0.0) if direction < 0 else (None, None))
    return bounds


def fit_logistic(
    matrix: np.ndarray, labels: np.ndarray, *, regularisation: float, bounds=None, weights=None
) -> np.ndarray:
    """Coefficients minimising 0.5 * |w|^2 + C * sum(weight * log loss) without intercept (sklearn's
    LogisticRegression objective), within `bounds` (None: unbounded)."""
    from scipy.optimize import minimize

    signs = np.where(np.asarray(labels) > 0, 1.0, -1.0)
    sample_weights = np.ones(len(signs)) if weights is None else np.asarray(weights, dtype=float)

    def objective(coefficients: np.ndarray) -> tuple[float, np.ndarray]:
        margins = signs * (matrix @ coefficients)
        loss = np.logaddexp(0.0, -margins)
        gradient_factor = -signs * sample_weights / (1.0 + np.exp(margins))
        value = 0.5 * coefficients @ coefficients + regularisation * float(sample_weights @ loss)
        return value, coefficients + regularisation * (matrix.T @ gradient_factor)

    start = np.zeros(matrix.shape[1])
    result = minimize(
        objective, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 5000, "gtol": 1e-10}
    )
    return result.x


def default_blocks(*datasets: Sequence[PairRow]) -> tuple[str, ...]:
    """TRANSFER_BLOCKS when every pair of every dataset has its captions' similarity, else the margins alone."""
    known = all(row.similarity is not None and np.isfinite(row.similarity) for rows in datasets for row in rows)
    return TRANSFER_BLOCKS if known else (MARGIN,)


@dataclass
class TransferModel:
    """Coefficients on per-dataset scaled columns: apply it to a whole dataset (its own scaling)."""

    feature_names: tuple[str, ...]
    coefficients: np.ndarray
    regularisation: float
    blocks: tuple[str, ...]
    training_pairs: int
    signed: bool = True

    @property
    def column_names(self) -> tuple[str, ...]:
        return column_names(self.feature_names, self.blocks)

    def decisions(self, rows: Sequence[PairRow]) -> np.ndarray:
        """d(a, b) for every pair of one dataset, scaled by that dataset's own root mean squares."""
        if MARGIN_BY_SIMILARITY in self.blocks and default_blocks(rows) != TRANSFER_BLOCKS:
            raise ValueError(
                "CALIBRATED: this model weighs margins by the captions' similarity, and some pairs have none "
                "(their caption features were not computed)"
            )
        return scaled_matrix(rows, self.blocks) @ self.coefficients

    def as_dict(self) -> dict:
        by_column = dict(zip(self.column_names, self.coefficients, strict=True))
        return {
            "version": VERSION,
            "features": list(self.feature_names),
            "blocks": list(self.blocks),
            "coefficients": {
                name: float(value) for name, value in zip(self.column_names, self.coefficients, strict=True)
            },
            "coefficients_by_block": {
                name: {block: float(by_column.get(column_name(name, block), 0.0)) for block in MODEL_BLOCKS}
                for name in self.feature_names
            },
            "scaling": "each dataset by its own root mean square differences (no votes)",
            "sign_constrained": self.signed,
            "regularisation_C": self.regularisation,
            "training_pairs": self.training_pairs,
        }


def fit_transfer_model(
    feature_names: Sequence[str],
    datasets: Sequence[Sequence[PairRow]],
    *,
    regularisation: float = TRANSFER_REGULARISATION,
    blocks: Sequence[str] | None = None,
    signed: bool = True,
) -> TransferModel:
    """Fit on every pair with a human preference of the training `datasets` (each a list of rows of one dataset,
    scaled by its own root mean squares over all its pairs) and return the model. `blocks` default:
    TRANSFER_BLOCKS, or the margins alone when a training pair's captions have no known similarity."""
    blocks = tuple(blocks) if blocks is not None else default_blocks(*datasets)
    parts, labels = [], []
    for rows in datasets:
        if not rows:
            continue
        matrix = scaled_matrix(rows, blocks)
        counted = [index for index, row in enumerate(rows) if row.truth != 0]
        parts.append(matrix[counted])
        labels += [1 if rows[index].truth > 0 else 0 for index in counted]
    if not labels:
        raise ValueError("CALIBRATED: no judged pair with a human preference to learn from")
    if len(set(labels)) < 2:
        raise ValueError("CALIBRATED: every training pair prefers the same side; nothing to learn")
    coefficients = fit_logistic(
        np.vstack(parts),
        np.array(labels),
        regularisation=regularisation,
        bounds=_bounds(feature_names, blocks, signed),
    )
    return TransferModel(
        feature_names=tuple(feature_names),
        coefficients=coefficients,
        regularisation=regularisation,
        blocks=blocks,
        training_pairs=len(labels),
        signed=signed,
    )
