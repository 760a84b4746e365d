"""gunicorn settings shared by the Docker image and scripts/stack: `gunicorn -c config/gunicorn.py config.wsgi`.

WEB_CONCURRENCY (gunicorn's own variable) sets the number of worker processes; static files are
served by whitenoise inside the app, so no separate static server is needed.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY") or 3)
# A request that takes this long is killed: pages read stored results (dashboards are computed by the worker), so
# only an upload on a slow link comes near it; a bound this short keeps a stuck request from holding a worker.
timeout = int(os.environ.get("GUNICORN_TIMEOUT") or 30)
graceful_timeout = 30
# Recycle workers now and then so a slow leak cannot grow without bound. A new worker spends about a second of
# CPU loading the app and its first pages; workers share the load evenly, so with a small jitter they all reached
# the limit within seconds of each other and every request of those seconds waited (the crowd bench saw p95 jump
# from about 35 to 130 ms there). Each worker's limit is drawn anew from [5000, 10000]: restarts come apart.
max_requests = 5000
max_requests_jitter = 5000
accesslog = "-"
errorlog = "-"
# Heartbeat files in memory, not on a possibly slow container disk.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# Addresses of the TLS-terminating proxy whose X-Forwarded-* headers are believed (comma-separated).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_worker_init(worker):
    """Load the metric scorers in the background as each web worker starts.

    Their availability checks import torch and transformers (about 15 s here); without this the first
    /metrics/ page or "Start" in each worker would wait for that.
    """
    import threading

    def warm() -> None:
        from metrics_bridge.scoring import registry
        from metrics_bridge.scoring.base import ScoringContext

        registry.unavailable_metrics(ScoringContext())

    threading.Thread(target=warm, name="warm-scorers", daemon=True).start()
