"""Headless Chromium (Playwright) against pytest-django's live server."""

from pathlib import Path

import pytest

from tests.browser.live_server_requests import live_server_requests_finish
from tests.browser.timeouts import waits_generous

ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def role_groups(transactional_db):
    """The role groups a migration creates. A transactional test's flush removes them, and serialized_rollback
    does not bring them back when non-transactional tests ran earlier in the session, so make sure of them."""
    from django.contrib.auth.models import Group

    from accounts.roles import ALL_ROLES

    for name in ALL_ROLES:
        Group.objects.get_or_create(name=name)


@pytest.fixture(autouse=True)
def requests_finish_before_the_flush(role_groups, live_server):
    """Wait, after each test, for the requests its pages left in flight, before the database is flushed. The
    contexts are closed by then (page_for's teardown runs first), so no new request arrives."""
    yield
    live_server_requests_finish(live_server)


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def page_for(browser, live_server):
    """page_for(user) -> a Playwright page signed in as `user` (session cookie from Django's test client)."""
    from django.test import Client

    contexts = []

    def open_page(user):
        client = Client()
        client.force_login(user)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
        waits_generous(context)  # the further tabs a test opens in this context too
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def _forget_trusted_origins() -> None:
    """Drop what each CSRF middleware cached of CSRF_TRUSTED_ORIGINS: Django reads the setting once per middleware
    instance (cached properties), and the live server's middleware lives for the whole session, so a test that
    changes the setting would otherwise meet whatever an earlier test's request cached."""
    import gc

    from django.middleware.csrf import CsrfViewMiddleware

    for candidate in gc.get_objects():
        if isinstance(candidate, CsrfViewMiddleware):
            for cached in ("allowed_origins_exact", "allowed_origin_subdomains", "csrf_trusted_origins_hosts"):
                candidate.__dict__.pop(cached, None)


@pytest.fixture
def live_server_origin_trusted(settings, live_server) -> str:
    """The live server's own http origin trusted for CSRF, as a deployment behind a TLS proxy trusts its public
    origin: for tests whose requests say X-Forwarded-Proto: https while the browser's origin is http."""
    settings.CSRF_TRUSTED_ORIGINS = [live_server.url]
    _forget_trusted_origins()
    yield live_server.url
    _forget_trusted_origins()
