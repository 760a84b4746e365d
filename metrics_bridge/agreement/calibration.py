"""CALIBRATED: a metric learned from the study's own pairwise judgements, reported out of sample only.

For each judged pair the features are the differences score(a) - score(b) of the available
metrics (each side scored as the FENSE protocol scores it, so n-gram metrics average their
leave-one-out passes on MM) -- factor scores such as XACE_E/S/A/R are simply more metrics. A
regularised (L2) logistic regression on the standardised differences predicts whether people
preferred a. It has no intercept and the scaler does not centre: swapping a and b flips the
prediction exactly, and the model cannot learn "the first caption tends to win" (in HI/HM the
human caption is always a). The decision for a pair is its log-odds d(a, b) = -d(b, a).

Held-out agreement: folds are drawn over clips (StratifiedGroupKFold, 5 folds, shuffled with a
seed): every pair is predicted by a model fitted on the other folds' clips only, so no clip has
pairs on both sides of a split. Inside each training fold, C (and whether the votes enter, below) is
chosen by a grouped inner cross-validation (log loss) over the training clips only. The pairs are
then counted exactly as for any metric (protocols.md §1: t == 0 left out, d == 0 wrong).

A missing or not-applicable score (X-ACE factor absent from both graphs, stored as null) on
either side makes that feature's difference 0 for the pair: it pushes neither way.

Besides the metrics, `with_caption_features` adds four plain properties of each caption, differenced
the same way (CAPTION_FEATURES: word count, the fluency detector's error probability, the largest and
smallest Sentence-BERT cosine with the side's references).

The model's columns come in blocks built from those differences D (MODEL_BLOCKS): the margins D; the margins
times the cosine similarity of the two captions' sentence embeddings (a metric's margin can mean something else
when the captions say nearly the same thing than when they differ: so each feature's weight is w + v * sim(a, b));
and each feature's vote sign(D) (its verdict whatever its size: on one-word hallucinations one metric's verdict is
right almost every time while its margins are not comparable from pair to pair). Every block is antisymmetric, so
the no-intercept property holds. Margins (and the similarity block when the captions' similarities are known) are
always in; the votes are in when the grouped inner cross-validation on the training pairs prefers them (same
log-loss criterion as for C), so the choice never sees the held-out fold. With the similarity block the model is a
comparison of two captions, no longer a score of one caption.

This is the in-study model (a lab fitting on its own judgements). A model fitted on other studies and evaluated on
one it never saw is `calibration_transfer`'s, chosen for carrying between studies.
Plain Python (NumPy + scikit-learn), no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import brace
from .protocol import AgreementReport, JudgedPair, PairDecision, report_from_decisions

METRIC_NAME = "CALIBRATED"
#: the in-study model (a lab fitting on its own judgements); the model trained elsewhere is calibration_transfer's
VERSION = "in-study-3: training-RMS scaling, margins + similarity block, votes when the inner CV prefers them"
FOLDS = 5
INNER_FOLDS = 5
REGULARISATION_GRID = tuple(float(value) for value in np.logspace(-3, 2, 11))
DEFAULT_SEED = 0
#: exact Newton steps: a few features, so this is fast and converges tightly (lbfgs was 3-7x slower here)
SOLVER = "newton-cholesky"

#: The blocks of model columns made from the feature differences D (see the module docstring).
MARGIN, MARGIN_BY_SIMILARITY, VOTE = "margin", "margin × similarity", "vote"
MODEL_BLOCKS = (MARGIN, MARGIN_BY_SIMILARITY, VOTE)
#: a difference this small is float rounding between equal scores, not a verdict: its vote is 0
VOTE_TIE = 1e-9


@dataclass(frozen=True)
class PairRow:
    """One judged pair with its metric-score differences (NaN where a score is missing)."""

    pair: JudgedPair
    clip_key: str | None
    differences: tuple[float, ...]
    #: cosine of the two captions' sentence embeddings (symmetric in a and b); None when not computed
    similarity: float | None = None

    @property
    def truth(self) -> int:
        return self.pair.truth


@dataclass
class CalibratedModel:
    """Coefficients on standardised differences; `scales` are the training differences' root mean squares
    (StandardScaler(with_mean=False): no centring, which would act as an intercept)."""

    feature_names: tuple[str, ...]
    scales: np.ndarray
    coefficients: np.ndarray
    regularisation: float
    training_pairs: int
    blocks: tuple[str, ...] = (MARGIN,)

    @property
    def column_names(self) -> tuple[str, ...]:
        return column_names(self.feature_names, self.blocks)

    def decisions(self, rows: Sequence[PairRow]) -> np.ndarray:
        """d(a, b) (the log-odds that people prefer a) for each pair."""
        if MARGIN_BY_SIMILARITY in self.blocks:
            unknown = next((row for row in rows if not _known(row.similarity)), None)
            if unknown is not None:
                raise ValueError(
                    f"CALIBRATED: this model weighs margins by the captions' similarity, and pair "
                    f"{unknown.pair.pair_id} has none (its caption features were not computed)"
                )
        return model_matrix(rows, self.blocks) / self.scales @ self.coefficients

    def coefficient_table(self) -> dict[str, dict[str, float]]:
        """Per feature, per block of MODEL_BLOCKS: its coefficient (0.0 for a block this model does not use)."""
        by_column = dict(zip(self.column_names, self.coefficients, strict=True))
        return {
            name: {block: float(by_column.get(column_name(name, block), 0.0)) for block in MODEL_BLOCKS}
            for name in self.feature_names
        }

    def as_dict(self) -> dict:
        return {
            "features": list(self.feature_names),
            "blocks": list(self.blocks),
            "coefficients": {
                name: float(value) for name, value in zip(self.column_names, self.coefficients, strict=True)
            },
            "coefficients_by_block": self.coefficient_table(),
            "scales": {name: float(value) for name, value in zip(self.column_names, self.scales, strict=True)},
            "regularisation_C": self.regularisation,
            "training_pairs": self.training_pairs,
        }


@dataclass
class CrossValidation:
    """Held-out decisions for every pair, the fold of every clip and the model of every fold."""

    report: AgreementReport
    fold_of_clip: dict[str | None, int]
    fold_models: list[CalibratedModel]
    seed: int
    folds: int
    notes: list[str] = field(default_factory=list)

    def coefficient_summary(self) -> dict[str, dict[str, float]]:
        """Per model column (feature × block): mean, min and max of the standardised coefficient over the folds; a
        fold whose model left the column's block out counts as 0 for it."""
        if not self.fold_models:
            return {}
        tables = [model.coefficient_table() for model in self.fold_models]
        used_blocks = [block for block in MODEL_BLOCKS if any(block in model.blocks for model in self.fold_models)]
        summary = {}
        for name in self.fold_models[0].feature_names:
            for block in used_blocks:
                values = np.array([table[name][block] for table in tables])
                summary[column_name(name, block)] = {
                    "mean": float(values.mean()),
                    "min": float(values.min()),
                    "max": float(values.max()),
                }
        return summary

    def blocks_per_fold(self) -> list[list[str]]:
        return [list(model.blocks) for model in self.fold_models]


