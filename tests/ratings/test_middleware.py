"""The study window opened from MTurk's frame keeps its opener: its pages send `Cross-Origin-Opener-Policy:
unsafe-none`; every other page keeps the site's `same-origin` (ratings/middleware.py)."""

import re

import pytest
from django.test import Client

from tests.ratings.study_data import (
    arrival_url,
    mturk_worker_id,
    pairwise_study,
    prolific_arrive,
    study_media,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

COOP = "Cross-Origin-Opener-Policy"
ENTER_LINK = re.compile(r'href="([^"]+\?framed=1)"')
STATUS_URL = re.compile(r'data-status-url="([^"]+)"')


def _mturk_landing(study) -> str:
    """MTurk's frame: the arrival's landing page; returns its link to the study window."""
    return _mturk_frame_links(study)[0]


def _mturk_frame_links(study) -> tuple[str, str]:
    """MTurk's frame: the arrival's landing page; returns its link to the study window and the URL it polls."""
    frame = Client()
    landing = frame.get(
        arrival_url(
            study,
            workerId=mturk_worker_id(),
            assignmentId="F" * 30,
            hitId="H" * 30,
            turkSubmitTo="https://workersandbox.mturk.com",
        )
    )
    assert landing.status_code == 200 and landing[COOP] == "same-origin", "the frame's own page keeps the policy"
    page = landing.content.decode()
    return ENTER_LINK.search(page).group(1), STATUS_URL.search(page).group(1)


def test_the_window_opened_from_the_frame_keeps_its_opener_on_every_page():
    study = pairwise_study(platforms=["mturk"], reward_currency="USD")
    window = Client()
    entered = window.get(_mturk_landing(study))
    assert entered.status_code == 302 and entered[COOP] == "unsafe-none", "the redirect too: it would cut the link"
    landing = window.get(entered["Location"])
    assert landing.status_code == 200 and landing[COOP] == "unsafe-none"
    started = window.post(entered["Location"])
    consent = window.get(started["Location"])
    assert consent.request["PATH_INFO"].endswith("/consent/") and consent[COOP] == "unsafe-none"


def test_other_participants_pages_keep_the_sites_policy():
    study = pairwise_study(platforms=["prolific", "mturk"], reward_currency="USD")
    window = Client()
    entered = window.get(_mturk_landing(study).removesuffix("?framed=1"))  # the link opened at the top level
    assert entered.status_code == 302 and entered[COOP] == "same-origin"
    client, arrived = prolific_arrive(study)
    assert arrived[COOP] == "same-origin"
    assert client.get(arrived["Location"])[COOP] == "same-origin"


def test_the_frames_status_poll_without_a_session_cookie_does_not_vary_on_cookies():
    # Given the worker's study window, entered through the frame's link
    study = pairwise_study(platforms=["mturk"], reward_currency="USD")
    enter_url, status_url = _mturk_frame_links(study)
    assert Client().get(enter_url)[COOP] == "unsafe-none"

    # When the frame polls without a cookie (MTurk's page is another site: the frame's cookies are not sent)
    poll = Client().get(status_url)

    # Then the answer is the same for anybody (no session read): caches need not keep one per cookie
    assert poll.status_code == 200 and poll.json()["finished"] is False
    assert "Cookie" not in poll.get("Vary", "")


def test_an_accounts_switch_confirmation_in_the_window_opened_from_the_frame_keeps_its_opener(make_user):
    # Given a rater's account signed in in the browser where the worker opens the study from the frame
    study = pairwise_study(platforms=["mturk"], reward_currency="USD")
    enter_url = _mturk_landing(study)
    window = Client()
    window.force_login(make_user("someone-rater", "rater"))

    # When the link asks the account first, that page keeps the opener, and so does the confirmation's answer
    asked = window.get(enter_url)
    assert asked.status_code == 200 and "data-switch-confirm" in asked.content.decode()
    assert asked[COOP] == "unsafe-none"
    going_on = window.post(enter_url, {"continue_as_participant": "1"})
    assert going_on.status_code == 302 and going_on[COOP] == "unsafe-none"
    landing = window.get(going_on["Location"])
    assert landing.status_code == 200 and landing[COOP] == "unsafe-none"

    # The same link opened at the top level keeps the site's policy on that page
    elsewhere = Client()
    elsewhere.force_login(make_user("another-rater", "rater"))
    asked = elsewhere.get(enter_url.removesuffix("?framed=1"))
    assert asked.status_code == 200 and "data-switch-confirm" in asked.content.decode()
    assert asked[COOP] == "same-origin"
