"""Correlations with bootstrap CIs, and inter-rater agreement, against scipy/statsmodels/krippendorff and hand sums."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from metrics_bridge.agreement import inter_rater
from metrics_bridge.agreement.statistics import (
    correlate,
    correlation_table,
    metric_human_correlations,
    system_level_correlate,
    system_means,
)


@pytest.fixture
def paired_data():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, size=80).astype(float)  # THumBS-like integers: many ties
    metric = human * 0.1 + rng.normal(0, 0.15, size=80)
    return metric, human


def test_values_and_p_values_are_scipys(paired_data):
    metric, human = paired_data
    table = correlation_table(metric, human, resamples=200)
    assert table["pearson"].value == pytest.approx(stats.pearsonr(metric, human).statistic, abs=1e-12)
    assert table["spearman"].value == pytest.approx(stats.spearmanr(metric, human).statistic, abs=1e-12)
    tau_b = stats.kendalltau(metric, human, variant="b")
    assert table["kendall"].value == pytest.approx(tau_b.statistic, abs=1e-12)
    assert table["kendall"].p_value == pytest.approx(tau_b.pvalue, abs=1e-12)
    assert table["kendall"].value != pytest.approx(stats.kendalltau(metric, human, variant="c").statistic, abs=1e-6)
    assert all(row.n == 80 for row in table.values())


def test_kendall_tau_b_on_a_hand_computed_case_with_ties():
    # x = [1, 2, 3, 4], y = [1, 1, 2, 3]: concordant 5, discordant 0, one tie in y only
    # tau_b = (5 - 0) / sqrt((6 - 0) * (6 - 1)) = 5 / sqrt(30)
    result = correlate([1, 2, 3, 4], [1, 1, 2, 3], method="kendall", resamples=50)
    assert result.value == pytest.approx(5 / math.sqrt(30), abs=1e-12)


def test_bootstrap_interval_is_seeded_contains_the_value_and_agrees_with_scipy_bootstrap(paired_data):
    metric, human = paired_data
    ours = correlate(metric, human, method="pearson", resamples=2000, seed=11)
    again = correlate(metric, human, method="pearson", resamples=2000, seed=11)
    assert (ours.ci_low, ours.ci_high) == (again.ci_low, again.ci_high)
    assert ours.ci_low < ours.value < ours.ci_high
    reference = stats.bootstrap(
        (metric, human),
        lambda x, y: stats.pearsonr(x, y).statistic,
        paired=True,
        vectorized=False,
        method="percentile",
        n_resamples=2000,
        random_state=np.random.default_rng(5),
    ).confidence_interval
    assert ours.ci_low == pytest.approx(reference.low, abs=0.03)
    assert ours.ci_high == pytest.approx(reference.high, abs=0.03)


def test_nan_pairs_are_dropped_and_constant_input_gives_nan():
    result = correlate([0.1, float("nan"), 0.3, 0.2, 0.5], [1, 2, 3, 2, 5], method="spearman", resamples=50)
    assert result.n == 4
    assert result.value == pytest.approx(stats.spearmanr([0.1, 0.3, 0.2, 0.5], [1, 3, 2, 5]).statistic)
    flat = correlate([0.2, 0.2, 0.2, 0.2], [1, 2, 3, 4], method="pearson", resamples=50)
    assert math.isnan(flat.value) and math.isnan(flat.ci_low)
    with pytest.raises(ValueError, match="same length"):
        correlate([1, 2, 3], [1, 2], method="pearson")


def test_system_level_correlates_per_system_means():
    systems = ["s1", "s1", "s2", "s2", "s3", "s3", "s4", "s4"]
    metric = [0.1, 0.3, 0.5, 0.5, 0.2, 0.4, 0.9, 0.7]
    human = [2, 2, 3, 5, 1, 3, 4, 5]
    assert system_means(metric, systems) == pytest.approx({"s1": 0.2, "s2": 0.5, "s3": 0.3, "s4": 0.8})
    result = system_level_correlate(metric, human, systems, method="pearson", resamples=200)
    assert result.n == 4
    assert result.value == pytest.approx(stats.pearsonr([0.2, 0.5, 0.3, 0.8], [2, 4, 2, 4.5]).statistic, abs=1e-12)
    report = metric_human_correlations(metric, {"overall": human, "recall": human}, systems=systems, resamples=100)
    assert set(report) == {"caption", "system"}
    assert set(report["system"]["overall"]) == {"pearson", "spearman", "kendall"}
    assert report["system"]["recall"]["pearson"].value == pytest.approx(result.value)


# --- inter-rater --------------------------------------------------------------------------------


def interval_alpha_by_hand(matrix):
    """Krippendorff's alpha, interval metric, from the coincidence-matrix definition (pairable units only)."""
    units = [[v for v in column if not np.isnan(v)] for column in np.asarray(matrix, dtype=float).T]
    units = [u for u in units if len(u) >= 2]
    observed_pairs, all_values = 0.0, [v for u in units for v in u]
    for values in units:
        m = len(values)
        observed_pairs += sum((a - b) ** 2 for a, b in itertools.permutations(values, 2)) / (m - 1)
    n = len(all_values)
    expected_pairs = sum((a - b) ** 2 for a, b in itertools.permutations(all_values, 2)) / (n - 1)
    return 1 - observed_pairs / expected_pairs


