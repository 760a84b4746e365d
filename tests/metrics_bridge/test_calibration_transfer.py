"""CALIBRATED trained elsewhere (plain Python): per-dataset scaling uses no votes, weights keep the known sign,
swapping a and b flips the decision, and with inactive constraints the fit is sklearn's logistic regression."""

import random
from dataclasses import replace

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from metrics_bridge.agreement import calibration, calibration_transfer
from metrics_bridge.agreement.protocol import JudgedPair

NAMES = ("BLEU_1", "SBERT", "fluency_error", "caption_words")


def study(*, pairs: int = 400, seed: int = 0, stretch=(1.0, 1.0, 1.0, 1.0), weights=(0.0, 2.0, -1.0, 0.5)):
    """Pairs whose preference follows `weights` on unit-size features; each feature is then stretched by the study's
    own factor (a study whose metric differences run wider), which the truth does not see."""
    rng = random.Random(seed)
    rows = []
    for index in range(pairs):
        unit = [rng.gauss(0, 1) for _ in NAMES]
        latent = sum(w * x for w, x in zip(weights, unit, strict=True)) + rng.gauss(0, 0.5)
        votes = (1,) if latent > 0 else (-1,)
        pair = JudgedPair(split="HC", caption_a=f"a{index}", caption_b=f"b{index}", votes=votes, pair_id=index)
        differences = tuple(s * x for s, x in zip(stretch, unit, strict=True))
        rows.append(calibration.PairRow(pair=pair, clip_key=f"clip{index // 4}", differences=differences))
    return rows


def accuracy(rows, decisions):
    truth = np.array([row.truth for row in rows])
    return float(np.mean(decisions * truth > 0))


def test_scaling_of_a_dataset_uses_no_votes():
    rows = study(seed=1)
    flipped = [replace(row, pair=replace(row.pair, votes=tuple(-v for v in row.pair.votes))) for row in rows]
    model = calibration_transfer.fit_transfer_model(NAMES, [study(seed=2)])
    np.testing.assert_array_equal(
        calibration_transfer.scaled_matrix(rows, (calibration.MARGIN,)),
        calibration_transfer.scaled_matrix(flipped, (calibration.MARGIN,)),
    )
    np.testing.assert_array_equal(model.decisions(rows), model.decisions(flipped))
    # each column over the dataset has root mean square 1, whatever its original size
    matrix = calibration_transfer.scaled_matrix(study(stretch=(10.0, 0.1, 3.0, 1.0)), (calibration.MARGIN,))
    np.testing.assert_allclose(np.sqrt(np.mean(matrix**2, axis=0)), 1.0)


def test_a_study_whose_differences_run_wider_gets_the_same_decisions_up_to_its_own_scale():
    training = study(seed=3)
    model = calibration_transfer.fit_transfer_model(NAMES, [training])
    evaluated = study(seed=4)
    stretched = study(seed=4, stretch=(5.0, 0.2, 7.0, 3.0))
    np.testing.assert_allclose(model.decisions(evaluated), model.decisions(stretched), rtol=1e-3, atol=1e-3)


def test_weights_keep_the_sign_a_feature_is_known_to_have():
    # a study where a higher BLEU_1 goes with the worse caption and fluency errors with the better one
    rows = study(seed=5, weights=(-1.5, 2.0, 1.0, 0.5))
    model = calibration_transfer.fit_transfer_model(NAMES, [rows], regularisation=1.0)
    coefficients = dict(zip(NAMES, model.coefficients, strict=True))
    assert coefficients["BLEU_1"] >= 0 and coefficients["BLEU_1"] == pytest.approx(0.0, abs=1e-8)
    assert coefficients["fluency_error"] <= 0 and coefficients["fluency_error"] == pytest.approx(0.0, abs=1e-8)
    assert coefficients["SBERT"] > 0.5
    # caption_words has no known direction: it keeps the sign the data give it, here positive
    assert coefficients["caption_words"] > 0
    unsigned = calibration_transfer.fit_transfer_model(NAMES, [rows], regularisation=1.0, signed=False)
    assert dict(zip(NAMES, unsigned.coefficients, strict=True))["BLEU_1"] < -0.3


