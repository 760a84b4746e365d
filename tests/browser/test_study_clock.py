"""The countdown and the leave link of a crowd study in headless Chromium, at 1280 and 390 px: they are on the
study pages and on the rating items, the page counts down, leaving asks first and ends with the platform's
instructions, and when the time runs out on an item page a complete answer is submitted and the end page shown.
Screenshots go to test-artifacts/study_clock_*.png."""

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from ratings.models import AssignmentItem, PairwiseVote
from ratings.models_study import Participant
from ratings.services.study_shares import study_coverage
from tests.browser.test_study_pages import WIDTHS, _new_page, _pairwise_study, _practice_and_start
from tests.ratings.study_data import prolific_id, study_media  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]


def _seconds(label: str) -> int:
    minutes, seconds = label.split(":")
    return int(minutes) * 60 + int(seconds)


def _bar_fits(page) -> None:
    """The bar is visible, inside the window's width, and its time and link do not overlap."""
    box = page.locator("#study-bar").bounding_box()
    width = page.viewport_size["width"]
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1
    time_box = page.locator("#study-clock-time").bounding_box()
    link_box = page.locator("#study-leave-link").bounding_box()
    apart = time_box["x"] + time_box["width"] <= link_box["x"] or link_box["y"] >= time_box["y"] + time_box["height"]
    assert apart, (time_box, link_box)


def _arrive(browser, live_server, study, width: str):
    context, page = _new_page(browser, width=width)
    context.route("https://app.prolific.com/**", lambda route: route.fulfill(status=200, body="<h1>Prolific</h1>"))
    page.goto(
        f"{live_server.url}/study/{study.slug}/?"
        + urlencode({"PROLIFIC_PID": prolific_id(), "STUDY_ID": "c" * 24, "SESSION_ID": "d" * 24})
    )
    return context, page


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_countdown_runs_and_leaving_from_an_item_frees_it(
    browser, live_server, settings, media_root, artifacts, width
):
    settings.STUDY_END_REDIRECT_SECONDS = 30
    study = _pairwise_study(f"clock-leave-{width}", questionnaire=[], screens="none", time_limit_minutes=20)
    context, page = _arrive(browser, live_server, study, width)
    clock = page.locator("#study-clock-time")
    first = clock.inner_text()
    assert 19 * 60 <= _seconds(first) <= 20 * 60, first
    _bar_fits(page)
    page.screenshot(path=str(artifacts / f"study_clock_landing_{width}.png"), full_page=True)
    # The page counts down by itself (no reload).
    page.wait_for_function("(first) => document.getElementById('study-clock-time').textContent !== first", arg=first)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    with page.expect_navigation():
        page.keyboard.press("Enter")  # consent
    _practice_and_start(page)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/ratings/items/" in page.url
    assert page.locator("#study-clock").is_visible() and page.locator("#study-leave-link").is_visible()
    _bar_fits(page)
    page.screenshot(path=str(artifacts / f"study_clock_item_{width}.png"), full_page=True)
    participant = Participant.objects.get(study=study)
    assert study_coverage(study=study).reserved == 3
    with page.expect_navigation():
        page.click("#study-leave-link")
    assert page.url.endswith("/leave/") and "Leave the study?" in page.inner_text("h1")
    page.screenshot(path=str(artifacts / f"study_clock_leave_{width}.png"), full_page=True)
    with page.expect_navigation():
        page.click("#leave-confirm")
    assert page.url.endswith("/end/") and "You left the study" in page.inner_text("#end")
    assert page.locator("#study-clock").count() == 0
    participant.refresh_from_db()
    assert participant.status == "returned"
    coverage = study_coverage(study=study)
    assert (coverage.reserved, coverage.judged) == (0, 0)
    context.close()


def test_when_the_time_runs_out_a_complete_answer_is_submitted_and_the_end_page_shown(
    browser, live_server, settings, media_root, artifacts
):
    settings.STUDY_END_REDIRECT_SECONDS = 30
    study = _pairwise_study("clock-expiry", questionnaire=[], screens="none", time_limit_minutes=20)
    context, page = _arrive(browser, live_server, study, "390")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    _practice_and_start(page)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    participant = Participant.objects.get(study=study)
    # The clip is heard and an answer chosen (not sent); then only a few seconds are left.
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.keyboard.press(" ")
    page.wait_for_function("() => !document.getElementById('submit-button').disabled")
    page.keyboard.press("a")
    page.wait_for_function("() => document.getElementById('rating-form').dataset.draftState === 'saved'")
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    # Twenty seconds: room for a slow reload on a busy machine, which must arrive before the end for the page to
    # submit anything.
    Participant.objects.filter(pk=participant.pk).update(reserved_until=timezone.now() + timedelta(seconds=20))
    page.reload()
    left = page.locator("#study-clock-time").inner_text()
    assert 1 <= _seconds(left) <= 20, left
    page.screenshot(path=str(artifacts / "study_clock_last_seconds_390.png"), full_page=True)
    # The choice was restored from the draft; the countdown ends, the page submits it and shows the end.
    page.wait_for_url("**/end/")
    assert "time limit has passed" in page.inner_text("#end")
    page.screenshot(path=str(artifacts / "study_clock_expired_390.png"), full_page=True)
    vote = PairwiseVote.objects.get(rater=participant.user)
    assert vote.pair_id == AssignmentItem.objects.get(token=token).pair_id
    participant.refresh_from_db()
    assert participant.status == "timed_out"
    coverage = study_coverage(study=study)
    assert (coverage.judged, coverage.reserved) == (0 if vote.pair.gold_choice else 1, 0)
    context.close()
