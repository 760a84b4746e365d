"""The heartbeat of a participant's open page (ratings/views_study_alive.py): while the participant uses the page it
tells the server, so reading counts as work; a closed tab sends nothing, so its share can go back to others."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from ratings.models_study import Participant
from tests.browser.crowd_run import browser_arrive, browser_to_items
from tests.browser.live_server_requests import live_server_requests_finish
from tests.ratings.study_data import pairwise_study, prolific_id, study_media  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]


def _seen_long_ago(participant: Participant):
    long_ago = timezone.now() - timedelta(minutes=5)
    Participant.objects.filter(pk=participant.pk).update(updated_at=long_ago)
    return long_ago


def test_an_open_page_in_use_beats_and_a_closed_one_does_not(browser, live_server, settings, media_root):
    settings.STUDY_HEARTBEAT_SECONDS = 1
    study = pairwise_study(name="heartbeat", questionnaire=[])
    context, page, _ = browser_arrive(browser, live_server, study, {"PROLIFIC_PID": prolific_id()})
    participant = browser_to_items(page, study)
    assert page.get_attribute("#study-clock", "data-alive-url") == f"/study/{study.slug}/alive/"
    long_ago = _seen_long_ago(participant)
    page.mouse.move(200, 300)
    page.mouse.move(220, 320)  # the participant reads, moving the mouse: no request of the page's own
    deadline = time.monotonic() + 60  # a bound for a loaded machine: the loop ends at the first beat
    while Participant.objects.get(pk=participant.pk).updated_at <= long_ago and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Participant.objects.get(pk=participant.pk).updated_at > long_ago, "the open page in use beat"
    context.close()
    live_server_requests_finish(live_server)  # a beat sent while the page was open is no beat of the closed tab
    long_ago = _seen_long_ago(participant)
    time.sleep(3 * settings.STUDY_HEARTBEAT_SECONDS)  # three beats' time: proving that nothing comes needs a wait
    assert Participant.objects.get(pk=participant.pk).updated_at == long_ago, "a closed tab sends nothing"


def test_the_heartbeat_answers_only_the_participant(client, make_user):
    study = pairwise_study(name="heartbeat-api", questionnaire=[])
    assert client.post(f"/study/{study.slug}/alive/").status_code == 404
    assert client.get(f"/study/{study.slug}/alive/").status_code == 405