def test_with_inactive_constraints_the_fit_is_sklearns_logistic_regression():
    rows = study(seed=6)
    model = calibration_transfer.fit_transfer_model(NAMES, [rows], regularisation=0.05)
    matrix = calibration_transfer.scaled_matrix(rows, (calibration.MARGIN,))
    labels = np.array([1 if row.truth > 0 else 0 for row in rows])
    reference = LogisticRegression(C=0.05, fit_intercept=False, tol=1e-10, max_iter=10_000).fit(matrix, labels)
    # the truth has weight 0 on BLEU_1, >0 on SBERT, <0 on fluency_error: no bound is active except maybe BLEU_1's
    free = [1, 2, 3]
    assert all((model.coefficients[i] > 0) == (reference.coef_[0][i] > 0) for i in free)
    if reference.coef_[0][0] >= 0:
        np.testing.assert_allclose(model.coefficients, reference.coef_[0], rtol=1e-4, atol=1e-6)
    unsigned = calibration_transfer.fit_transfer_model(NAMES, [rows], regularisation=0.05, signed=False)
    np.testing.assert_allclose(unsigned.coefficients, reference.coef_[0], rtol=1e-4, atol=1e-6)


def test_swapping_the_captions_flips_the_decision():
    model = calibration_transfer.fit_transfer_model(NAMES, [study(seed=7)])
    rows = study(seed=8)
    swapped = [
        replace(
            row,
            pair=replace(row.pair, votes=tuple(-v for v in row.pair.votes)),
            differences=tuple(-value for value in row.differences),
        )
        for row in rows
    ]
    np.testing.assert_allclose(model.decisions(swapped), -model.decisions(rows))


def test_a_model_trained_on_one_study_carries_to_another_with_other_scales():
    # the same preference, but the second study's differences run 5x wider on SBERT and 4x narrower on words:
    # the training study's scales put the wrong weights on the evaluated one, its own scales do not
    training = study(seed=9, pairs=600)
    evaluated = study(seed=10, pairs=600, stretch=(1.0, 5.0, 1.0, 0.25))
    model = calibration_transfer.fit_transfer_model(NAMES, [training])
    same_study = calibration_transfer.fit_transfer_model(NAMES, [evaluated])
    assert (
        accuracy(evaluated, model.decisions(evaluated)) >= accuracy(evaluated, same_study.decisions(evaluated)) - 0.02
    )
    assert accuracy(evaluated, model.decisions(evaluated)) > 0.85


def test_pairs_without_a_preference_do_not_train_and_one_sided_data_is_refused():
    rows = study(seed=11)
    tied = [replace(row, pair=replace(row.pair, votes=(1, -1))) for row in study(seed=12, pairs=50)]
    with_ties = calibration_transfer.fit_transfer_model(NAMES, [rows + tied])
    assert with_ties.training_pairs == len(rows)
    one_sided = [row for row in rows if row.truth > 0]
    with pytest.raises(ValueError, match="same side"):
        calibration_transfer.fit_transfer_model(NAMES, [one_sided])


def test_the_description_says_which_model_and_version():
    model = calibration_transfer.fit_transfer_model(NAMES, [study(seed=13)])
    description = model.as_dict()
    assert description["version"] == calibration_transfer.VERSION
    assert description["sign_constrained"] is True
    assert set(description["coefficients_by_block"]["SBERT"]) == set(calibration.MODEL_BLOCKS)
    assert description["training_pairs"] == 400


def test_the_similarity_block_is_used_when_every_pair_has_a_similarity_and_its_weights_are_free():
    rng = random.Random(14)
    rows = [replace(row, similarity=rng.uniform(0, 1)) for row in study(seed=14)]
    model = calibration_transfer.fit_transfer_model(NAMES, [rows])
    assert model.blocks == calibration_transfer.TRANSFER_BLOCKS
    assert len(model.coefficients) == 2 * len(NAMES)
    # the margin weights keep their signs, and the decision still flips with a and b
    margins = dict(zip(NAMES, model.coefficients[: len(NAMES)], strict=True))
    assert margins["BLEU_1"] >= 0 and margins["fluency_error"] <= 0
    swapped = [replace(row, differences=tuple(-value for value in row.differences)) for row in rows]
    np.testing.assert_allclose(model.decisions(swapped), -model.decisions(rows))
    # a model with the block refuses a dataset without similarities rather than read them as 0
    with pytest.raises(ValueError, match="similarity"):
        model.decisions(study(seed=15))
    assert calibration_transfer.fit_transfer_model(NAMES, [study(seed=15)]).blocks == (calibration.MARGIN,)
