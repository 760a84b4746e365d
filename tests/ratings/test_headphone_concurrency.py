"""Requests racing for one headphone attempt keep the one-play rule and score it once (SQLite and PostgreSQL).

A trial's sound is marked played and an attempt is scored by a compare-and-set on the attempt as read (no row
lock): threads released together by a barrier, each with its own connection and the attempt as read before they
start, stand for a reload, a second tab or a double click arriving at the same moment.
"""

import pytest
from django.db import connection

from ratings.models import HeadphoneCheck
from ratings.services.headphone import (
    HeadphoneCheckError,
    TrialAlreadyPlayedError,
    headphone_check_start,
    headphone_check_submit,
    headphone_checks_reset,
    screen,
    trial_is_played,
    trial_sound_fetch,
)
from tests.ratings.campaign_data import headphone_trials_play
from tests.ratings.test_study_concurrency import _together

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_specific]
THREADS = 6


@pytest.fixture
def attempt(make_user) -> HeadphoneCheck:
    check = headphone_check_start(rater=make_user("racer", "rater"))
    connection.close()  # the threads open their own connections
    return check


def test_the_same_trial_asked_for_at_once_is_served_once(attempt):
    results, errors = _together(THREADS, lambda index: trial_sound_fetch(check=attempt, trial_number=2))

    served = [result for result in results if result is not None]
    assert len(served) == 1 and served[0].startswith(b"RIFF")
    assert len(errors) == THREADS - 1
    assert all(isinstance(error, TrialAlreadyPlayedError) for error in errors), errors
    trials = HeadphoneCheck.objects.get(pk=attempt.pk).trials
    assert [trial_is_played(trial) for trial in trials] == [False, True, False, False, False, False]


def test_every_trial_asked_for_at_once_is_served_and_marked(attempt):
    results, errors = _together(
        len(attempt.trials), lambda index: trial_sound_fetch(check=attempt, trial_number=index + 1)
    )

    assert errors == []
    assert all(result.startswith(b"RIFF") for result in results)
    trials = HeadphoneCheck.objects.get(pk=attempt.pk).trials
    assert all(trial_is_played(trial) for trial in trials), "no trial's mark was lost to another's"


def test_answers_sent_at_once_are_scored_once(attempt):
    check = headphone_trials_play(attempt)
    connection.close()
    test = screen(check.kind)
    right = [test.trial_answer(trial) for trial in check.trials]
    wrong = [(answer + 1) % 3 for answer in right]

    results, errors = _together(
        2, lambda index: headphone_check_submit(check=check, answers=right if index == 0 else wrong)
    )

    scored = [result for result in results if result is not None]
    assert len(scored) == 1 and len(errors) == 1
    assert isinstance(errors[0], HeadphoneCheckError) and "already submitted" in str(errors[0])
    stored = HeadphoneCheck.objects.get(pk=check.pk)
    assert (stored.passed, stored.correct_count) == (scored[0].passed, scored[0].correct_count)
    assert [trial["answer"] for trial in stored.trials] == [trial["answer"] for trial in scored[0].trials]


def test_an_attempt_reset_while_it_is_submitted_is_not_scored(attempt):
    # Given the attempt as its submission read it, every trial played
    check = headphone_trials_play(attempt)
    right = [screen(check.kind).trial_answer(trial) for trial in check.trials]

    # When an administrator resets the rater's attempts before the answers are scored
    assert headphone_checks_reset(rater=check.rater) == 1
    with pytest.raises(HeadphoneCheckError, match="reset"):
        headphone_check_submit(check=check, answers=right)

    # Then the attempt stays reset and unscored
    stored = HeadphoneCheck.objects.get(pk=check.pk)
    assert stored.reset_at is not None
    assert (stored.completed_at, stored.passed, stored.correct_count) == (None, None, None)
    assert [trial["answer"] for trial in stored.trials] == [None] * len(right)
