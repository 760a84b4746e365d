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


@pytest.mark.parametrize("target", [0, 1, 2])
def test_only_the_huggins_burst_inverts_the_interaural_phase_in_the_band_around_600_hz(target):
    low, high = (
        huggins.CENTRE_HZ * (1 - huggins.BANDWIDTH_FRACTION),
        huggins.CENTRE_HZ * (1 + huggins.BANDWIDTH_FRACTION),
    )
    for index, burst in enumerate(_served_trial(target)):
        left, right = burst[:, 0], burst[:, 1]
        if index != target:
            assert np.array_equal(left, right), "the other bursts are diotic: the same noise in both ears"
            continue
        difference, total = left - right, left + right
        # L - R holds only the inverted band (plus ramp and rounding leakage) ...
        in_band = _band_energy(difference, low * 0.97, high * 1.03)
        assert in_band / _band_energy(difference, 0, SAMPLE_RATE / 2) > 0.95
        # ... where L + R has a notch: the band cancels when the ears' signals are summed (loudspeakers).
        # (Diotic bursts would give 4x the energy of one ear here; ramps and per-ear scaling leave ~2 %.)
        assert _band_energy(total, low, high) < 0.05 * _band_energy(left, low, high)
        # Cross-spectrum phase: pi inside the band, 0 outside (energy-weighted mean cosine).
        cross = np.fft.rfft(left) * np.conj(np.fft.rfft(right))
        frequencies = np.fft.rfftfreq(len(left), 1 / SAMPLE_RATE)
        inside = (frequencies >= low) & (frequencies <= high)
        outside = (frequencies > 2 * high) & (frequencies < 10_000)
        assert np.sum(np.real(cross[inside])) / np.sum(np.abs(cross[inside])) < -0.9
        assert np.sum(np.real(cross[outside])) / np.sum(np.abs(cross[outside])) > 0.99


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
