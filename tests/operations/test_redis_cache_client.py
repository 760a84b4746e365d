"""The Redis cache of config/redis_cache.py (the sessions' cache when REDIS_URL is set) does what Django's does, on one
redis-py client per connection pool instead of a new one per call: against a real Redis server, in a forked process,
and with Redis down (where it must fail as Django's does, so that config/sessions.py falls back to the database).

The backend is built from the CACHES config/settings.py chooses for a REDIS_URL (read in a process of its own).
"""

import os
import signal
import uuid

import pytest
import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.utils.module_loading import import_string

from config.sessions import CACHE_ERRORS
from tests.operations.test_sessions_on_redis import settings_chosen
from tests.operations.test_sessions_when_redis_is_down import DEAD_REDIS_URL

# Databases no other test uses (the suite's are 15 - n for its test process n); keys are removed after each test.
CACHE_DB, REPLICA_DB = 11, 12


@pytest.fixture(scope="module")
def redis_server(redis_broker_url) -> str:
    """The test Redis server's URL without a database."""
    return redis_broker_url.rsplit("/", 1)[0]


@pytest.fixture(scope="module")
def cache_settings(redis_server) -> dict:
    return settings_chosen(f"{redis_server}/{CACHE_DB}")["CACHES"]["default"]


def cache_at(cache_settings: dict, location: str):
    """The backend the settings name, at this location, its keys under a prefix of their own."""
    params = {**cache_settings, "KEY_PREFIX": f"test-redis-cache-{uuid.uuid4().hex}"}
    return import_string(cache_settings["BACKEND"])(location, params)


@pytest.fixture
def cache(cache_settings, redis_server):
    cache = cache_at(cache_settings, f"{redis_server}/{CACHE_DB}")
    yield cache
    remove_keys(redis.Redis.from_url(f"{redis_server}/{CACHE_DB}"), cache.key_prefix)


def remove_keys(server: redis.Redis, prefix: str) -> None:
    keys = list(server.scan_iter(match=f"{prefix}:*"))
    if keys:
        server.delete(*keys)


@pytest.mark.redis
def test_the_cache_round_trips_on_one_client_made_once(cache, redis_server):
    client = cache._cache.get_client()
    pool_options = client.connection_pool.connection_kwargs
    assert (pool_options["db"], pool_options["socket_connect_timeout"], pool_options["socket_timeout"]) == (
        CACHE_DB,
        2,
        5,
    )

    assert cache.get("session", "none yet") == "none yet"
    cache.set("session", {"user": 7}, 60)
    assert cache.get("session") == {"user": 7}
    assert cache.add("session", "another") is False
    assert cache.add("counter", 1) is True
    assert cache.incr("counter", 4) == 5
    assert cache.get_many(["session", "counter", "absent"]) == {"session": {"user": 7}, "counter": 5}
    cache.delete("session")
    assert cache.get("session") is None

    # What Redis itself holds, read by a client of its own
    server = redis.Redis.from_url(f"{redis_server}/{CACHE_DB}")
    assert server.get(cache.make_and_validate_key("counter")) == b"5"
    assert not server.exists(cache.make_and_validate_key("session"))

    # Every call, read or write, went through the same client
    assert cache._cache.get_client("session") is client
    assert cache._cache.get_client("session", write=True) is client


@pytest.mark.redis
def test_writes_go_to_the_first_server_and_reads_to_the_others_as_in_django(cache_settings, redis_server):
    primary, replica = f"{redis_server}/{CACHE_DB}", f"{redis_server}/{REPLICA_DB}"
    cache = cache_at(cache_settings, f"{primary},{replica}")
    try:
        writer, reader = cache._cache.get_client(write=True), cache._cache.get_client()
        assert writer.connection_pool.connection_kwargs["db"] == CACHE_DB
        assert reader.connection_pool.connection_kwargs["db"] == REPLICA_DB

        # The write lands in the first database; a read asks the second, where nothing replicates it here
        cache.set("entry", "written", 60)
        assert redis.Redis.from_url(primary).exists(cache.make_and_validate_key("entry"))
        assert cache.get("entry") is None

        assert cache._cache.get_client(write=True) is writer
        assert cache._cache.get_client() is reader
    finally:
        remove_keys(redis.Redis.from_url(primary), cache.key_prefix)


# Exit statuses of the forked process
CHILD_OK, CHILD_NEW_CLIENT, CHILD_PARENTS_CONNECTION, CHILD_WRONG_VALUE, CHILD_FAILED = 0, 10, 11, 12, 13


def use_cache_in_child(cache, parent_client, parent_connection_id: int) -> int:
    cache.set("child", os.getpid(), 60)
    if cache.get("parent") != "before the fork":
        return CHILD_WRONG_VALUE
    client = cache._cache.get_client()
    if client is not parent_client:
        return CHILD_NEW_CLIENT
    # Redis numbers each connection: the parent's socket would answer with the parent's number
    if client.client_id() == parent_connection_id:
        return CHILD_PARENTS_CONNECTION
    return CHILD_OK


@pytest.mark.redis
def test_a_forked_process_uses_the_shared_client_on_a_connection_of_its_own(cache):
    client = cache._cache.get_client()
    cache.set("parent", "before the fork", 60)
    parent_connection_id = client.client_id()

    pid = os.fork()
    if pid == 0:  # the child: whatever happens, it exits here with its status and runs none of pytest's code
        status = CHILD_FAILED
        try:
            signal.alarm(30)  # a child stuck on a shared socket dies instead of hanging the test
            status = use_cache_in_child(cache, client, parent_connection_id)
        finally:
            os._exit(status)

    _, wait_status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(wait_status) == CHILD_OK
    assert cache.get("child") == pid
    # The parent goes on on its own connection, which the child neither used nor closed
    assert cache._cache.get_client() is client
    assert client.client_id() == parent_connection_id


@pytest.mark.redis
def test_redis_down_raises_what_djangos_backend_raises(cache_settings):
    ours = cache_at(cache_settings, DEAD_REDIS_URL)
    djangos = DjangoRedisCache(DEAD_REDIS_URL, cache_settings)
    assert type(ours) is not DjangoRedisCache  # the settings name the backend under test

    for call in (lambda cache: cache.get("session"), lambda cache: cache.set("session", 1, 60)):
        with pytest.raises(CACHE_ERRORS) as djangos_error:
            call(djangos)
        with pytest.raises(CACHE_ERRORS) as our_error:
            call(ours)
        assert type(our_error.value) is type(djangos_error.value) is redis.exceptions.ConnectionError
