"""Error pages in the site's layout (templates/400.html, 403.html, 404.html, 500.html).

They say what happened and what to do next, in words for the person who met them; they never show
debug information, a traceback or the URL list (those appear only with DEBUG on, which production
never runs). The 500 page is rendered with as little as possible: if even that fails (say, the
database is down and the navigation cannot be built), a plain page without the layout is sent.
"""

import logging

from django.core.exceptions import SuspiciousOperation
from django.db.models import ProtectedError, RestrictedError
from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler

logger = logging.getLogger(__name__)

PLAIN_500 = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Server error</title></head><body>"
    "<h1>Something went wrong on our side</h1><p>Your last saved answers are safe. Please try again in a "
    "minute; if it keeps happening, tell the study's organisers.</p><p><a href='/'>Home</a></p></body></html>"
)


def _message(exception) -> str:
    """The message an exception was raised with, if it is one we wrote for people (not a Python repr)."""
    text = str(exception or "").strip()
    if not text or text.startswith(("{", "[", "<", "(")) or "Traceback" in text or len(text) > 300:
        return ""
    return text


def _api_error(request, status: int, default: str, exception=None) -> JsonResponse | None:
    """Under /api/ an error answers JSON in DRF's shape ({"detail": ...}), as the API's own errors do: an API
    client (or its schema, which documents JSON errors) never gets an HTML page, e.g. for a URL no route matches."""
    if not request.path.startswith("/api/"):
        return None
    return JsonResponse({"detail": _message(exception) or default}, status=status)


def bad_request(request, exception, template_name="400.html"):
    # A refused Host header (DisallowedHost) or another suspicious request: its message repeats what the
    # client sent (the host name), so the page says nothing of it.
    message = "" if isinstance(exception, SuspiciousOperation) else _message(exception)
    return _api_error(request, 400, "Bad request.", None if message == "" else exception) or render(
        request, template_name, {"message": message}, status=400
    )


def permission_denied(request, exception, template_name="403.html"):
    return _api_error(request, 403, "You do not have permission to perform this action.", exception) or render(
        request, template_name, {"message": _message(exception)}, status=403
    )


def page_not_found(request, exception, template_name="404.html"):
    # A 404 from the URL resolver carries its internal details (the tried patterns): never shown.
    return _api_error(request, 404, "Not found.") or render(
        request, template_name, {"message": _message(exception)}, status=404
    )


def server_error(request, template_name="500.html"):
    try:
        return render(request, template_name, status=500)
    except Exception:  # the layout needs the database (navigation); don't fail twice
        logger.exception("the 500 page could not be rendered with the site's layout")
        try:
            return HttpResponseServerError(loader.render_to_string("500_plain.html"))
        except Exception:
            return HttpResponseServerError(PLAIN_500)


def csrf_failure(request, reason=""):
    """A refused form (expired session or page open too long): say so instead of Django's bare CSRF page."""
    return render(
        request,
        "403.html",
        {
            "title": "This form has expired",
            "message": "The page was open too long or you signed in again elsewhere, so the form could not be "
            "accepted. Go back, reload the page and send it again: nothing was saved from this attempt.",
        },
        status=403,
    )


def api_exception_handler(exc, context):
    """DRF's handler, plus: deleting a row that others still point to (on_delete=PROTECT / RESTRICT) is a 409
    saying what refers to it, not a 500 (e.g. a captioning system that has captions)."""
    if isinstance(exc, ProtectedError | RestrictedError):
        blocking = exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects
        kinds = sorted({str(row._meta.verbose_name_plural) for row in blocking})
        detail = f"It cannot be deleted while {len(blocking)} row(s) refer to it ({', '.join(kinds)})."
        return Response({"detail": detail}, status=status.HTTP_409_CONFLICT)
    return exception_handler(exc, context)
