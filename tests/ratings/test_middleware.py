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


def _mturk_landing(study) -> str:
    """MTurk's frame: the arrival's landing page; returns its link to the study window."""
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
    return ENTER_LINK.search(landing.content.decode()).group(1)


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
