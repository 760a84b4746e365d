"""20 simultaneous submits of one item against a live, multi-threaded server: one stored answer, no 5xx.

Run on the suite's database through pytest-django's live server (PostgreSQL in CI: row locks), and on
SQLite through `manage.py runserver` in a subprocess with its own database file (immediate transactions,
busy timeout, WAL). Every request either succeeds (302 to the next item) or gets a clear 409.
"""

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

from tests.ratings.concurrent_submits import FireResult, fire, item_outcome, item_seed

# db_specific: row locks on PostgreSQL, immediate transactions on SQLite (docs/operations.md, Tests)
pytestmark = pytest.mark.db_specific

ROOT = Path(__file__).resolve().parents[2]
SUBMITS = 20


def _assert_one_answer(result: FireResult, outcome: dict, *, captions: int) -> None:
    assert not [status for status in result.statuses if status >= 500], result.bodies
    assert result.statuses.count(302) == 1, result.summary()
    assert result.statuses.count(409) == SUBMITS - 1, result.summary()
    conflict = next(body for status, body in zip(result.statuses, result.bodies, strict=True) if status == 409)
    assert "This item was answered again in another tab or window" in conflict
    assert outcome == {"version": 1, "ratings": captions, "submitted_events": 1, "refused_events": SUBMITS - 1}


@pytest.mark.slow
def test_simultaneous_submits_on_the_suites_database(live_server):
    seed = item_seed()
    result = fire(base_url=live_server.url, seed=seed, count=SUBMITS)
    _assert_one_answer(result, item_outcome(seed["token"]), captions=seed["captions"])
    print(f"\n{connection.vendor} (live server): {result.summary()}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _manage(env: dict, *args: str, timeout: int = 180) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_simultaneous_submits_on_sqlite_in_a_server_process(tmp_path):
    if connection.vendor == "sqlite":
        pytest.skip("the live-server test above already runs on SQLite")
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith(("REDIS", "CELERY"))},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'race.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        # Plain HTTP on loopback, as behind a TLS-terminating proxy (the deploy switches of the README).
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
    }
    _manage(env, "migrate", "--noinput", "-v0")
    output = _manage(env, "shell", "-c", "from tests.ratings.concurrent_submits import main_seed; main_seed()")
    seed = json.loads(output.split("SEED ", 1)[1])
    port = _free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base_url}/accounts/login/", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-2000:]
                time.sleep(0.2)
        result = fire(base_url=base_url, seed=seed, count=SUBMITS)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    code = f"from tests.ratings.concurrent_submits import main_outcome; main_outcome({seed['token']!r})"
    outcome = json.loads(_manage(env, "shell", "-c", code).split("OUTCOME ", 1)[1])
    _assert_one_answer(result, outcome, captions=seed["captions"])
    assert "Traceback" not in (tmp_path / "server.log").read_text()
    print(f"\nsqlite (runserver process): {result.summary()}")
