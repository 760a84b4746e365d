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

import copy
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from types import ModuleType

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from common.compiled_reads import CompiledRead
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


def headphone_checks_read(*, rater: AbstractBaseUser) -> list[HeadphoneCheck]:
    """Every attempt of the rater at any screen, newest first: the statuses and the open attempt of a request come
    from this one read (a rater has a few attempts per validity period)."""
    return list(HeadphoneCheck.objects.filter(rater=rater).order_by("-created_at", "-pk"))


# Read on each trial's sound, three to six times per attempt of every participant in a crowd: compiled once.
_OPEN_ATTEMPT = CompiledRead(
    lambda check_id, rater_id: HeadphoneCheck.objects.filter(
        pk=check_id, rater_id=rater_id, completed_at__isnull=True, reset_at__isnull=True
    ).order_by(),
    check_id=-2_100_000_311,
    rater_id=-2_100_000_312,
)


def headphone_open_attempt(*, check_id: int, rater: AbstractBaseUser) -> HeadphoneCheck | None:
    """The rater's attempt of that id while it is open (not submitted, not reset); None otherwise."""
    return _OPEN_ATTEMPT.first(check_id=check_id, rater_id=rater.pk)


def headphone_status(
    *,
    rater: AbstractBaseUser,
    kind: str = HeadphoneCheck.Kind.ANTIPHASE,
    now: datetime | None = None,
    allowed_failures: int = ALLOWED_FAILURES,
    checks: list[HeadphoneCheck] | None = None,
) -> HeadphoneStatus:
    """`allowed_failures`: failed attempts that block (a crowd study sets its own number of attempts).
    `checks`: the rater's attempts as headphone_checks_read returned them this request (read here when None)."""
    now = now or timezone.now()
    if checks is None:
        checks = headphone_checks_read(rater=rater)
    completed = [check for check in checks if check.kind == kind and check.completed_at is not None]
    passes = [check for check in completed if check.passed]
    last_pass = max(passes, key=lambda check: check.completed_at) if passes else None
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
    # Failures before the latest pass, and those an admin reset, do not count against this round.
    failed = sum(
        1
        for check in completed
        if check.passed is False
        and check.reset_at is None
        and (last_pass is None or check.completed_at > last_pass.completed_at)
    )
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


def headphone_check_start(
    *,
    rater: AbstractBaseUser,
    kind: str = HeadphoneCheck.Kind.ANTIPHASE,
    allowed_failures: int = ALLOWED_FAILURES,
    checks: list[HeadphoneCheck] | None = None,
) -> HeadphoneCheck:
    """The rater's open attempt (a reload keeps it, played trials included), or a new one.

    `checks`: the rater's attempts read this request (headphone_checks_read). Nothing is locked: an attempt
    submitted meanwhile in another tab is refused at its sounds and its answers (trial_sound_fetch,
    headphone_check_submit), which re-check it in the database."""
    if checks is None:
        checks = headphone_checks_read(rater=rater)
    status = headphone_status(rater=rater, kind=kind, allowed_failures=allowed_failures, checks=checks)
    if status.is_blocked:
        raise HeadphoneCheckError("no attempts left at this headphone check: ask an administrator to reset it")
    if status.is_valid:
        raise HeadphoneCheckError("your headphone check is still valid")
    for check in checks:
        if check.kind == kind and check.completed_at is None and check.reset_at is None:
            return check
    return HeadphoneCheck.objects.create(rater=rater, kind=kind, trials=headphone_trials_draw(kind=kind))


def trial_is_played(trial: dict) -> bool:
    return bool(trial.get("fetched_at"))


def trial_sound_fetch(*, check: HeadphoneCheck, trial_number: int) -> bytes:
    """The trial's sound as a WAV, once per attempt: the trial is marked played before it is sent.

    Raises TrialAlreadyPlayedError for a second request (a reload, a replay, another tab).
    """
    # A compare-and-set on the trials as read (one UPDATE, no lock): of two requests racing for the attempt, the
    # later write matches no row and reads the attempt again, where a trial the other marked played is refused.
    # Each lost race means another trial was marked or the attempt closed, so the loop ends.
    for _ in range(len(check.trials) + 2):
        if check.completed_at is not None or check.reset_at is not None:
            raise HeadphoneCheckError("this attempt is closed")
        if not 1 <= trial_number <= len(check.trials):
            raise HeadphoneCheckError(f"there is no trial {trial_number}")
        if trial_is_played(check.trials[trial_number - 1]):
            raise TrialAlreadyPlayedError(f"trial {trial_number} was played already; each trial plays once")
        trials = [dict(trial) for trial in check.trials]
        trials[trial_number - 1]["fetched_at"] = timezone.now().isoformat()
        marked = HeadphoneCheck.objects.filter(
            pk=check.pk, trials=check.trials, completed_at__isnull=True, reset_at__isnull=True
        ).update(trials=trials, updated_at=timezone.now())
        if marked:
            return trial_wav(kind=check.kind, trial=trials[trial_number - 1])
        check = HeadphoneCheck.objects.get(pk=check.pk)
    raise HeadphoneCheckError("this attempt changed while its sound was asked for; try again")


