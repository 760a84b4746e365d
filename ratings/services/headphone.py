"""Headphone screening: the antiphase test of Woods et al. (2017, Atten. Percept. Psychophys. 79:2064).

Each trial plays three 200 Hz tones (1 s, 100 ms raised-cosine ramps, 0.5 s apart) and
asks which one is quietest. One tone is 6 dB quieter (the right answer); another is at
full level but in antiphase between the ears (left = -right); the third is at full level
in phase. Over headphones the antiphase tone sounds as loud as the in-phase one; over
loudspeakers the two channels partly cancel in the air, so loudspeaker listeners tend to
pick the antiphase tone. Six trials, pass at 5 or more correct.

The order of the tones is drawn per attempt with the operating system's random source
and only the server knows it: pages get trial numbers, the audio comes from
`trial_wav`, and the stored answers are revealed only as a count after submission.

A rater has two attempts (one retry); after two failures they are blocked until an admin
resets them (`headphone_checks_reset`, which keeps the attempts and marks them reset).
A pass is valid for `settings.HEADPHONE_CHECK_VALID_DAYS` days; failures before the
latest pass do not count against the next round.
"""

import io
import random
import wave
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ratings.models import HeadphoneCheck

TRIAL_COUNT = 6
PASS_MARK = 5
ALLOWED_FAILURES = 2
SAMPLE_RATE = 44100
TONE_HZ = 200.0
TONE_SECONDS = 1.0
RAMP_SECONDS = 0.1
GAP_SECONDS = 0.5
# About -10 dBFS: loud enough to hear after calibration, far from clipping.
REFERENCE_AMPLITUDE = 0.3
QUIET_GAIN = 0.5  # -6 dB
CALIBRATION_SECONDS = 4.0

IN_PHASE = "in_phase"
ANTIPHASE = "antiphase"
QUIET = "quiet"


class HeadphoneCheckError(ValueError):
    """An attempt cannot be started or submitted (message says why)."""


@dataclass(frozen=True)
class HeadphoneStatus:
    is_valid: bool
    is_blocked: bool
    valid_until: datetime | None
    failed_attempts: int

    @property
    def attempts_left(self) -> int:
        return 0 if self.is_valid else max(0, ALLOWED_FAILURES - self.failed_attempts)

    @property
    def is_needed(self) -> bool:
        return not self.is_valid and not self.is_blocked


def headphone_status(*, rater: AbstractBaseUser, now: datetime | None = None) -> HeadphoneStatus:
    now = now or timezone.now()
    completed = HeadphoneCheck.objects.filter(rater=rater, completed_at__isnull=False)
    last_pass = completed.filter(passed=True).order_by("-completed_at").first()
    valid_until = last_pass.completed_at + timedelta(days=settings.HEADPHONE_CHECK_VALID_DAYS) if last_pass else None
    if valid_until and valid_until > now:
        return HeadphoneStatus(is_valid=True, is_blocked=False, valid_until=valid_until, failed_attempts=0)
    failures = completed.filter(passed=False, reset_at__isnull=True)
    if last_pass:
        failures = failures.filter(completed_at__gt=last_pass.completed_at)
    failed = failures.count()
    return HeadphoneStatus(
        is_valid=False, is_blocked=failed >= ALLOWED_FAILURES, valid_until=None, failed_attempts=failed
    )


def headphone_trials_draw(*, rng: random.Random | None = None) -> list[dict]:
    """Six trials, each with the positions (0..2) of the antiphase and the quiet tone; answers empty."""
    rng = rng or random.SystemRandom()
    trials = []
    for _ in range(TRIAL_COUNT):
        tones = [IN_PHASE, ANTIPHASE, QUIET]
        rng.shuffle(tones)
        trials.append({"antiphase": tones.index(ANTIPHASE), "quietest": tones.index(QUIET), "answer": None})
    return trials