def test_krippendorff_alpha_interval_matches_the_definition_and_the_package_example():
    nan = np.nan
    data = [
        [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
        [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
        [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
    ]
    ratings = [(r, u, data[r][u]) for r in range(3) for u in range(15) if not np.isnan(data[r][u])]
    alpha = inter_rater.krippendorff_alpha_interval(ratings)
    assert alpha == pytest.approx(interval_alpha_by_hand(data), abs=1e-9)
    assert alpha == pytest.approx(0.811, abs=5e-4)


def test_thumbs_alpha_per_field_with_missing_cells():
    rows = [
        ("ann", "c1", {"precision": 4, "recall": 3, "fluency": 0.0}),
        ("bob", "c1", {"precision": 5, "recall": 3, "fluency": -0.1}),
        ("ann", "c2", {"precision": 2, "recall": 1, "fluency": -1.0}),
        ("bob", "c2", {"precision": 1, "recall": 2, "fluency": None}),
        ("ann", "c3", {"precision": 3, "recall": 4, "fluency": -0.5}),
        ("bob", "c3", {"precision": 3, "recall": 5, "fluency": -0.4}),
    ]
    alphas = inter_rater.thumbs_alpha(rows, fields=("precision", "recall", "fluency"))
    assert alphas["precision"] == pytest.approx(interval_alpha_by_hand([[4, 2, 3], [5, 1, 3]]), abs=1e-9)
    assert alphas["fluency"] == pytest.approx(
        interval_alpha_by_hand([[0.0, -1.0, -0.5], [-0.1, np.nan, -0.4]]), abs=1e-9
    )
    assert math.isnan(inter_rater.krippendorff_alpha_interval([("ann", "c1", 3), ("ann", "c2", 4)]))


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_vectorised_bootstrap_equals_scipy_resample_by_resample(method):
    """The intervals come from the same resamples as a loop calling scipy on each one (caption and system level)."""
    from scipy import stats as scipy_stats

    from metrics_bridge.agreement.statistics import system_means

    rng = np.random.default_rng(5)
    metric = rng.random(40)
    human = metric + rng.normal(scale=0.3, size=40)
    human[::7] = human[0]  # ties
    systems = [f"s{i % 6}" for i in range(40)]
    function = {
        "pearson": lambda a, b: scipy_stats.pearsonr(a, b).statistic,
        "spearman": lambda a, b: scipy_stats.spearmanr(a, b).statistic,
        "kendall": lambda a, b: scipy_stats.kendalltau(a, b, variant="b").statistic,
    }[method]
    draws = np.random.default_rng(3)
    caption_samples, system_samples = [], []
    for _ in range(300):
        index = draws.integers(0, 40, 40)
        caption_samples.append(function(metric[index], human[index]))
        labels = [systems[i] for i in index]
        m, h = system_means(metric[index], labels), system_means(human[index], labels)
        system_samples.append(function([m[k] for k in m], [h[k] for k in m]))
    ours = correlate(metric, human, method=method, resamples=300, seed=3)
    assert (ours.ci_low, ours.ci_high) == pytest.approx(tuple(np.percentile(caption_samples, [2.5, 97.5])), abs=1e-12)
    ours_system = system_level_correlate(metric, human, systems, method=method, resamples=300, seed=3)
    expected_system = tuple(np.percentile(system_samples, [2.5, 97.5]))
    assert (ours_system.ci_low, ours_system.ci_high) == pytest.approx(expected_system, abs=1e-12)