# --- features ---------------------------------------------------------------------------------


def pair_rows(reports: Mapping[str, AgreementReport]) -> tuple[tuple[str, ...], list[PairRow]]:
    """Feature names and one row per judged pair from per-metric agreement reports of the same clips.

    Reports come from `protocol.agreement_report` (their decisions hold each side's score); pairs
    are matched by pair_id, in the order of the first report.
    """
    names = tuple(reports)
    if not names:
        raise ValueError("CALIBRATED needs at least one other metric's scores")
    by_metric = [{decision.pair.pair_id: decision for decision in reports[name].decisions} for name in names]
    first = reports[names[0]].decisions
    rows = []
    for decision in first:
        differences = []
        for lookup in by_metric:
            other = lookup.get(decision.pair.pair_id)
            differences.append(_difference(other) if other is not None else math.nan)
        rows.append(PairRow(pair=decision.pair, clip_key=decision.clip_key, differences=tuple(differences)))
    return names, rows


def _difference(decision: PairDecision) -> float:
    if decision.score_a is None or decision.score_b is None:
        return math.nan
    return float(decision.score_a) - float(decision.score_b)


#: What CALIBRATED adds to the metrics' score differences: plain properties of each caption, differenced like
#: a metric (caption a's minus caption b's). Measured on Clotho-Eval they moved the held-out total of the
#: margins-only model from 76.6 to 77.7 (docs/metrics.md).
CAPTION_FEATURES = ("caption_words", "fluency_error", "sbert_max_reference", "sbert_min_reference")


