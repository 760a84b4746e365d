"""Sessions read from Redis when REDIS_URL is set: a signed-in request costs no session query, and signing out ends
the session in both stores.

The settings are read from config/settings.py in a process of its own (REDIS_URL set or not), and the request tests
run on what it chose, against a real Redis server: on settings that keep sessions in the database alone, the signed-in
request would read the django_session table.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.ratings.study_data import (
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]
SESSION_TABLE = Session._meta.db_table


def settings_chosen(redis_url: str) -> dict:
    """SESSION_ENGINE and CACHES as config/settings.py sets them in a fresh process with this REDIS_URL ("": unset)."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env["REDIS_URL"] = redis_url
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps({'SESSION_ENGINE': settings.SESSION_ENGINE, 'CACHES': settings.CACHES}))"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def redis_settings(redis_broker_url) -> dict:
    return settings_chosen(redis_broker_url)


def test_sessions_are_cached_in_redis_only_when_redis_is_configured(redis_settings):
    assert redis_settings["SESSION_ENGINE"] == "config.sessions"
    assert redis_settings["CACHES"]["default"]["BACKEND"] == "config.redis_cache.RedisCache"
    # Without Redis the shared cache is a database table: caching sessions there would add a query, not save one.
    assert settings_chosen("")["SESSION_ENGINE"] == "django.contrib.sessions.backends.db"


@pytest.fixture
def on_redis_settings(settings, redis_settings):
    """This process on the sessions and cache config/settings.py chooses with REDIS_URL (a new Client loads them)."""
    settings.CACHES = redis_settings["CACHES"]
    settings.SESSION_ENGINE = redis_settings["SESSION_ENGINE"]


def session_queries(queries) -> list[str]:
    return [query["sql"] for query in queries if SESSION_TABLE in query["sql"]]


@pytest.mark.django_db
@pytest.mark.redis
@pytest.mark.usefixtures("study_media", "on_redis_settings")
def test_a_participants_requests_read_the_session_from_redis_and_sign_out_ends_it(redis_broker_url):
    # Given a participant signed in by their study link, on their first item
    study = pairwise_study()
    client = Client()
    prolific_arrive(study, client=client)
    participant = walk_to_items(client, study)
    item_url = reverse("ratings:item", kwargs={"token": share_items(participant)[0].token})
    session_key = client.cookies["sessionid"].value
    assert Session.objects.filter(session_key=session_key).exists()  # written through to the database

    # When they open the item, their session comes from Redis
    with CaptureQueriesContext(connection) as captured:
        page = client.get(item_url)
    assert page.status_code == 200
    assert "caption-text" in page.content.decode()
    assert page.wsgi_request.user == participant.user
    assert len(captured.captured_queries) > 0  # the capture saw the request's queries
    assert session_queries(captured.captured_queries) == []

    # A Redis flush loses no session: it is read from the database again
    redis.Redis.from_url(redis_broker_url).flushdb()
    with CaptureQueriesContext(connection) as captured:
        page = client.get(item_url)
    assert page.status_code == 200
    assert page.wsgi_request.user == participant.user
    assert len(session_queries(captured.captured_queries)) == 1

    # Signing out ends the session: the old cookie signs nobody in, in Redis or in the database
    assert client.post(reverse("logout")).status_code == 302
    replayed = Client()
    replayed.cookies["sessionid"] = session_key
    response = replayed.get(item_url)
    assert response.wsgi_request.user.is_anonymous
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert not Session.objects.filter(session_key=session_key).exists()


@pytest.mark.django_db
@pytest.mark.redis
@pytest.mark.usefixtures("on_redis_settings")
def test_a_new_session_key_is_not_looked_up_and_a_taken_one_is_drawn_again(monkeypatch):
    """config.sessions draws a new key without asking whether it is taken: the INSERT refuses a taken key and the
    store draws another (the store's lookup cost every arrival of a crowd a Redis call and a query)."""
    from config import sessions

    taken = sessions.SessionStore()
    taken["who"] = "first"
    taken.create()
    keys = iter([taken.session_key, "k" * 32])
    monkeypatch.setattr(sessions, "get_random_string", lambda length, chars: next(keys))
    store = sessions.SessionStore()
    store["who"] = "second"
    with CaptureQueriesContext(connection) as captured:
        store.save()
    assert store.session_key == "k" * 32
    assert not [query for query in session_queries(captured) if query.startswith("SELECT")]
    assert sessions.SessionStore(taken.session_key).load() == {"who": "first"}
    assert sessions.SessionStore("k" * 32).load() == {"who": "second"}
