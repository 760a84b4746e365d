"""CALIBRATED (plain Python): grouped cross-validation is out of sample by construction, the decision is antisymmetric,
the model's blocks and C are chosen on the training pairs only."""

import math
import random
from dataclasses import replace

import numpy as np
import pytest

from metrics_bridge.agreement import calibration
from metrics_bridge.agreement.protocol import JudgedPair

SPLITS = ("HC", "HI", "HM", "MM", "MM", "MM")


def synthetic_rows(*, clips: int = 40, seed: int = 1, informative_weight: float = 2.0) -> list[calibration.PairRow]:
    """Pairs whose preference follows feature 0 (plus noise); feature 1 is noise; feature 2 is missing for some."""
    rng = random.Random(seed)
    rows = []
    for clip in range(clips):
        for index, split in enumerate(SPLITS):
            informative = rng.gauss(0, 1)
            noise = rng.gauss(0, 1)
            latent = informative_weight * informative + rng.gauss(0, 1)
            votes = tuple(1 if latent + rng.gauss(0, 0.5) > 0 else -1 for _ in range(4))
            partly_missing = math.nan if index == 0 else 0.1 * informative
            pair = JudgedPair(
                split=split,
                caption_a=f"a{clip}-{index}",
                caption_b=f"b{clip}-{index}",
                votes=votes,
                pair_id=f"{clip}:{index}",
            )
            rows.append(
                calibration.PairRow(pair=pair, clip_key=f"clip{clip}", differences=(informative, noise, partly_missing))
            )
    return rows


NAMES = ("GOOD", "NOISE", "SPARSE")


def test_no_clip_has_pairs_in_both_training_and_test_folds():
    rows = synthetic_rows(clips=30)
    fold_of = calibration.clip_folds(rows, folds=5, seed=0)
    assert set(fold_of.values()) == {0, 1, 2, 3, 4}
    assert set(fold_of) == {row.clip_key for row in rows}
    for fold in range(5):
        training_clips = {row.clip_key for row in rows if fold_of[row.clip_key] != fold}
        test_clips = {row.clip_key for row in rows if fold_of[row.clip_key] == fold}
        assert test_clips and not training_clips & test_clips


def test_every_pair_is_predicted_by_a_model_that_never_saw_its_clip():
    # With the folds held fixed (they are stratified by the labels), flipping the human judgements
    # of one clip cannot change that clip's held-out predictions...
    rows = synthetic_rows(clips=20)
    baseline = calibration.cross_validate(NAMES, rows, seed=0)
    target = "clip7"
    flipped = [
        calibration.PairRow(
            pair=JudgedPair(
                row.pair.split,
                row.pair.caption_a,
                row.pair.caption_b,
                tuple(-v for v in row.pair.votes),
                pair_id=row.pair.pair_id,
            ),
            clip_key=row.clip_key,
            differences=row.differences,
        )
        if row.clip_key == target
        else row
        for row in rows
    ]
    changed = calibration.cross_validate(NAMES, flipped, seed=0, fold_of_clip=baseline.fold_of_clip)
    before = {d.pair.pair_id: d.difference for d in baseline.report.decisions}
    after = {d.pair.pair_id: d.difference for d in changed.report.decisions}
    for row in rows:
        if row.clip_key == target:
            assert after[row.pair.pair_id] == pytest.approx(before[row.pair.pair_id], abs=1e-12)
    # ... while the other folds' models did see it (so the check above is not vacuous).
    other = [
        pid
        for pid, row in ((r.pair.pair_id, r) for r in rows)
        if baseline.fold_of_clip[row.clip_key] != baseline.fold_of_clip[target]
    ]
    assert any(abs(after[pid] - before[pid]) > 1e-9 for pid in other)


def test_held_out_decisions_equal_refitting_each_fold_by_hand():
    rows = synthetic_rows(clips=15)
    validation = calibration.cross_validate(NAMES, rows, seed=3)
    decisions = {d.pair.pair_id: d.difference for d in validation.report.decisions}
    for fold in range(5):
        training = [row for row in rows if validation.fold_of_clip[row.clip_key] != fold]
        testing = [row for row in rows if validation.fold_of_clip[row.clip_key] == fold]
        model = calibration.fit_calibrated_model(NAMES, training, seed=3)
        np.testing.assert_allclose(
            model.decisions(testing), [decisions[row.pair.pair_id] for row in testing], atol=1e-12
        )