def side_references(pair: JudgedPair, clip_references: Sequence[str], protocol_name: str) -> tuple[list, list]:
    """The references each side of a pair is scored against under the dataset's protocol (FENSE: HC a without a,
    b without b; HI/HM both without a; MM all of them. BRACE: the pair's references); never empty."""
    from . import protocol

    references = list(clip_references)
    if protocol_name == brace.PROTOCOL:
        own = brace.pair_references(references, pair) or references
        return own, own
    if protocol.split_of(pair.split) == "MM":
        return references, references
    without_a = protocol.references_without(references, pair.caption_a) or references
    without_b = protocol.references_without(references, pair.caption_b) or references
    return without_a, (without_b if protocol.split_of(pair.split) == "HC" else without_a)


def caption_features_available(resources=None) -> bool:
    """The sentence model and the fluency detector `resources` configure (None: the shipped one) are there."""
    from metrics_bridge.scoring import fluency, sbert

    return sbert.model_unavailable_reason() is None and fluency.unavailable_reason(resources) is None


def with_caption_features(
    names: Sequence[str],
    rows: Sequence[PairRow],
    clip_references: Mapping,
    *,
    protocol_name: str = "fense",
    resources=None,
) -> tuple[tuple[str, ...], list[PairRow]]:
    """`rows` with the CAPTION_FEATURES differences appended (word count, the error probability of the fluency
    detector `resources` configure -- the one FENSE uses; None: the shipped one --, the largest and smallest
    Sentence-BERT cosine with the side's references) and the two captions' Sentence-BERT cosine as their
    `similarity`."""
    from metrics_bridge.scoring import sbert

    sides = [side_references(row.pair, clip_references.get(row.clip_key, ()), protocol_name) for row in rows]
    captions = [caption for row in rows for caption in (row.pair.caption_a, row.pair.caption_b)]
    texts = list(dict.fromkeys([*captions, *(text for a, b in sides for text in (*a, *b))]))
    vectors = dict(zip(texts, sbert.encode_texts(texts), strict=True))
    errors = _error_probabilities(captions, resources)

    def side(caption: str, references: Sequence[str]) -> np.ndarray:
        similarities = [float(vectors[caption] @ vectors[reference]) for reference in references]
        return np.array([len(caption.split()), errors[caption], max(similarities), min(similarities)])

    extended = [
        PairRow(
            pair=row.pair,
            clip_key=row.clip_key,
            differences=(*row.differences, *(side(row.pair.caption_a, a) - side(row.pair.caption_b, b))),
            similarity=float(vectors[row.pair.caption_a] @ vectors[row.pair.caption_b]),
        )
        for row, (a, b) in zip(rows, sides, strict=True)
    ]
    return (*names, *CAPTION_FEATURES), extended


_error_cache: dict[tuple[str, str], float] = {}  # (detector, caption) -> error probability, per process
ERROR_CACHE_SIZE = 200_000


def _error_probabilities(captions: Sequence[str], resources=None) -> dict[str, float]:
    """The configured fluency detector's error probability of each distinct caption, each run once per process
    and detector (the benchmark table fits CALIBRATED on every dataset against every other one)."""
    from metrics_bridge.scoring import fluency

    detector = fluency.detector_name(resources)
    missing = [text for text in dict.fromkeys(captions) if (detector, text) not in _error_cache]
    if missing:
        if len(_error_cache) + len(missing) > ERROR_CACHE_SIZE:
            _error_cache.clear()
        probabilities = (float(p) for p in fluency.error_probabilities(missing, resources))
        _error_cache.update(zip(((detector, text) for text in missing), probabilities, strict=True))
    return {text: _error_cache[(detector, text)] for text in captions}


def feature_matrix(rows: Sequence[PairRow]) -> np.ndarray:
    """Differences as a matrix; a missing score on either side gives 0 (no push either way)."""
    matrix = np.array([row.differences for row in rows], dtype=float).reshape(len(rows), -1)
    return np.nan_to_num(matrix, nan=0.0, posinf=0.0, neginf=0.0)


def model_matrix(rows: Sequence[PairRow], blocks: Sequence[str]) -> np.ndarray:
    """The model's columns: for each block in order, one column per feature (see MODEL_BLOCKS)."""
    differences = feature_matrix(rows)
    parts = []
    for block in blocks:
        if block == MARGIN:
            parts.append(differences)
        elif block == MARGIN_BY_SIMILARITY:
            similarity = np.array([row.similarity if _known(row.similarity) else 0.0 for row in rows], dtype=float)
            parts.append(differences * similarity[:, None])
        elif block == VOTE:
            parts.append(np.where(np.abs(differences) > VOTE_TIE, np.sign(differences), 0.0))
        else:
            raise ValueError(f"CALIBRATED: unknown model block {block!r}")
    return np.hstack(parts) if parts else np.zeros((len(rows), 0))


