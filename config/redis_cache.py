"""Django's Redis cache with one redis-py client per connection pool, made once and reused.

Django's RedisCacheClient builds a new ``redis.Redis(connection_pool=pool)`` on every cache call, and every signed-in
request reads its session from this cache (config/sessions.py). Under a 300-participant crowd load a profile of the web
workers put about 7% of all their CPU in RedisCache.get for the session, a noticeable part of it in building that
client (Redis.__init__ 1.6%, the CaseInsensitiveDict of its response callbacks 1.3%). A redis-py client holds no
connection of its own and is thread-safe over its pool, and the pool itself starts afresh in a forked process (it
checks its pid), so one client per pool serves every call. Everything else is Django's: the OPTIONS passed to the pool
(socket timeouts), the pool chosen per call (writes to the first server), the serializer and the exceptions raised.
"""

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, servers, **options):
        super().__init__(servers, **options)
        self._clients = {}  # connection pool -> its redis.Redis client

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(pool)
        if client is None:
            # Two threads may both build one here; either serves, and the first one stored is kept.
            client = self._clients.setdefault(pool, self._client(connection_pool=pool))
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient
