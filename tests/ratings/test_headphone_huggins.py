"""The Huggins-pitch screen (Milne et al. 2021): its signal, the once-per-attempt rule, campaigns requiring it."""

import random

import numpy as np
import pytest
from django.urls import reverse

from ratings.models import HeadphoneCheck
from ratings.screening import SAMPLE_RATE, huggins
from ratings.services.campaigns import campaign_setup
from ratings.services.headphone import (
    TrialAlreadyPlayedError,
    headphone_check_start,
    headphone_check_submit,
    headphone_status,
    headphone_trials_draw,
    trial_sound_fetch,
)
from tests.ratings.campaign_data import corpus_build, headphone_pass_give, headphone_trials_play, wav_channels

pytestmark = pytest.mark.django_db


def _channels(wav_bytes: bytes) -> np.ndarray:
    return wav_channels(wav_bytes, sample_rate=SAMPLE_RATE)


def _bursts(samples: np.ndarray) -> list[np.ndarray]:
    burst, gap = int(SAMPLE_RATE * huggins.NOISE_SECONDS), int(SAMPLE_RATE * huggins.GAP_SECONDS)
    return [samples[gap + index * (burst + gap) : gap + index * (burst + gap) + burst] for index in range(3)]


def _band_energy(signal: np.ndarray, low: float, high: float) -> float:
    spectrum = np.abs(np.fft.rfft(signal)) ** 2
    frequencies = np.fft.rfftfreq(len(signal), 1 / SAMPLE_RATE)
    return float(spectrum[(frequencies >= low) & (frequencies <= high)].sum())


def _served_trial(target: int, seed: int = 11) -> list[np.ndarray]:
    """The trial exactly as the server sends it (16-bit WAV), split into its three bursts."""
    from ratings.screening import wav_bytes

    return _bursts(_channels(wav_bytes(huggins.trial_samples({"target": target, "seed": seed}))))


def _band_density(signal: np.ndarray, low: float, high: float) -> float:
    """Energy per hertz between low and high."""
    return _band_energy(signal, low, high) / (high - low)


@pytest.mark.parametrize("target", [0, 1, 2])
def test_only_the_huggins_burst_inverts_the_interaural_phase_in_its_band(target):
    seed = 11 + target
    centre = huggins.trial_centre_hz({"target": target, "seed": seed})
    assert huggins.CENTRE_HZ_RANGE[0] <= centre <= huggins.CENTRE_HZ_RANGE[1]
    low, high = centre * (1 - huggins.BANDWIDTH_FRACTION), centre * (1 + huggins.BANDWIDTH_FRACTION)
    inside_band = (low * 1.01, high * 0.99)
    outside_band = (2 * high, 8_000.0)
    for index, burst in enumerate(_served_trial(target, seed=seed)):
        left, right = burst[:, 0], burst[:, 1]
        cross = np.fft.rfft(left) * np.conj(np.fft.rfft(right))
        frequencies = np.fft.rfftfreq(len(left), 1 / SAMPLE_RATE)
        inside = (frequencies >= inside_band[0]) & (frequencies <= inside_band[1])
        outside = (frequencies > outside_band[0]) & (frequencies < outside_band[1])
        # Energy-weighted interaural phase agreement: +1 in phase, -1 inverted.
        phase_inside = np.sum(np.real(cross[inside])) / np.sum(np.abs(cross[inside]))
        phase_outside = np.sum(np.real(cross[outside])) / np.sum(np.abs(cross[outside]))
        assert phase_outside > 0.8, "outside the band the ears agree (up to the uncorrelated background)"
        difference = _band_density(left - right, *inside_band) / _band_density(left - right, *outside_band)
        total = _band_density(left + right, *inside_band) / _band_density(left + right, *outside_band)
        if index == target:
            assert phase_inside < -0.8
            assert difference > 10, "L - R stands out in the band..."
            assert total < 0.15, "...where L + R has a notch (loudspeakers cancel the band)"
        else:
            assert phase_inside > 0.8
            assert 0.3 < difference < 3 and 0.7 < total < 1.4


def test_every_burst_carries_an_uncorrelated_background_at_least_10_db_below_the_noise():
    """L - R is never zero, and the ears' correlation stays within what a background 10-14 dB down gives."""
    lowest = 1 / (1 + 10 ** (huggins.BACKGROUND_DB_MAX / 10))
    highest = 1 / (1 + 10 ** (huggins.BACKGROUND_DB_MIN / 10))
    for seed in range(4):
        for burst in _served_trial(seed % 3, seed=seed):
            left, right = burst[:, 0], burst[:, 1]
            assert np.abs(left - right).max() > 100
            correlation = np.dot(left, right) / np.sqrt(np.dot(left, left) * np.dot(right, right))
            assert lowest - 0.002 < correlation < highest + 0.002


