"""A Redis outage does not sign anybody out or stop them: the sessions config/settings.py chooses with REDIS_URL are
served from the database while the cache is unreachable, and signing out still ends the session.

The settings are those config/settings.py chooses for a REDIS_URL at a port where nothing listens (read in a process
of their own); Django's cached_db store would answer every signed-in request of this test with an error.
"""

import logging

import pytest
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.test import Client
from django.urls import reverse
from redis.exceptions import ConnectionError as RedisConnectionError

import config.sessions
from tests.operations.test_sessions_on_redis import settings_chosen
from tests.ratings.study_data import (
    item_answer_post,
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

# Port 1 (tcpmux) is not served on a test machine: connecting is refused at once.
DEAD_REDIS_URL = "redis://127.0.0.1:1/0"


@pytest.fixture(scope="module")
def dead_redis_settings() -> dict:
    return settings_chosen(DEAD_REDIS_URL)


@pytest.fixture
def redis_down(settings, dead_redis_settings, monkeypatch):
    """This process on the sessions and cache chosen for a Redis that does not answer; the outage not logged yet."""
    settings.CACHES = dead_redis_settings["CACHES"]
    settings.SESSION_ENGINE = dead_redis_settings["SESSION_ENGINE"]
    monkeypatch.setattr(config.sessions, "_outage_logged", False)
    with pytest.raises(RedisConnectionError):
        caches["default"].get("anything")  # the cache is down indeed


@pytest.mark.django_db
@pytest.mark.usefixtures("study_media", "redis_down")
def test_a_participant_rates_and_signs_out_while_redis_is_down(caplog):
    # Given a participant who arrives from their study link while Redis is down
    caplog.set_level(logging.WARNING)
    study = pairwise_study()
    client = Client()
    _, arrival = prolific_arrive(study, client=client)
    assert arrival.status_code == 302
    assert client.get(arrival["Location"]).status_code == 200  # the landing, signed in
    participant = walk_to_items(client, study)
    session_key = client.cookies["sessionid"].value
    assert Session.objects.filter(session_key=session_key).exists()

    # When they open their first item and answer it, they are signed in and their answer is kept
    first, second = share_items(participant)[:2]
    page = client.get(reverse("ratings:item", kwargs={"token": first.token}))
    assert page.status_code == 200
    assert "caption-text" in page.content.decode()
    assert page.wsgi_request.user == participant.user
    answer = item_answer_post(client, first)
    assert answer.status_code == 302, answer.content[:500]
    first.refresh_from_db()
    assert first.completed_at is not None
    assert client.get(answer["Location"]).status_code == 200

    # The outage is logged once for the process, without a session's key
    warnings = [record for record in caplog.records if record.name == "config.sessions"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "ConnectionError" in warnings[0].getMessage()
    assert all(session_key not in record.getMessage() for record in caplog.records)

    # Signing out ends the session: the old cookie signs nobody in
    assert client.post(reverse("logout")).status_code == 302
    assert not Session.objects.filter(session_key=session_key).exists()
    replayed = Client()
    replayed.cookies["sessionid"] = session_key
    response = replayed.get(reverse("ratings:item", kwargs={"token": second.token}))
    assert response.wsgi_request.user.is_anonymous
    assert response.status_code == 302 and reverse("login") in response["Location"]
