"""Headphone screening on the server: attempts, the one-play rule, scoring, blocking and resets.

Two screens (the sounds are in ratings/screening/):
- antiphase (Woods et al. 2017): every rater passes it before rating;
- Huggins pitch (Milne et al. 2021): also required in campaigns with `requires_huggins`.

The layout of each attempt is drawn with the operating system's random source and stays on the
server: pages get trial numbers, a trial's sound is served once per attempt (`trial_sound_fetch`
marks it played; a second request is refused, so a reload or a replay cannot hear it again), and
after submission the rater learns only the count.

A rater has two attempts per screen (one retry); after two failures they are blocked until an
admin resets them (`headphone_checks_reset`, which keeps the attempts and marks them reset). A
pass is valid for `settings.HEADPHONE_CHECK_VALID_DAYS` days; failures before the latest pass do
not count against the next round.
"""

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import ModuleType

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ratings.models import Campaign, HeadphoneCheck
from ratings.screening import antiphase, huggins, wav_bytes

ALLOWED_FAILURES = 2
SCREENS: dict[str, ModuleType] = {HeadphoneCheck.Kind.ANTIPHASE: antiphase, HeadphoneCheck.Kind.HUGGINS: huggins}


class HeadphoneCheckError(ValueError):
    """An attempt cannot be started or submitted (message says why)."""


class TrialAlreadyPlayedError(HeadphoneCheckError):
    """The trial's sound was served once in this attempt already."""


@dataclass(frozen=True)
class HeadphoneStatus:
    kind: str
    is_valid: bool
    is_blocked: bool
    valid_until: datetime | None
    failed_attempts: int
    allowed_failures: int = ALLOWED_FAILURES

    @property
    def attempts_left(self) -> int:
        return 0 if self.is_valid else max(0, self.allowed_failures - self.failed_attempts)

    @property
    def is_needed(self) -> bool:
        return not self.is_valid and not self.is_blocked

    @property
    def label(self) -> str:
        return HeadphoneCheck.Kind(self.kind).label


def screen(kind: str) -> ModuleType:
    return SCREENS[kind]


def headphone_status(
    *,
    rater: AbstractBaseUser,
    kind: str = HeadphoneCheck.Kind.ANTIPHASE,
    now: datetime | None = None,
    allowed_failures: int = ALLOWED_FAILURES,
) -> HeadphoneStatus:
    """`allowed_failures`: failed attempts that block (a crowd study sets its own number of attempts)."""
    now = now or timezone.now()
    completed = HeadphoneCheck.objects.filter(rater=rater, kind=kind, completed_at__isnull=False)
    last_pass = completed.filter(passed=True).order_by("-completed_at").first()
    valid_until = last_pass.completed_at + timedelta(days=settings.HEADPHONE_CHECK_VALID_DAYS) if last_pass else None
    if valid_until and valid_until > now:
        return HeadphoneStatus(
            kind=kind,
            is_valid=True,
            is_blocked=False,
            valid_until=valid_until,
            failed_attempts=0,
            allowed_failures=allowed_failures,
        )
    failures = completed.filter(passed=False, reset_at__isnull=True)
    if last_pass:
        failures = failures.filter(completed_at__gt=last_pass.completed_at)
    failed = failures.count()
    return HeadphoneStatus(
        kind=kind,
        is_valid=False,
        is_blocked=failed >= allowed_failures,
        valid_until=None,
        failed_attempts=failed,
        allowed_failures=allowed_failures,
    )


def screens_required(*, campaign: Campaign | None) -> list[str]:
    """The screens a rater must hold to rate in `campaign` (None: the one every rater takes)."""
    kinds = [HeadphoneCheck.Kind.ANTIPHASE]
    if campaign is not None and campaign.requires_huggins:
        kinds.append(HeadphoneCheck.Kind.HUGGINS)
    return kinds


def screen_missing(*, rater: AbstractBaseUser, campaign: Campaign | None) -> HeadphoneStatus | None:
    """The first required screen the rater does not hold a valid pass of, or None."""
    for kind in screens_required(campaign=campaign):
        status = headphone_status(rater=rater, kind=kind)
        if not status.is_valid:
            return status
    return None


