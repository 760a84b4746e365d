"""gunicorn settings shared by the Docker image and scripts/stack: `gunicorn -c config/gunicorn.py config.wsgi`.

WEB_CONCURRENCY (gunicorn's own variable) sets the number of worker processes; static files are
served by whitenoise inside the app, so no separate static server is needed.
"""

import gc
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


# The app is imported once, in the master, before the port opens and before the workers are forked: on a busy 2-core
# machine importing Django, the URLconf and the views takes 20-40 s of CPU, and each worker that did it on its own
# made the first view of whatever page it served first wait that long (a dashboard's first view after a restart
# took 6-9 s). A code change needs a restart of the server (a HUP re-forks the code already loaded).
preload_app = True


def on_starting(server):
    """Before the workers are forked: what every worker's first pages need, done once and inherited.

    The URL tables (Django builds the reverse lookups and compiles each pattern's regex on first use: 6 s of a
    first page on a busy machine), the metric scorers' availability checks (the metrics pages list what can run
    here), and the compiled templates of the pages (Django's cached template loader keeps them per process).
    """
    from django.template import TemplateDoesNotExist
    from django.template.loader import get_template
    from django.urls import get_resolver

    from metrics_bridge.scoring import registry
    from metrics_bridge.scoring.base import ScoringContext

    _warm_url_tables(get_resolver())
    registry.unavailable_metrics(ScoringContext())
    for name in WARM_TEMPLATES:
        try:
            get_template(name)
        except TemplateDoesNotExist:  # a page renamed since: its first view compiles it, as before
            continue
    _long_lived_objects_freeze()


def _long_lived_objects_freeze() -> None:
    """Move everything loaded so far (Django, the app, the URL tables, the templates: about 150,000 objects) out of
    the garbage collector's reach; the workers inherit it frozen.

    They live as long as the server, yet each full collection in a worker walked them all: 65 ms in which the
    worker answered nothing, now and then in the middle of a request (what Python's documentation of gc.freeze
    advises for a server that forks its workers; it also keeps their memory pages shared)."""
    gc.collect()
    gc.freeze()


def _warm_url_tables(resolver, namespace: str = "") -> None:
    """Compile every pattern and build each namespace's reverse table (reverse() keeps one resolver per namespace;
    a name reversed without its arguments builds it, then fails, which is all that is wanted here)."""
    from django.urls import NoReverseMatch, URLResolver, reverse

    for pattern in resolver.url_patterns:
        pattern.pattern.regex  # noqa: B018 (compiled on first access)
        if isinstance(pattern, URLResolver):
            _warm_url_tables(pattern, f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace)
    name = next((key for key in resolver.reverse_dict if isinstance(key, str)), None)
    if name:
        try:
            reverse(f"{namespace}{name}")
        except NoReverseMatch:
            pass


#: the pages whose first view after a restart is bounded (docs/operations.md, "Dashboards within their bounds")
WARM_TEMPLATES = (
    "base.html",
    "metrics_bridge/home.html",
    "metrics_bridge/agreement.html",
    "metrics_bridge/agreement_pairs.html",
    "metrics_bridge/benchmark.html",
    "metrics_bridge/leaderboard.html",
    "metrics_bridge/thumbs.html",
    "metrics_bridge/dashboard_pending.html",
    "metrics_bridge/annotation_agreement.html",
    "metrics_bridge/sensitivity.html",
    "metrics_bridge/run_detail.html",
    "metrics_bridge/caption.html",
)
