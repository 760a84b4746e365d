"""Pages that refresh themselves: the JSON status convention that static/core/js/live.js polls.

A page showing work done elsewhere (a worker's metric run, a recomputed dashboard, another person's
submission) gets a `live` context entry (`live_context`), includes templates/core/_live.html, and marks each
part that changes with `data-live-region` and an id. Its status URL answers GET with `live_status_response`:

    {"version": str, "busy": bool, "refresh": str | null}

- version: changes whenever the page would render differently (`live_version` of what it shows);
- busy: work is under way that will change the page soon (the browser asks every 1.5 s, else every 10 s);
- refresh: the page's numbers are stale and nobody recomputes them: the browser POSTs there once.
When the version differs from the page's, the browser fetches the page again and swaps its regions.
To adopt it on a new page: a status view returning `live_status_response(...)`, `live_context(...)` in the
page's context, `{% include "core/_live.html" %}` and `data-live-region` on the parts that change.
"""

import hashlib
import json

from django.http import JsonResponse


def live_version(*parts) -> str:
    """A short fingerprint of what a page shows (any JSON-able parts; dates as text)."""
    encoded = json.dumps(parts, default=str, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:20]


def live_context(*, status_url: str, version: str, busy: bool) -> dict:
    """The template context templates/core/_live.html reads (as `live`)."""
    return {"status_url": status_url, "version": version, "busy": busy}


def live_status_response(*, version: str, busy: bool, refresh: str | None = None, **details) -> JsonResponse:
    """The status JSON; `details` are extra fields for the page's own script or a test (e.g. progress counts)."""
    response = JsonResponse({"version": version, "busy": busy, "refresh": refresh, **details})
    response["Cache-Control"] = "no-store"
    return response