def test_the_model_leans_on_the_informative_metric_and_beats_it_held_out_only_when_it_should():
    rows = synthetic_rows(clips=40)
    validation = calibration.cross_validate(NAMES, rows, seed=0)
    model = calibration.fit_calibrated_model(NAMES, rows)
    table = model.coefficient_table()
    good, noise = table["GOOD"][calibration.MARGIN], table["NOISE"][calibration.MARGIN]
    assert good > 0.5 and abs(noise) < good / 4
    counted = [row for row in rows if row.truth != 0]
    single = 100 * np.mean([row.differences[0] * row.truth > 0 for row in counted])
    assert validation.report.total.accuracy == pytest.approx(single, abs=3.0)  # one useful feature: no better than it
    assert validation.report.total.counted == len(counted)


@pytest.mark.parametrize("blocks", [(calibration.MARGIN,), calibration.MODEL_BLOCKS])
def test_swapping_the_captions_flips_the_decision_and_missing_scores_push_neither_way(blocks):
    rows = [replace(row, similarity=0.1 + 0.8 * (k % 5) / 4) for k, row in enumerate(synthetic_rows(clips=20))]
    training = [row for row in rows if row.truth != 0]
    matrix = calibration.model_matrix(training, blocks)
    coefficients = np.random.default_rng(0).normal(size=matrix.shape[1])
    model = calibration.CalibratedModel(NAMES, calibration._scales(matrix), coefficients, 1.0, len(training), blocks)
    # the similarity is the captions' (symmetric): only the differences change sign
    swapped = [replace(row, differences=tuple(-d for d in row.differences)) for row in rows]
    np.testing.assert_allclose(model.decisions(swapped), -model.decisions(rows))
    missing = replace(rows[0], differences=(math.nan, math.nan, math.nan))
    assert model.decisions([missing])[0] == 0.0


def gated_rows(*, clips: int = 60, seed: int = 2) -> list[calibration.PairRow]:
    """Pairs where GOOD's margin means the opposite when the two captions are alike (similarity > 0.5)."""
    rng = random.Random(seed)
    rows = []
    for clip in range(clips):
        for index, split in enumerate(SPLITS):
            similarity = rng.random()
            informative = rng.gauss(0, 1)
            latent = (2.0 if similarity < 0.5 else -2.0) * informative + rng.gauss(0, 0.5)
            pair = JudgedPair(split, f"a{clip}-{index}", f"b{clip}-{index}", (1 if latent > 0 else -1,), pair_id=index)
            rows.append(calibration.PairRow(pair, f"clip{clip}", (informative, rng.gauss(0, 1), 0.0), similarity))
    return rows


def test_the_similarity_block_lets_a_margin_count_differently_for_alike_captions():
    rows = gated_rows()
    with_similarity = calibration.cross_validate(NAMES, rows, seed=0)
    without = calibration.cross_validate(NAMES, [replace(row, similarity=None) for row in rows], seed=0)
    assert all(calibration.MARGIN_BY_SIMILARITY in blocks for blocks in with_similarity.blocks_per_fold())
    assert all(calibration.MARGIN_BY_SIMILARITY not in blocks for blocks in without.blocks_per_fold())
    # a margin whose meaning flips at similarity 0.5 is learnt as w + v * similarity with v < 0 < w
    table = calibration.fit_calibrated_model(NAMES, rows).coefficient_table()["GOOD"]
    assert table[calibration.MARGIN] > 0 > table[calibration.MARGIN_BY_SIMILARITY]
    assert with_similarity.report.total.accuracy > without.report.total.accuracy + 15


def voting_rows(*, clips: int = 60, seed: int = 3) -> list[calibration.PairRow]:
    """One-word hallucinations in miniature: VOTER's sign is right for 98 % of pairs but its margins are as likely
    tiny as huge; NOISY's margins follow the truth only weakly."""
    rng = random.Random(seed)
    rows = []
    for clip in range(clips):
        for index in range(6):
            truth = rng.choice((1, -1))
            right = 1 if rng.random() < 0.98 else -1
            margin = truth * right * 10 ** rng.uniform(-3, 1)
            pair = JudgedPair("HALLU", f"a{clip}-{index}", f"b{clip}-{index}", (truth,), pair_id=f"{clip}:{index}")
            rows.append(calibration.PairRow(pair, f"clip{clip}", (margin, 0.3 * truth + rng.gauss(0, 1), 0.0), 0.9))
    return rows