def _known(similarity: float | None) -> bool:
    return similarity is not None and math.isfinite(similarity)


def column_name(feature: str, block: str) -> str:
    """How a model column is named in reports: the feature for its margin, else "<feature> × similarity" or
    "<feature> vote"."""
    if block == MARGIN:
        return feature
    if block == MARGIN_BY_SIMILARITY:
        return f"{feature} × similarity"
    return f"{feature} vote"


def column_names(feature_names: Sequence[str], blocks: Sequence[str]) -> tuple[str, ...]:
    return tuple(column_name(name, block) for block in blocks for name in feature_names)


def candidate_blocks(rows: Sequence[PairRow]) -> list[tuple[str, ...]]:
    """The block sets the inner search chooses from: margins, with the similarity block when every pair has its
    captions' similarity, without and with the votes."""
    always = (MARGIN, MARGIN_BY_SIMILARITY) if rows and all(_known(row.similarity) for row in rows) else (MARGIN,)
    return [always, (*always, VOTE)]


# --- fitting ----------------------------------------------------------------------------------


def _counted(rows: Sequence[PairRow]) -> list[int]:
    return [index for index, row in enumerate(rows) if row.truth != 0]


def _group_codes(rows: Sequence[PairRow]) -> list[int]:
    """Clip of each row as an integer in order of first appearance, so folds depend on the clips' order
    (the dataset's), not on how their keys spell (database ids vs file names)."""
    codes: dict[str, int] = {}
    return [codes.setdefault(str(row.clip_key), len(codes)) for row in rows]


def _scales(matrix: np.ndarray) -> np.ndarray:
    """Root mean square of each difference (StandardScaler(with_mean=False)); constant-zero columns get 1."""
    scales = np.sqrt(np.mean(matrix**2, axis=0))
    return np.where(scales > 0, scales, 1.0)


def _logistic(regularisation: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=regularisation, fit_intercept=False, solver=SOLVER, max_iter=1000)


