"""Bootstrap intervals of agreement figures over clips, against a plain loop over the same draws."""

import numpy as np
import pytest

from metrics_bridge.agreement import brace
from metrics_bridge.agreement.intervals import (
    agreement_intervals,
    clip_resample_weights,
    clip_sums,
    rank_agreement_intervals,
    resampled_figures,
)
from metrics_bridge.agreement.protocol import JudgedPair, PairDecision


def decision(clip: str, split: str, correct: bool | None, index: int, prediction: str | None = None, truth: int = 1):
    votes = (1, 1, 1) if truth > 0 else (-1, -1, -1)  # +1: people prefer caption a
    pair = JudgedPair(pair_id=f"{clip}:{index}", split=split, caption_a="x", caption_b="y", votes=votes)
    difference = None if correct is None else (1.0 if correct else -1.0)
    return PairDecision(pair, clip, 0.0, 0.0, difference, correct, prediction)


def metric_decisions(rng, clips: int, accuracy: float) -> list[PairDecision]:
    made = []
    for clip in range(clips):
        for index, split in enumerate(("HC", "HI", "HM", "MM", "MM_2")[: 1 + clip % 5]):
            made.append(decision(f"c{clip}", split, bool(rng.random() < accuracy), index))
    return made


def reference_interval(decisions, columns, column, resamples, seed):
    """The percentile interval by a loop: draw clips as statistics.correlate does, count their pairs again."""
    clips = sorted({d.clip_key for d in decisions})
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        drawn = rng.integers(0, len(clips), len(clips))
        correct = counted = 0
        for index in drawn:
            for d in decisions:
                split = d.pair.split.split("_")[0]
                if d.clip_key == clips[index] and d.correct is not None and column in (split, "total"):
                    correct, counted = correct + d.correct, counted + 1
        if counted:
            values.append(100.0 * correct / counted)
    return tuple(np.percentile(values, [2.5, 97.5]))


def test_intervals_equal_a_loop_over_the_same_clip_draws():
    rng = np.random.default_rng(3)
    decisions = metric_decisions(rng, clips=30, accuracy=0.7)
    decisions.append(decision("c1", "HC", None, 9))  # a tie: not counted anywhere
    columns = ["HC", "HI", "HM", "MM", "total"]
    result = agreement_intervals({"M": decisions}, columns=columns, resamples=200, seed=5)
    assert result.clips == 30
    for column in columns:
        low, high = result.intervals["M"][column]
        assert (low, high) == pytest.approx(reference_interval(decisions, columns, column, 200, 5))
        counted = [d for d in decisions if d.correct is not None and column in (d.pair.split[:2], "total")]
        point = 100.0 * sum(d.correct for d in counted) / len(counted)
        assert low <= point <= high


def test_the_best_is_separable_only_when_the_difference_interval_excludes_zero():
    rng = np.random.default_rng(1)
    strong = metric_decisions(rng, clips=60, accuracy=0.95)
    weak = [decision(d.clip_key, d.pair.split, not d.correct if i % 2 else d.correct, i) for i, d in enumerate(strong)]
    # close: the same decisions but three right ones wrong and two wrong ones right (one pair fewer right)
    right = [i for i, d in enumerate(strong) if d.correct][:3]
    wrong = [i for i, d in enumerate(strong) if not d.correct][:2]
    close = [decision(d.clip_key, d.pair.split, d.correct != (i in right + wrong), i) for i, d in enumerate(strong)]
    columns = ["total"]
    separated = agreement_intervals({"weak": weak, "strong": strong}, columns=columns, resamples=300)
    assert separated.best["total"].best == "strong" and separated.best["total"].runner_up == "weak"
    assert separated.best["total"].separable and separated.best["total"].difference_low > 0
    near = agreement_intervals({"strong": strong, "close": close}, columns=columns, resamples=300).best["total"]
    assert near.best == "strong" and not near.separable and near.difference_low <= 0 <= near.difference_high
    tie = agreement_intervals({"a": strong, "b": list(strong)}, columns=columns, resamples=100).best["total"]
    assert tie.best == "a" and not tie.separable  # equal figures are never separable
    alone = agreement_intervals({"a": strong}, columns=columns, resamples=100).best["total"]
    assert alone.runner_up is None and alone.separable
    # the table's own figures decide which is best (e.g. rounded values)
    given = agreement_intervals(
        {"a": strong, "b": weak}, columns=columns, values={"a": {"total": 50.0}, "b": {"total": 60.0}}, resamples=50
    )
    assert given.best["total"].best == "b" and not given.best["total"].separable


def test_f1_over_all_clips_equals_brace_f1_and_resamples_weigh_whole_clips():
    made = []
    outcomes = [("a", 1), ("b", 1), ("b", -1), ("a", -1), ("b", -1), ("b", 1), ("a", 1)]
    for index, (prediction, truth) in enumerate(outcomes):
        correct = (prediction == "a") == (truth > 0)
        made.append(decision(f"c{index % 3}", "HC", correct, index, prediction=prediction, truth=truth))
    clips = ["c0", "c1", "c2"]
    numerator, denominator = clip_sums(made, clips, ["f1", "total"])
    everything = resampled_figures(numerator, denominator, np.ones((1, 3)))
    assert everything[0, 0] == pytest.approx(brace.f1_percent(made), abs=0.01)
    assert everything[0, 1] == pytest.approx(100.0 * sum(d.correct for d in made) / len(made))
    weights = clip_resample_weights(3, resamples=50, seed=0)
    assert weights.shape == (50, 3) and (weights.sum(axis=1) == 3).all()


def test_tau_intervals_equal_scipy_on_win_rates_recomputed_per_clip_resample():
    from scipy import stats

    rng = np.random.default_rng(7)
    tallies = rng.integers(0, 4, (25, 6, 3)).astype(float)
    tallies[3, 2] = 0  # a system without votes on a clip
    values = {"M": [0.1, 0.5, 0.3, None, 0.9, 0.7], "few": [1.0, None, None, None, 2.0, None]}
    result = rank_agreement_intervals(values, tallies, resamples=150, seed=2)
    assert result["few"] is None  # fewer than 3 systems with a value
    draws = np.random.default_rng(2)
    taus = []
    for _ in range(150):
        drawn = tallies[draws.integers(0, 25, 25)].sum(axis=0)
        rates = (drawn[:, 0] + 0.5 * drawn[:, 1]) / drawn.sum(axis=1)
        kept = [0, 1, 2, 4, 5]
        taus.append(stats.kendalltau([values["M"][i] for i in kept], rates[kept], variant="b").statistic)
    assert result["M"] == pytest.approx(tuple(np.percentile(taus, [2.5, 97.5])))