def test_votes_enter_when_the_training_pairs_favour_them_and_not_otherwise():
    voting = calibration.cross_validate(NAMES, voting_rows(), seed=0)
    assert all(calibration.VOTE in blocks for blocks in voting.blocks_per_fold())
    counted = [row for row in voting_rows() if row.truth != 0]
    voter_alone = 100 * np.mean([row.differences[0] * row.truth > 0 for row in counted])
    assert voting.report.total.accuracy >= voter_alone - 1.0
    # pairs whose log-odds are exactly linear in the margins carry nothing in the signs that the margins do not
    plain = calibration.cross_validate(NAMES, logistic_rows(), seed=0)
    assert all(calibration.VOTE not in blocks for blocks in plain.blocks_per_fold())


def logistic_rows(*, clips: int = 80, seed: int = 4) -> list[calibration.PairRow]:
    """People prefer a with probability sigmoid(1.5 * GOOD's margin): a linear model of margins is the truth."""
    rng = random.Random(seed)
    rows = []
    for clip in range(clips):
        for index, split in enumerate(SPLITS):
            informative, noise = rng.gauss(0, 1), rng.gauss(0, 1)
            truth = 1 if rng.random() < 1 / (1 + math.exp(-1.5 * informative)) else -1
            pair = JudgedPair(split, f"a{clip}-{index}", f"b{clip}-{index}", (truth,), pair_id=f"{clip}:{index}")
            rows.append(calibration.PairRow(pair, f"clip{clip}", (informative, noise, 0.0)))
    return rows


def test_counting_follows_the_protocol_ties_excluded_and_zero_decisions_wrong():
    pairs = [
        JudgedPair("HC", "a", "b", (1, 1, 0, 0), pair_id=1),  # a preferred, d > 0: correct
        JudgedPair("HC", "c", "d", (1, -1, 0, 0), pair_id=2),  # no preference: not counted
        JudgedPair("MM", "e", "f", (-1, -1, -1, 1), pair_id=3),  # b preferred, d == 0: wrong
        JudgedPair("MM", "g", "h", (-1, 0, 0, 0), pair_id=4),  # b preferred, d < 0: correct
    ]
    rows = [calibration.PairRow(pair, f"clip{i}", (0.0,)) for i, pair in enumerate(pairs)]
    report = calibration.agreement_from_decisions(rows, np.array([0.3, 5.0, 0.0, -0.2]))
    assert report.as_dict()["HC"] == 100.0 and report.as_dict()["MM"] == 50.0
    assert report.total.counted == 3 and report.total.correct == 2 and report.splits["HC"].ties_excluded == 1


def test_too_few_clips_for_five_folds_is_a_clear_error():
    rows = synthetic_rows(clips=3)
    with pytest.raises(ValueError, match="3 clips .* needs at least 5"):
        calibration.cross_validate(NAMES, rows)


def test_the_inner_search_picks_the_c_a_refitting_logistic_regression_cv_picks():
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import GroupKFold

    for rows in (synthetic_rows(clips=30), gated_rows(clips=30), voting_rows(clips=30)):
        counted = [row for row in rows if row.truth != 0]
        labels = np.array([1 if row.truth > 0 else 0 for row in counted])
        groups = [int(row.clip_key.removeprefix("clip")) for row in counted]
        blocks, chosen = calibration._inner_choice(counted, labels, groups, 0)
        matrix = calibration.model_matrix(counted, blocks)
        splits = list(GroupKFold(n_splits=5, shuffle=True, random_state=0).split(matrix, labels, groups))
        reference = LogisticRegressionCV(
            Cs=list(calibration.REGULARISATION_GRID),
            l1_ratios=(0.0,),
            use_legacy_attributes=True,
            cv=splits,
            scoring="neg_log_loss",
            fit_intercept=False,
            solver="lbfgs",
            max_iter=5000,
        ).fit(matrix / calibration._scales(matrix), labels)
        assert chosen == pytest.approx(float(np.ravel(reference.C_)[0]))


def test_a_model_that_weighs_margins_by_similarity_refuses_pairs_without_one():
    rows = gated_rows(clips=20)
    model = calibration.fit_calibrated_model(NAMES, rows)
    assert calibration.MARGIN_BY_SIMILARITY in model.blocks
    with pytest.raises(ValueError, match="pair 0 has none"):
        model.decisions([replace(rows[0], similarity=None)])
    # a similarity that is not a number is not known either: the block is left out rather than fed zeros
    odd = [replace(row, similarity=math.nan) if k == 3 else row for k, row in enumerate(rows)]
    assert calibration.MARGIN_BY_SIMILARITY not in calibration.fit_calibrated_model(NAMES, odd).blocks
