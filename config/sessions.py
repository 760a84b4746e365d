"""Sessions read from the cache (Redis) and written through to the database, served from the database alone while
the cache is unreachable.

Django's cached_db store tolerates a failed cache read but not a failed cache write, membership test or delete: with
Redis down every signed-in request would fail, although the database holds every session. Here each cache call that
fails is skipped, so a Redis outage costs the session's database query and nothing more. The session's data and key
are never logged (the key signs its holder in): only that the cache failed, once per process.
"""

import logging

from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.utils.crypto import get_random_string
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# Redis' own errors, and the socket's (refused, reset, timed out) should a client let one through.
CACHE_ERRORS = (RedisError, OSError)

_outage_logged = False


def _cache_failed(error: Exception) -> None:
    """Note an unreachable cache once per process: during an outage every request would repeat it."""
    global _outage_logged
    if not _outage_logged:
        _outage_logged = True
        logger.warning("Session cache unreachable (%s): sessions are served from the database", type(error).__name__)


class _CacheOrDatabase:
    """The session cache with each failing call turned into a miss, so that the store falls back to the database."""

    def __init__(self, cache):
        self._cache = cache

    def __repr__(self) -> str:
        return repr(self._cache)

    def get(self, key, default=None):
        try:
            return self._cache.get(key, default)
        except CACHE_ERRORS as error:
            _cache_failed(error)
            return default

    def set(self, key, value, timeout):
        try:
            self._cache.set(key, value, timeout)
        except CACHE_ERRORS as error:
            _cache_failed(error)

    def delete(self, key):
        # A session ended while the cache is unreachable stays there if Redis keeps its data (a network cut rather
        # than a restart), and its old key would read it until the cache entry expires. Its holder's browser no
        # longer sends that key: signing out gives it a new one.
        try:
            return self._cache.delete(key)
        except CACHE_ERRORS as error:
            _cache_failed(error)
            return False

    def __contains__(self, key) -> bool:
        try:
            return key in self._cache
        except CACHE_ERRORS as error:
            _cache_failed(error)
            return False

    async def aget(self, key, default=None):
        try:
            return await self._cache.aget(key, default)
        except CACHE_ERRORS as error:
            _cache_failed(error)
            return default

    async def aset(self, key, value, timeout):
        try:
            await self._cache.aset(key, value, timeout)
        except CACHE_ERRORS as error:
            _cache_failed(error)

    async def adelete(self, key):
        try:
            return await self._cache.adelete(key)
        except CACHE_ERRORS as error:
            _cache_failed(error)
            return False


class SessionStore(cached_db.SessionStore):
    def __init__(self, session_key=None):
        super().__init__(session_key)
        self._cache = _CacheOrDatabase(self._cache)

    def _get_new_session_key(self) -> str:
        """A new random key, not looked up first. Django asks the cache, then the database, whether the key is taken
        before the INSERT that creates the session; that INSERT (save(must_create=True)) already fails on a taken
        key and create() then draws another, so the lookup cost every new session (every arrival of a crowd) a
        Redis call and a query that a 32-character random key never needs."""
        return get_random_string(32, VALID_KEY_CHARS)