def test_levels_do_not_give_the_answer_away():
    """Every burst, in each ear, has the same RMS (to 0.05 dB) and a similar peak: a level meter cannot tell."""
    for target in range(3):
        bursts = _served_trial(target, seed=target + 5)
        rms_db = [20 * np.log10(np.sqrt(np.mean(burst[:, ear] ** 2))) for burst in bursts for ear in (0, 1)]
        assert max(rms_db) - min(rms_db) < 0.05
        expected_db = 20 * np.log10(huggins.NOISE_RMS * 32767)
        assert all(abs(value - expected_db) < 0.05 for value in rms_db)
        peaks = [np.abs(burst).max() for burst in bursts]
        target_peak, other_peaks = peaks[target], [peak for index, peak in enumerate(peaks) if index != target]
        assert min(other_peaks) * 0.7 < target_peak < max(other_peaks) * 1.4


# Per-interval time-domain statistics an adversary can compute from the file without listening.
STATISTICS = {
    f"{kind} of {name}": (lambda burst, pick=pick, measure=measure: measure(pick(burst)))
    for name, pick in (
        ("L", lambda burst: burst[:, 0]),
        ("R", lambda burst: burst[:, 1]),
        ("L-R", lambda burst: burst[:, 0] - burst[:, 1]),
        ("L+R", lambda burst: burst[:, 0] + burst[:, 1]),
    )
    for kind, measure in (
        ("RMS", lambda signal: float(np.sqrt(np.mean(signal**2)))),
        ("peak", lambda signal: float(np.abs(signal).max())),
    )
}


def identification_rates(trials: list[dict]) -> dict[str, float]:
    """For each statistic and each choice rule (the largest or the smallest value picks the interval), the share
    of trials in which it picks the target, ties shared; the better rule per statistic is reported."""
    from ratings.screening import wav_bytes

    hits = {(name, rule): 0.0 for name in STATISTICS for rule in ("max", "min")}
    for trial in trials:
        bursts = _bursts(_channels(wav_bytes(huggins.trial_samples(trial))))
        for name, statistic in STATISTICS.items():
            values = np.array([statistic(burst) for burst in bursts])
            for rule, chosen in (("max", values.max()), ("min", values.min())):
                winners = np.flatnonzero(values == chosen)
                hits[(name, rule)] += 1 / len(winners) if trial["target"] in winners else 0.0
    return {name: max(hits[(name, "max")], hits[(name, "min")]) / len(trials) for name in STATISTICS}


def test_no_time_domain_statistic_finds_the_target_in_more_than_45_percent_of_300_trials():
    rng = random.Random(2024)
    trials = [{"target": rng.randrange(3), "seed": rng.randrange(2**31)} for _ in range(300)]
    rates = identification_rates(trials)
    print("\nHuggins: identification rate per statistic over 300 trials (chance 33 %):")
    for name, rate in sorted(rates.items(), key=lambda item: -item[1]):
        print(f"  {name:14} {rate:.3f}")
    assert set(rates) == set(STATISTICS) and len(rates) == 8
    assert max(rates.values()) <= 0.45, rates


def test_the_measurement_catches_the_old_design(monkeypatch):
    """Without the background (the previous design: diotic non-targets), channel subtraction finds every target."""
    monkeypatch.setattr(huggins, "_background_gain", lambda *args: 0.0)
    rng = random.Random(7)
    trials = [{"target": rng.randrange(3), "seed": rng.randrange(2**31)} for _ in range(20)]
    rates = identification_rates(trials)
    assert rates["RMS of L-R"] == 1.0 and rates["peak of L-R"] == 1.0


def test_answers_and_noises_are_drawn_per_trial():
    trials = headphone_trials_draw(kind="huggins", rng=random.Random(3))
    assert len(trials) == huggins.TRIAL_COUNT == 6
    assert all(set(trial) == {"target", "seed", "answer", "fetched_at"} for trial in trials)
    assert len({trial["seed"] for trial in trials}) == 6
    assert {trial["target"] for _ in range(20) for trial in headphone_trials_draw(kind="huggins")} == {0, 1, 2}