@transaction.atomic
def headphone_check_start(*, rater: AbstractBaseUser) -> HeadphoneCheck:
    """The rater's open attempt, or a new one; refuses blocked raters and raters with a valid pass."""
    status = headphone_status(rater=rater)
    if status.is_blocked:
        raise HeadphoneCheckError("two failed headphone checks: ask an administrator to reset your screening")
    if status.is_valid:
        raise HeadphoneCheckError("your headphone check is still valid")
    open_attempt = (
        HeadphoneCheck.objects.select_for_update()
        .filter(rater=rater, completed_at__isnull=True, reset_at__isnull=True)
        .order_by("-created_at")
        .first()
    )
    if open_attempt:
        return open_attempt
    return HeadphoneCheck.objects.create(rater=rater, trials=headphone_trials_draw())


@transaction.atomic
def headphone_check_submit(*, check: HeadphoneCheck, answers: list[int]) -> HeadphoneCheck:
    """Score an attempt: `answers[i]` is the tone (0..2) the rater found quietest in trial i."""
    check = HeadphoneCheck.objects.select_for_update().get(pk=check.pk)
    if check.completed_at is not None:
        raise HeadphoneCheckError("this headphone check was already submitted")
    if len(answers) != len(check.trials):
        raise HeadphoneCheckError(f"expected {len(check.trials)} answers, got {len(answers)}")
    for index, answer in enumerate(answers):
        if answer not in (0, 1, 2):
            raise HeadphoneCheckError(f"answer {index + 1} must be tone 1, 2 or 3")
    trials = [{**trial, "answer": answer} for trial, answer in zip(check.trials, answers, strict=True)]
    check.trials = trials
    check.correct_count = sum(1 for trial in trials if trial["answer"] == trial["quietest"])
    check.passed = check.correct_count >= PASS_MARK
    check.completed_at = timezone.now()
    check.save(update_fields=["trials", "correct_count", "passed", "completed_at", "updated_at"])
    return check


@transaction.atomic
def headphone_checks_reset(*, rater: AbstractBaseUser) -> int:
    """Let a blocked rater try again: their failed and open attempts stop counting (they are kept)."""
    return (
        HeadphoneCheck.objects.filter(rater=rater, reset_at__isnull=True)
        .exclude(passed=True)
        .update(reset_at=timezone.now())
    )


def _tone(kind: str) -> np.ndarray:
    """One tone as float samples, shape (n, 2): columns are the left and right ears."""
    time = np.arange(int(SAMPLE_RATE * TONE_SECONDS)) / SAMPLE_RATE
    ramp_length = int(SAMPLE_RATE * RAMP_SECONDS)
    envelope = np.ones_like(time)
    ramp = 0.5 * (1 - np.cos(np.pi * np.arange(ramp_length) / ramp_length))
    envelope[:ramp_length] = ramp
    envelope[-ramp_length:] = ramp[::-1]
    gain = REFERENCE_AMPLITUDE * (QUIET_GAIN if kind == QUIET else 1.0)
    left = gain * envelope * np.sin(2 * np.pi * TONE_HZ * time)
    right = -left if kind == ANTIPHASE else left
    return np.column_stack([left, right])


def _wav_bytes(samples: np.ndarray) -> bytes:
    pcm = np.round(np.clip(samples, -1, 1) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(2)
        output.setsampwidth(2)
        output.setframerate(SAMPLE_RATE)
        output.writeframes(pcm.tobytes())
    return buffer.getvalue()


def trial_wav(trial: dict) -> bytes:
    """The three tones of a trial as a 16-bit stereo WAV, in the trial's order."""
    kinds = [IN_PHASE] * 3
    kinds[trial["antiphase"]] = ANTIPHASE
    kinds[trial["quietest"]] = QUIET
    gap = np.zeros((int(SAMPLE_RATE * GAP_SECONDS), 2))
    parts = [gap]
    for kind in kinds:
        parts.extend([_tone(kind), gap])
    return _wav_bytes(np.concatenate(parts))


def calibration_wav() -> bytes:
    """In-phase tones at the full test level, for setting a comfortable volume before the test."""
    repeats = int(CALIBRATION_SECONDS / (TONE_SECONDS + GAP_SECONDS))
    gap = np.zeros((int(SAMPLE_RATE * GAP_SECONDS), 2))
    parts = []
    for _ in range(repeats):
        parts.extend([_tone(IN_PHASE), gap])
    return _wav_bytes(np.concatenate(parts))
