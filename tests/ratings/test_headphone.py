"""Headphone screening: the antiphase tones, scoring, retry, blocking, reset, expiry and the pages.

The Huggins-pitch screen and the once-per-attempt rule have their own module (test_headphone_huggins.py).
"""

import random
from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from ratings.models import HeadphoneCheck
from ratings.screening import SAMPLE_RATE, wav_bytes
from ratings.screening.antiphase import GAP_SECONDS, QUIET_GAIN, TONE_SECONDS, trial_samples
from ratings.services.campaigns import campaign_setup
from ratings.services.headphone import (
    HeadphoneCheckError,
    headphone_check_start,
    headphone_check_submit,
    headphone_checks_reset,
    headphone_status,
    headphone_trials_draw,
)
from ratings.services.headphone import trial_wav as served_trial_wav
from tests.ratings.campaign_data import corpus_build, headphone_pass_give, headphone_trials_play, wav_channels


def trial_wav(trial: dict) -> bytes:
    """The WAV the server sends for the trial (an antiphase layout's is made once per process)."""
    served = served_trial_wav(kind="antiphase", trial=trial)
    assert served == wav_bytes(trial_samples(trial)), "the kept WAV is the trial's own sound"
    return served


pytestmark = pytest.mark.django_db


def _channels(wav_bytes: bytes) -> np.ndarray:
    return wav_channels(wav_bytes, sample_rate=SAMPLE_RATE)


def _tone_segments(samples: np.ndarray) -> list[np.ndarray]:
    tone, gap = int(SAMPLE_RATE * TONE_SECONDS), int(SAMPLE_RATE * GAP_SECONDS)
    return [samples[gap + index * (tone + gap) : gap + index * (tone + gap) + tone] for index in range(3)]


@pytest.mark.parametrize("antiphase,quietest", [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)])
def test_trial_audio_is_stereo_with_one_phase_inverted_and_one_quieter_tone(antiphase, quietest):
    samples = _channels(trial_wav({"antiphase": antiphase, "quietest": quietest}))
    segments = _tone_segments(samples)
    loudness = [np.sqrt(np.mean(segment[:, 0] ** 2)) for segment in segments]
    for index, segment in enumerate(segments):
        left, right = segment[:, 0], segment[:, 1]
        assert np.abs(left).max() > 1000
        if index == antiphase:
            assert np.array_equal(left, -right)
        else:
            assert np.array_equal(left, right)
    in_phase = next(index for index in range(3) if index not in (antiphase, quietest))
    assert loudness[quietest] / loudness[in_phase] == pytest.approx(QUIET_GAIN, abs=0.01)
    assert loudness[antiphase] == pytest.approx(loudness[in_phase], rel=0.01)
    # 200 Hz: the left channel of a tone crosses zero upwards 200 times per second.
    left = segments[in_phase][:, 0]
    upward = np.sum((left[:-1] < 0) & (left[1:] >= 0))
    assert abs(upward - 200 * TONE_SECONDS) <= 2


def test_trials_draw_six_distinct_positions_per_trial():
    trials = headphone_trials_draw(rng=random.Random(1))
    assert len(trials) == 6
    for trial in trials:
        assert trial["antiphase"] != trial["quietest"] and {trial["antiphase"], trial["quietest"]} <= {0, 1, 2}
        assert trial["answer"] is None and trial["fetched_at"] is None
    many = [trial["quietest"] for _ in range(30) for trial in headphone_trials_draw()]
    assert set(many) == {0, 1, 2}


def _answers(check: HeadphoneCheck, correct: int) -> list[int]:
    answers = []
    for index, trial in enumerate(check.trials):
        wrong = trial["antiphase"]  # the loudspeaker listener's answer
        answers.append(trial["quietest"] if index < correct else wrong)
    return answers


def _attempt(rater, correct: int) -> HeadphoneCheck:
    check = headphone_trials_play(headphone_check_start(rater=rater))
    return headphone_check_submit(check=check, answers=_answers(check, correct))


def test_five_of_six_passes_and_four_fails(make_user):
    rater = make_user("ears", "rater")
    failed = _attempt(rater, 4)
    assert (failed.correct_count, failed.passed) == (4, False)
    assert [trial["answer"] for trial in failed.trials] == _answers(failed, 4)
    status = headphone_status(rater=rater)
    assert (status.is_valid, status.is_blocked, status.attempts_left) == (False, False, 1)
    passed = _attempt(rater, 5)
    assert (passed.correct_count, passed.passed) == (5, True)
    assert headphone_status(rater=rater).is_valid


def test_two_failures_block_until_an_admin_resets(make_user):
    rater = make_user("speakers", "rater")
    _attempt(rater, 3)
    _attempt(rater, 4)
    status = headphone_status(rater=rater)
    assert status.is_blocked and status.attempts_left == 0
    with pytest.raises(HeadphoneCheckError, match="reset"):
        headphone_check_start(rater=rater)
    assert headphone_checks_reset(rater=rater) == 2
    assert HeadphoneCheck.objects.filter(rater=rater, passed=False).count() == 2, "attempts are kept"
    status = headphone_status(rater=rater)
    assert status.is_needed and status.attempts_left == 2
    assert _attempt(rater, 6).passed


def test_a_pass_expires_after_the_configured_days(make_user, settings):
    settings.HEADPHONE_CHECK_VALID_DAYS = 10
    rater = make_user("old", "rater")
    _attempt(rater, 2)  # a failure before the pass must not count later
    check = _attempt(rater, 6)
    now = timezone.now()
    assert headphone_status(rater=rater, now=now + timedelta(days=9, hours=23)).is_valid
    later = headphone_status(rater=rater, now=now + timedelta(days=10, minutes=1))
    assert later.is_needed and later.attempts_left == 2
    assert later.valid_until is None and check.completed_at + timedelta(days=10) < now + timedelta(days=10, minutes=1)


