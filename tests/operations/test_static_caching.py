"""In production the pages name their stylesheets and scripts by content hash, whitenoise serves those as immutable
for years, and a browser coming back to a page asks the server for no static file: a crowd participant's dozen
pages cost one round of static requests, not one per page."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from scripts.stack import free_port, gunicorn_start, gunicorn_stop, loopback_production_env

ROOT = Path(__file__).resolve().parents[2]
ASSET_RE = re.compile(r'<(?:script|link)\b[^>]*\b(?:src|href)="(/static/[^"]+)"')
HASHED_RE = re.compile(r"\.[0-9a-f]{12}\.(?:js|css|svg)$")
TEN_YEARS = 10 * 365 * 24 * 3600


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("static-caching")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SECURE_", "REDIS"))}
    env.update(
        {
            **loopback_production_env(),
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "MEDIA_ROOT": str(folder / "media"),
            "STATIC_ROOT": str(folder / "static"),
        }
    )
    for command in (("collectstatic", "--noinput", "-v0"), ("migrate", "--noinput", "-v0")):
        done = subprocess.run(
            [sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
    log = folder / "gunicorn.log"
    port = free_port()
    web = gunicorn_start(env=env, port=port, workers=1, log_path=log)
    try:
        yield {"url": f"http://127.0.0.1:{port}", "log": log}
    finally:
        gunicorn_stop(web)


def _static_requests_logged(log: Path) -> int:
    return sum(1 for line in log.read_text(errors="replace").splitlines() if '"GET /static/' in line)


def test_a_production_page_names_hashed_files_served_as_immutable(production_server):
    page = requests.get(production_server["url"] + "/accounts/login/", timeout=60)
    assert page.status_code == 200 and "<form" in page.text
    assets = ASSET_RE.findall(page.text)
    assert any(url.endswith(".css") for url in assets) and any(url.endswith(".js") for url in assets), assets
    for url in assets:
        assert HASHED_RE.search(url), f"{url} carries no content hash"
        served = requests.get(production_server["url"] + url, timeout=60)
        assert served.status_code == 200 and served.content
        cache = served.headers["Cache-Control"]
        assert "immutable" in cache, (url, cache)
        assert int(re.search(r"max-age=(\d+)", cache).group(1)) >= TEN_YEARS, (url, cache)


def test_the_plain_name_of_a_file_is_not_cached_for_long(production_server):
    """Only a hashed name may be kept for good: the plain name's content changes with the next release."""
    served = requests.get(production_server["url"] + "/static/core/css/base.css", timeout=60)
    assert served.status_code == 200
    assert "immutable" not in served.headers["Cache-Control"]


@pytest.mark.parametrize("width", [1280, 390])
def test_a_returning_page_makes_no_static_request(browser, production_server, width):
    url = production_server["url"] + "/accounts/login/"
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        before = _static_requests_logged(production_server["log"])
        page.goto(url, wait_until="load")
        assert page.locator("form input[name=password]").count() == 1  # the page rendered
        # The icon may be asked for after the load event: counting before the network is idle could leave its
        # log line to the second count (seen on a loaded machine).
        page.wait_for_load_state("networkidle")
        first_load = _static_requests_logged(production_server["log"]) - before
        assert first_load >= 3, first_load  # stylesheet, scripts, icon: fetched once (and the server logs them)

        seen_by_browser = []
        page.on("request", lambda request: seen_by_browser.append(request.url))
        before = _static_requests_logged(production_server["log"])
        page.goto(url, wait_until="load")  # a link back to the page, as a participant's next page is
        page.goto(url + "?next=/ratings/", wait_until="load")  # another page of the same look
        assert page.locator("form input[name=password]").count() == 1
        assert _static_requests_logged(production_server["log"]) - before == 0
        assert any("/static/" in seen for seen in seen_by_browser)  # asked for, and answered by the cache
    finally:
        context.close()


def test_without_collected_files_pages_name_the_plain_files(tmp_path, settings):
    """A production-mode server with no manifest (a test's server that ran no collectstatic) still renders."""
    from config.static_storage import HashedStaticFilesStorage

    storage = HashedStaticFilesStorage(location=str(tmp_path), base_url="/static/")
    settings.DEBUG = False
    assert storage.url("core/css/base.css") == "/static/core/css/base.css"


def test_each_name_is_looked_up_in_the_manifest_once_per_storage(tmp_path, settings):
    """The URL of a name is found once (the manifest never changes after the storage is made): a page's dozen
    `{% static %}` tags cost a dictionary read each, and each name keeps its own URL."""
    from unittest import mock

    from config.static_storage import HashedStaticFilesStorage

    settings.DEBUG = False
    (tmp_path / "staticfiles.json").write_text(
        '{"version": "1.1", "paths": {"core/css/base.css": "core/css/base.0123abcd.css"}, "hash": "x"}'
    )
    storage = HashedStaticFilesStorage(location=str(tmp_path), base_url="/static/")
    real = HashedStaticFilesStorage.stored_name
    with mock.patch.object(HashedStaticFilesStorage, "stored_name", autospec=True, side_effect=real) as found:
        assert storage.url("core/css/base.css") == "/static/core/css/base.0123abcd.css"
        assert storage.url("core/css/base.css") == "/static/core/css/base.0123abcd.css"
        assert storage.url("core/js/other.js") == "/static/core/js/other.js"
    assert found.call_count == 2