def _submit_refusal(check: HeadphoneCheck, answers: list[int]) -> str:
    """Why `answers` cannot be scored on the attempt as read ("" when they can)."""
    if check.completed_at is not None:
        return "this headphone check was already submitted"
    if check.reset_at is not None:
        return "this headphone check was reset by an administrator; start it again"
    if len(answers) != len(check.trials):
        return f"expected {len(check.trials)} answers, got {len(answers)}"
    for index, answer in enumerate(answers):
        if answer not in (0, 1, 2):
            return f"answer {index + 1} must be sound 1, 2 or 3"
    unplayed = [str(index + 1) for index, trial in enumerate(check.trials) if not trial_is_played(trial)]
    if unplayed:
        return f"play every trial before answering (not played: {', '.join(unplayed)})"
    return ""


def headphone_check_submit(*, check: HeadphoneCheck, answers: list[int]) -> HeadphoneCheck:
    """Score an attempt: `answers[i]` is the choice (0..2) the rater made in trial i. `check`: the attempt as read
    (this request, or earlier: a refusal is only given on the attempt read again here)."""
    test = screen(check.kind)
    # A compare-and-set on the attempt as read (one UPDATE, no lock): a second submission (another tab, a double
    # click) or a sound marked played meanwhile matches no row, and the attempt is read again and judged afresh.
    for is_fresh in (False, True, True):
        refusal = _submit_refusal(check, answers)
        if refusal and is_fresh:
            raise HeadphoneCheckError(refusal)
        if not refusal:
            trials = [{**trial, "answer": answer} for trial, answer in zip(check.trials, answers, strict=True)]
            correct_count = sum(1 for trial in trials if trial["answer"] == test.trial_answer(trial))
            now = timezone.now()
            scored = {
                "trials": trials,
                "correct_count": correct_count,
                "passed": correct_count >= test.PASS_MARK,
                "completed_at": now,
                "updated_at": now,
            }
            # An attempt reset meanwhile (an administrator's reset) no longer counts: it must not be scored.
            open_as_read = HeadphoneCheck.objects.filter(
                pk=check.pk, completed_at__isnull=True, reset_at__isnull=True, trials=check.trials
            )
            if open_as_read.update(**scored):
                submitted = copy.copy(check)
                for name, value in scored.items():
                    setattr(submitted, name, value)
                return submitted
        check = HeadphoneCheck.objects.get(pk=check.pk)
    raise HeadphoneCheckError("this headphone check changed while it was submitted; try again")


@transaction.atomic
def headphone_checks_reset(*, rater: AbstractBaseUser) -> int:
    """Let a blocked rater try again (every screen): failed and open attempts stop counting (they are kept)."""
    return (
        HeadphoneCheck.objects.filter(rater=rater, reset_at__isnull=True)
        .exclude(passed=True)
        .update(reset_at=timezone.now())
    )


def trial_wav(*, kind: str, trial: dict) -> bytes:
    """A trial's sound as a WAV. An antiphase trial is one of six layouts (where its antiphase and its quiet tone
    are), whose WAVs are made once per process: making one costs more CPU than the rest of its request. A Huggins
    trial's noise comes from its own seed, different for every trial, and is made each time."""
    if kind == HeadphoneCheck.Kind.ANTIPHASE:
        return _antiphase_trial_wav(trial["antiphase"], trial["quietest"])
    return wav_bytes(screen(kind).trial_samples(trial))


@cache
def _antiphase_trial_wav(antiphase_position: int, quietest_position: int) -> bytes:
    return wav_bytes(antiphase.trial_samples({"antiphase": antiphase_position, "quietest": quietest_position}))


@cache
def calibration_wav(*, kind: str = HeadphoneCheck.Kind.ANTIPHASE) -> bytes:
    """Made once per process and screen: the same sound for everyone."""
    return wav_bytes(screen(kind).calibration_samples())