def test_an_attempt_is_reused_until_submitted_and_cannot_be_submitted_twice(make_user):
    rater = make_user("twice", "rater")
    first = headphone_check_start(rater=rater)
    assert headphone_check_start(rater=rater).pk == first.pk
    first = headphone_trials_play(first)
    headphone_check_submit(check=first, answers=_answers(first, 6))
    with pytest.raises(HeadphoneCheckError, match="already submitted"):
        headphone_check_submit(check=first, answers=_answers(first, 6))
    with pytest.raises(HeadphoneCheckError, match="still valid"):
        headphone_check_start(rater=rater)


def test_bad_answers_are_refused(make_user):
    check = headphone_check_start(rater=make_user("bad", "rater"))
    with pytest.raises(HeadphoneCheckError, match="expected 6 answers"):
        headphone_check_submit(check=check, answers=[0, 1])
    with pytest.raises(HeadphoneCheckError, match="answer 2 must be sound"):
        headphone_check_submit(check=check, answers=[0, 3, 0, 0, 0, 0])
    with pytest.raises(
        HeadphoneCheckError, match=r"play every trial before answering \(not played: 1, 2, 3, 4, 5, 6\)"
    ):
        headphone_check_submit(check=check, answers=[0] * 6)


# --- pages ---------------------------------------------------------------------------


@pytest.fixture
def rater_with_item(make_user):
    dataset, clips, _ = corpus_build(clip_count=1)
    rater = make_user("listener", "rater")
    campaign = campaign_setup(name="hp", dataset=dataset, task_type="pairwise", split_counts={"HC": 1}, raters=[rater])
    return rater, campaign.assignments.get().items.get()


def test_rating_pages_redirect_to_the_screening_and_back(client, rater_with_item):
    rater, item = rater_with_item
    client.force_login(rater)
    item_url = reverse("ratings:item", args=[item.token])
    response = client.get(item_url)
    assert response.status_code == 302
    check_url = reverse("ratings:headphone_check", args=["antiphase"])
    assert response["Location"].startswith(check_url + "?next=")
    page = client.get(response["Location"])
    assert page.status_code == 200
    check = HeadphoneCheck.objects.get(rater=rater)
    html = page.content.decode()
    assert '"quietest"' not in html and '"antiphase":' not in html and "quietest&quot;" not in html
    for number in range(1, 7):
        assert reverse("ratings:headphone_trial_audio", args=[check.pk, number]) in html
        assert client.get(reverse("ratings:headphone_trial_audio", args=[check.pk, number])).status_code == 200
    answers = {f"trial_{index + 1}": trial["quietest"] + 1 for index, trial in enumerate(check.trials)}
    response = client.post(check_url, {"check_id": check.pk, "next": item_url, **answers})
    assert response.status_code == 302 and response["Location"] == item_url
    assert client.get(item_url).status_code == 200


def test_failing_twice_shows_blocked_and_json_endpoints_refuse(client, rater_with_item):
    rater, item = rater_with_item
    client.force_login(rater)
    check_url = reverse("ratings:headphone_check", args=["antiphase"])
    for _attempt in range(2):
        client.get(check_url)
        check = headphone_trials_play(HeadphoneCheck.objects.get(rater=rater, completed_at__isnull=True))
        wrong = {f"trial_{index + 1}": trial["antiphase"] + 1 for index, trial in enumerate(check.trials)}
        response = client.post(check_url, {"check_id": check.pk, **wrong})
        assert response.status_code == 200
        assert "Not passed: 0 of 6" in response.content.decode()
    assert "ask an administrator" in client.get(check_url).content.decode()
    response = client.post(reverse("ratings:item_listened", args=[item.token]), "{}", content_type="application/json")
    assert response.status_code == 403


def test_trial_audio_only_for_the_owner_and_only_while_open(client, make_user):
    owner, other = make_user("owner", "rater"), make_user("other", "rater")
    check = headphone_check_start(rater=owner)
    url = reverse("ratings:headphone_trial_audio", args=[check.pk, 1])
    client.force_login(other)
    assert client.get(url).status_code == 404
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "audio/wav"
    assert np.array_equal(_channels(response.content), _channels(trial_wav(check.trials[0])))
    assert client.get(reverse("ratings:headphone_trial_audio", args=[check.pk, 7])).status_code == 404
    check = headphone_trials_play(check)
    headphone_check_submit(check=check, answers=_answers(check, 6))
    assert client.get(url).status_code == 404


def test_admin_reset_button(client, make_user):
    rater = make_user("blocked", "rater")
    _attempt(rater, 0)
    _attempt(rater, 0)
    client.force_login(rater)
    assert client.post(reverse("ratings:headphone_reset", args=[rater.pk])).status_code == 403
    client.force_login(make_user("boss", staff=True))
    response = client.post(reverse("ratings:headphone_reset", args=[rater.pk]))
    assert response.status_code == 302
    assert headphone_status(rater=rater).attempts_left == 2


def test_a_valid_pass_skips_the_screening(client, make_user):
    rater = make_user("fresh", "rater")
    headphone_pass_give(rater, days_ago=1)
    client.force_login(rater)
    html = client.get(reverse("ratings:headphone_check", args=["antiphase"])).content.decode()
    assert "valid until" in html
    assert not HeadphoneCheck.objects.filter(rater=rater, completed_at__isnull=True).exists()