def _inner_choice(
    rows: Sequence[PairRow], labels: np.ndarray, groups: Sequence, seed: int
) -> tuple[tuple[str, ...], float]:
    """(model blocks, C) with the best grouped cross-validated log loss on the training pairs: for each candidate
    block set (`candidate_blocks`), LogisticRegressionCV over the C grid with the same inner folds grouped by clip.
    The inner folds share the training pairs' scaling; the held-out fold never enters this choice."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import GroupKFold

    candidates = candidate_blocks(rows)
    folds = min(INNER_FOLDS, len(set(groups)))
    if folds < 2 or len(set(labels)) < 2:
        return candidates[0], 1.0
    splits = [
        (train, test)
        for train, test in GroupKFold(n_splits=folds, shuffle=True, random_state=seed).split(labels, labels, groups)
        if len(set(labels[train])) == 2
    ]
    if not splits:
        return candidates[0], 1.0
    best: tuple[float, tuple[str, ...], float] | None = None
    for blocks in candidates:
        matrix = model_matrix(rows, blocks)
        search = LogisticRegressionCV(
            Cs=list(REGULARISATION_GRID),
            l1_ratios=(0.0,),
            cv=splits,
            scoring="neg_log_loss",
            fit_intercept=False,
            solver=SOLVER,
            max_iter=1000,
            refit=False,
            use_legacy_attributes=False,
        )
        search.fit(matrix / _scales(matrix), labels)
        mean_scores = np.asarray(search.scores_, dtype=float).reshape(len(splits), -1).mean(axis=0)
        index = int(np.argmax(mean_scores))
        if best is None or mean_scores[index] > best[0]:
            best = (float(mean_scores[index]), blocks, float(search.Cs_[index]))
    return best[1], best[2]


def fit_calibrated_model(
    feature_names: Sequence[str], rows: Sequence[PairRow], *, seed: int = DEFAULT_SEED
) -> CalibratedModel:
    """Fit on every pair with a human preference (t != 0); blocks and C chosen by grouped inner cross-validation."""
    counted = _counted(rows)
    if not counted:
        raise ValueError("CALIBRATED: no judged pair with a human preference to learn from")
    training = [rows[i] for i in counted]
    labels = np.array([1 if row.truth > 0 else 0 for row in training])
    if len(set(labels)) < 2:
        raise ValueError("CALIBRATED: every training pair prefers the same side; nothing to learn")
    codes = _group_codes(rows)
    groups = [codes[i] for i in counted]
    blocks, regularisation = _inner_choice(training, labels, groups, seed)
    matrix = model_matrix(training, blocks)
    scales = _scales(matrix)
    model = _logistic(regularisation).fit(matrix / scales, labels)
    return CalibratedModel(
        feature_names=tuple(feature_names),
        scales=scales,
        coefficients=model.coef_[0].copy(),
        regularisation=regularisation,
        training_pairs=len(counted),
        blocks=blocks,
    )


def clip_folds(rows: Sequence[PairRow], *, folds: int = FOLDS, seed: int = DEFAULT_SEED) -> dict[str | None, int]:
    """Fold of every clip: StratifiedGroupKFold over the counted pairs (grouped by clip, stratified by the
    preferred side); clips whose pairs all have t == 0 go round-robin (they are never counted)."""
    from sklearn.model_selection import StratifiedGroupKFold

    counted = _counted(rows)
    codes = _group_codes(rows)
    groups = [codes[i] for i in counted]
    distinct = set(groups)
    if len(distinct) < folds:
        raise ValueError(
            f"CALIBRATED: {len(distinct)} clips with judged pairs; {folds}-fold cross-validation needs at least {folds}"
        )
    labels = [1 if rows[i].truth > 0 else 0 for i in counted]
    splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    fold_of: dict[str | None, int] = {}
    for fold, (_train, test) in enumerate(splitter.split(np.zeros(len(counted)), labels, groups)):
        for index in test:
            fold_of[rows[counted[index]].clip_key] = fold
    leftover = [key for key in dict.fromkeys(row.clip_key for row in rows) if key not in fold_of]
    for position, key in enumerate(leftover):
        fold_of[key] = position % folds
    return fold_of


def cross_validate(
    feature_names: Sequence[str],
    rows: Sequence[PairRow],
    *,
    folds: int = FOLDS,
    seed: int = DEFAULT_SEED,
    fold_of_clip: dict[str | None, int] | None = None,
    protocol_name: str = "fense",
) -> CrossValidation:
    """Held-out CALIBRATED decisions for every pair (grouped by clip) and the agreement they give.

    `fold_of_clip` fixes the folds (default: `clip_folds`, which stratifies by the preferred side).
    """
    fold_of = fold_of_clip if fold_of_clip is not None else clip_folds(rows, folds=folds, seed=seed)
    decisions = np.full(len(rows), np.nan)
    models = []
    for fold in range(folds):
        training = [row for row in rows if fold_of[row.clip_key] != fold]
        testing = [index for index, row in enumerate(rows) if fold_of[row.clip_key] == fold]
        model = fit_calibrated_model(feature_names, training, seed=seed)
        models.append(model)
        if testing:
            decisions[testing] = model.decisions([rows[index] for index in testing])
    return CrossValidation(
        report=agreement_from_decisions(rows, decisions, protocol_name=protocol_name),
        fold_of_clip=fold_of,
        fold_models=models,
        seed=seed,
        folds=folds,
    )


def agreement_from_decisions(
    rows: Sequence[PairRow], decisions: np.ndarray, *, protocol_name: str = "fense"
) -> AgreementReport:
    """The report of decisions d (score(a) - score(b)) under the protocol's counting rules: FENSE's (d == 0 is
    wrong) or BRACE's (d <= 0 predicts b; accuracy and F1 with two decimals)."""
    if protocol_name == brace.PROTOCOL:
        brace_decisions = [
            brace.decision(row.pair, row.clip_key, float(decision) / 2, -float(decision) / 2)
            for row, decision in zip(rows, decisions, strict=True)
        ]
        return brace.report_from_brace_decisions(brace_decisions, metric=METRIC_NAME)
    pair_decisions = [
        PairDecision(
            pair=row.pair,
            clip_key=row.clip_key,
            score_a=float(decision) / 2,
            score_b=-float(decision) / 2,
            difference=float(decision),
            correct=None if row.truth == 0 else bool(decision * row.truth > 0),
        )
        for row, decision in zip(rows, decisions, strict=True)
    ]
    return report_from_decisions(pair_decisions, metric=METRIC_NAME)