# --- once per attempt -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["antiphase", "huggins"])
def test_a_trial_sound_is_served_once_per_attempt_and_a_refetch_counts_as_played(client, make_user, kind):
    rater = make_user(f"once-{kind}", "rater")
    client.force_login(rater)
    page_url = reverse("ratings:headphone_check", args=[kind])
    client.get(page_url)
    check = HeadphoneCheck.objects.get(rater=rater, kind=kind)
    url = reverse("ratings:headphone_trial_audio", args=[check.pk, 2])
    first = client.get(url)
    assert first.status_code == 200 and first["Content-Type"] == "audio/wav" and len(first.content) > 100_000
    assert "no-cache" in first["Cache-Control"] or "max-age=0" in first["Cache-Control"]
    second = client.get(url)
    assert second.status_code == 410 and b"played already" in second.content
    # A reload keeps the attempt and shows the trial as played (its answers open, its button done).
    html = client.get(page_url).content.decode()
    assert HeadphoneCheck.objects.filter(rater=rater, kind=kind).count() == 1
    assert 'data-number="2" data-played="true"' in html and 'data-number="1" data-played="false"' in html
    assert client.get(url).status_code == 410
    with pytest.raises(TrialAlreadyPlayedError):
        trial_sound_fetch(check=check, trial_number=2)


def test_answering_needs_every_trial_played(client, make_user):
    rater = make_user("skipper", "rater")
    client.force_login(rater)
    page_url = reverse("ratings:headphone_check", args=["huggins"])
    client.get(page_url)
    check = HeadphoneCheck.objects.get(rater=rater)
    client.get(reverse("ratings:headphone_trial_audio", args=[check.pk, 1]))
    answers = {f"trial_{index + 1}": trial["target"] + 1 for index, trial in enumerate(check.trials)}
    response = client.post(page_url, {"check_id": check.pk, **answers})
    assert response.status_code == 400
    assert "play every trial before answering (not played: 2, 3, 4, 5, 6)" in response.content.decode()
    check.refresh_from_db()
    assert check.completed_at is None
    headphone_trials_play(check)
    response = client.post(page_url, {"check_id": check.pk, **answers})
    assert response.status_code == 302
    assert headphone_status(rater=rater, kind="huggins").is_valid


@pytest.mark.parametrize("correct,passed", [(6, True), (5, True), (4, False)])
def test_huggins_attempts_are_scored_on_the_noise_that_holds_the_tone(make_user, correct, passed):
    rater = make_user(f"hp{correct}", "rater")
    check = headphone_trials_play(headphone_check_start(rater=rater, kind="huggins"))
    answers = [
        trial["target"] if index < correct else (trial["target"] + 1) % 3 for index, trial in enumerate(check.trials)
    ]
    check = headphone_check_submit(check=check, answers=answers)
    assert (check.correct_count, check.passed) == (correct, passed)
    assert headphone_status(rater=rater, kind="huggins").is_valid is passed
    assert not headphone_status(rater=rater, kind="antiphase").is_valid, "each screen is passed on its own"


# --- campaigns that require it ------------------------------------------------------------------------


def test_a_campaign_can_require_the_huggins_screen_too(client, make_user):
    dataset, _, _ = corpus_build(clip_count=1)
    rater = make_user("double", "rater")
    headphone_pass_give(rater)  # antiphase passed
    plain = campaign_setup(name="plain", dataset=dataset, task_type="pairwise", split_counts={"HC": 1}, raters=[rater])
    strict = campaign_setup(
        name="strict",
        dataset=dataset,
        task_type="pairwise",
        split_counts={"HM": 1},
        raters=[rater],
        requires_huggins=True,
    )
    client.force_login(rater)
    plain_item = plain.assignments.get().items.get()
    strict_item = strict.assignments.get().items.get()
    assert client.get(reverse("ratings:item", args=[plain_item.token])).status_code == 200
    response = client.get(reverse("ratings:item", args=[strict_item.token]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ratings:headphone_check", args=["huggins"]) + "?next=")
    check = headphone_trials_play(headphone_check_start(rater=rater, kind="huggins"))
    headphone_check_submit(check=check, answers=[trial["target"] for trial in check.trials])
    assert client.get(reverse("ratings:item", args=[strict_item.token])).status_code == 200


def test_the_raters_page_shows_both_screens_and_resets_them(client, make_user):
    rater = make_user("deaf", "rater")
    for kind in ("antiphase", "huggins"):
        for _ in range(2):
            check = headphone_trials_play(headphone_check_start(rater=rater, kind=kind))
            headphone_check_submit(
                check=check,
                answers=[
                    (huggins.trial_answer(t) + 1) % 3 if kind == "huggins" else t["antiphase"] for t in check.trials
                ],
            )
    assert headphone_status(rater=rater, kind="huggins").is_blocked
    client.force_login(make_user("chief", staff=True))
    html = client.get(reverse("ratings:rater_list")).content.decode()
    assert "deaf" in html and html.count("blocked") >= 2 and "Reset headphone checks" in html
    assert client.post(reverse("ratings:headphone_reset", args=[rater.pk]))["Location"] == reverse("ratings:rater_list")
    assert headphone_status(rater=rater, kind="antiphase").attempts_left == 2
    assert headphone_status(rater=rater, kind="huggins").attempts_left == 2