def headphone_trials_draw(*, kind: str = HeadphoneCheck.Kind.ANTIPHASE, rng: random.Random | None = None) -> list:
    """The secret layout of a new attempt, each trial unplayed and unanswered."""
    trials = screen(kind).trials_draw(rng or random.SystemRandom())
    return [{**trial, "answer": None, "fetched_at": None} for trial in trials]


@transaction.atomic
def headphone_check_start(
    *, rater: AbstractBaseUser, kind: str = HeadphoneCheck.Kind.ANTIPHASE, allowed_failures: int = ALLOWED_FAILURES
) -> HeadphoneCheck:
    """The rater's open attempt (a reload keeps it, played trials included), or a new one."""
    status = headphone_status(rater=rater, kind=kind, allowed_failures=allowed_failures)
    if status.is_blocked:
        raise HeadphoneCheckError("no attempts left at this headphone check: ask an administrator to reset it")
    if status.is_valid:
        raise HeadphoneCheckError("your headphone check is still valid")
    open_attempt = (
        HeadphoneCheck.objects.select_for_update()
        .filter(rater=rater, kind=kind, completed_at__isnull=True, reset_at__isnull=True)
        .order_by("-created_at")
        .first()
    )
    if open_attempt:
        return open_attempt
    return HeadphoneCheck.objects.create(rater=rater, kind=kind, trials=headphone_trials_draw(kind=kind))


def trial_is_played(trial: dict) -> bool:
    return bool(trial.get("fetched_at"))


def trial_sound_fetch(*, check: HeadphoneCheck, trial_number: int) -> bytes:
    """The trial's sound as a WAV, once per attempt: the trial is marked played before it is sent.

    Raises TrialAlreadyPlayedError for a second request (a reload, a replay, another tab).
    """
    with transaction.atomic():
        check = HeadphoneCheck.objects.select_for_update().get(pk=check.pk)
        if check.completed_at is not None or check.reset_at is not None:
            raise HeadphoneCheckError("this attempt is closed")
        if not 1 <= trial_number <= len(check.trials):
            raise HeadphoneCheckError(f"there is no trial {trial_number}")
        trial = check.trials[trial_number - 1]
        if trial_is_played(trial):
            raise TrialAlreadyPlayedError(f"trial {trial_number} was played already; each trial plays once")
        trial["fetched_at"] = timezone.now().isoformat()
        check.save(update_fields=["trials", "updated_at"])
    return wav_bytes(screen(check.kind).trial_samples(trial))


@transaction.atomic
def headphone_check_submit(*, check: HeadphoneCheck, answers: list[int]) -> HeadphoneCheck:
    """Score an attempt: `answers[i]` is the choice (0..2) the rater made in trial i."""
    check = HeadphoneCheck.objects.select_for_update().get(pk=check.pk)
    if check.completed_at is not None:
        raise HeadphoneCheckError("this headphone check was already submitted")
    if len(answers) != len(check.trials):
        raise HeadphoneCheckError(f"expected {len(check.trials)} answers, got {len(answers)}")
    for index, answer in enumerate(answers):
        if answer not in (0, 1, 2):
            raise HeadphoneCheckError(f"answer {index + 1} must be sound 1, 2 or 3")
    unplayed = [str(index + 1) for index, trial in enumerate(check.trials) if not trial_is_played(trial)]
    if unplayed:
        raise HeadphoneCheckError(f"play every trial before answering (not played: {', '.join(unplayed)})")
    test = screen(check.kind)
    trials = [{**trial, "answer": answer} for trial, answer in zip(check.trials, answers, strict=True)]
    check.trials = trials
    check.correct_count = sum(1 for trial in trials if trial["answer"] == test.trial_answer(trial))
    check.passed = check.correct_count >= test.PASS_MARK
    check.completed_at = timezone.now()
    check.save(update_fields=["trials", "correct_count", "passed", "completed_at", "updated_at"])
    return check


@transaction.atomic
def headphone_checks_reset(*, rater: AbstractBaseUser) -> int:
    """Let a blocked rater try again (every screen): failed and open attempts stop counting (they are kept)."""
    return (
        HeadphoneCheck.objects.filter(rater=rater, reset_at__isnull=True)
        .exclude(passed=True)
        .update(reset_at=timezone.now())
    )


def calibration_wav(*, kind: str = HeadphoneCheck.Kind.ANTIPHASE) -> bytes:
    return wav_bytes(screen(kind).calibration_samples())
