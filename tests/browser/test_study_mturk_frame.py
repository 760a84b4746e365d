"""MTurk's frame and the study window it opens, in headless Chromium: the window's end page tells the frame, which
then asks the status endpoint at once instead of polling every few seconds; without that message (a window opened
without an opener) the frame learns on its slow poll or when the worker comes back to it.

The HIT's frame is on another site (a stand-in for MTurk's worker site) and the study window on the live server,
as on MTurk. Playwright's clock stands still once the frame has asked on arrival, and is only pushed forward where a
test stands for time passing: on a busy machine the study window's pages can take longer than the frame's 30 s
fallback poll, which would then ask on its own and blur what these tests tell apart (the clip players, the end page's
message and the worker's return need no timer).
"""

from urllib.parse import urlencode

import pytest

from ratings.models_study import Participant
from tests.browser.test_study_pages import (
    MTURK_SUBMIT,
    WIDTHS,
    _mturk_capture,
    _pairwise_study,
    _walk_study_window,
    mturk_worker_site,  # noqa: F401, F811 (a fixture)
)
from tests.browser.timeouts import waits_generous
from tests.ratings.study_data import mturk_worker_id, study_media  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]

RETURN_HIT = "please return the HIT"


@pytest.fixture
def mturk_site(settings, mturk_worker_site):  # noqa: F811 (the imported fixture)
    """MTurk's worker site showing the HIT's landing page in a frame (test_study_pages' stand-in), with end pages
    that go on after a second; yields (origin, frames) where frames["src"] is the frame's URL."""
    settings.STUDY_END_REDIRECT_SECONDS = 1
    return mturk_worker_site


def _hit_page(browser, live_server, mturk_site, name: str):
    """A study on MTurk only and the worker's tab on MTurk's site showing its HIT; the frame's first status poll
    has been answered and the clock paused. Returns (study, context, page, frame, polls, captured): polls lists the
    status requests."""
    study = _pairwise_study(name, platforms=["mturk"], reward_currency="USD", screens="none", questionnaire=[])
    origin, frames = mturk_site
    frames["src"] = f"{live_server.url}/study/{study.slug}/?" + urlencode(
        {"workerId": mturk_worker_id(), "assignmentId": "F" * 30, "hitId": "H" * 30, "turkSubmitTo": MTURK_SUBMIT}
    )
    context = browser.new_context(viewport=WIDTHS["1280"])
    context.clock.install()
    waits_generous(context)  # with the clock paused no timer can answer meanwhile: only a real failure waits it out
    page = context.new_page()
    captured, polls = [], []
    _mturk_capture(context, captured)
    context.on("request", lambda request: polls.append(request.url) if "/status/" in request.url else None)
    with page.expect_response(lambda response: "/status/" in response.url):
        page.goto(f"{origin}/projects/1/tasks/1")
    frame = page.frame_locator("#hit")
    frame.locator("#mturk-frame").wait_for(state="visible")
    # A few seconds ahead (pause_at cannot go back, and the clock runs on while this call travels): the fallback
    # poll, 30 s away, stays ahead.
    context.clock.pause_at(page.evaluate("() => Date.now()") / 1000 + 5)
    return study, context, page, frame, polls, captured


def _waiting_text(frame) -> str:
    return frame.locator(".mturk-waiting").inner_text()


def test_the_end_page_tells_the_frame_which_submits_at_once(browser, live_server, mturk_site, artifacts):
    study, context, page, frame, polls, captured = _hit_page(browser, live_server, mturk_site, "frame-told")
    assert polls and len(polls) == 1, "the frame asks once on arrival"
    for width, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(artifacts / f"study_mturk_frame_told_{width}.png"), full_page=True)
    page.set_viewport_size(WIDTHS["1280"])
    with context.expect_page() as opened:
        frame.locator("#mturk-frame a.button").click()
    window = opened.value
    # The worker is a while in the study window: a frame polling every few seconds asks meanwhile, one that
    # waits for the study window's message does not (its fallback poll is 30 s away, and the clock stays paused).
    context.clock.fast_forward("00:12")
    window.wait_for_load_state()
    assert window.evaluate("() => window.opener !== null"), "the study window keeps its opener"
    _walk_study_window(window)
    assert window.inner_text("#completion-code") == study.completion_code
    assert "the HIT submits itself there" in window.inner_text("#manual-submit")
    # The clock stands still short of the 30 s fallback poll: only the message can have made the frame ask.
    page.wait_for_url(f"{MTURK_SUBMIT}/mturk/externalSubmit")
    assert captured == [{"assignmentId": ["F" * 30], "completion_code": [study.completion_code]}]
    assert len(polls) == 2, f"one poll on arrival, one when told; not one every few seconds: {polls}"
    context.close()


def _leave(window) -> None:
    """The worker starts the study and leaves it at its first page: the end page asks to return the HIT."""
    with window.expect_navigation():
        window.keyboard.press("Enter")
    assert window.url.endswith("/consent/")
    with window.expect_navigation():
        window.click("#study-leave-link")
    with window.expect_navigation():
        window.click("#leave-confirm")
    assert window.locator("#end").get_attribute("data-status") == "returned"
    assert window.locator("#return-hit").is_visible()


def test_a_window_without_opener_is_found_by_the_slow_poll(browser, live_server, mturk_site, artifacts):
    study, context, page, frame, polls, captured = _hit_page(browser, live_server, mturk_site, "frame-no-opener")
    # The study link opened without an opener (copied into another window, or a browser that drops it).
    href = frame.locator("#mturk-frame a.button").get_attribute("href")
    window = context.new_page()
    window.goto(f"{live_server.url}{href}")
    assert window.evaluate("() => window.opener === null")
    _leave(window)
    assert Participant.objects.get(study=study).status == "returned"
    assert "Waiting" in _waiting_text(frame) and len(polls) == 1, "nobody told the frame, nor did it ask again"
    context.clock.fast_forward("00:31")
    frame.locator(".mturk-waiting", has_text=RETURN_HIT).wait_for()
    assert len(polls) == 2, polls
    assert captured == [], "a HIT to return is never submitted"
    page.bring_to_front()
    for width, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(artifacts / f"study_mturk_frame_return_{width}.png"), full_page=True)
    context.close()


def test_without_the_message_the_frame_asks_when_the_worker_comes_back(browser, live_server, mturk_site):
    study, context, page, frame, polls, captured = _hit_page(browser, live_server, mturk_site, "frame-comes-back")
    # The end page's message lost (its script not delivered): only the worker's return can make the frame ask.
    context.route(
        "**/study_end_opener.js", lambda route: route.fulfill(status=200, content_type="text/javascript", body="")
    )
    with context.expect_page() as opened:
        frame.locator("#mturk-frame a.button").click()
    window = opened.value
    window.wait_for_load_state()
    _leave(window)
    assert "Waiting" in _waiting_text(frame) and len(polls) == 1, "nobody told the frame, nor did it ask again"
    page.locator("h1").click()  # on MTurk's page, outside the HIT's frame
    page.bring_to_front()
    frame.locator("h2").click()  # back into the HIT
    # The clock stands still short of the fallback poll: only the worker's return can make the frame ask.
    frame.locator(".mturk-waiting", has_text=RETURN_HIT).wait_for()
    assert len(polls) == 2, polls
    assert captured == []
    context.close()
