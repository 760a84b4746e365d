"""Time cache.get on config/redis_cache.py's backend against Django's stock RedisCache, in one process.

Run from the project root:  .venv/bin/python bench/redis_cache_client_bench.py [REDIS_URL]
(default redis://127.0.0.1:6390/11; it writes one key there and removes it). Both backends read the same small
session-sized entry in alternating blocks, so that a change of the machine's load weighs on both alike; the ratio of
their total CPU times is the figure, printed with the load average it was measured at.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache  # noqa: E402

from config.redis_cache import RedisCache  # noqa: E402

CALLS = 20_000
BLOCKS = 10  # per backend, alternating
PARAMS = {"KEY_PREFIX": "redis-cache-client-bench", "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5}}


def cpu_seconds(cache, calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        cache.get("session")
    return time.process_time() - started


def main(url: str) -> None:
    backends = {"django": DjangoRedisCache(url, PARAMS), "ours": RedisCache(url, PARAMS)}
    backends["ours"].set("session", {"_auth_user_id": "7", "study": "x" * 200}, 300)
    try:
        for cache in backends.values():
            assert cache.get("session")["_auth_user_id"] == "7"  # both read the entry (and hold a connection)
        totals = dict.fromkeys(backends, 0.0)
        for _ in range(BLOCKS):
            for name, cache in backends.items():
                totals[name] += cpu_seconds(cache, CALLS // BLOCKS)
    finally:
        backends["ours"].delete("session")
    for name, seconds in totals.items():
        print(f"{name:<7} {CALLS} gets: {seconds:.3f} s CPU, {seconds / CALLS * 1e6:.1f} us per get")
    print(f"ours / django: {totals['ours'] / totals['django']:.3f}; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6390/11")
