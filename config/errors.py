"""Error pages in the site's layout (templates/400.html, 403.html, 404.html, 500.html).

They say what happened and what to do next, in words for the person who met them; they never show
debug information, a traceback or the URL list (those appear only with DEBUG on, which production
never runs). The 500 page is rendered with as little as possible: if even that fails (say, the
database is down and the navigation cannot be built), a plain page without the layout is sent.
"""

import logging

from django.core.exceptions import SuspiciousOperation
from django.http import HttpResponseServerError
from django.shortcuts import render
from django.template import loader

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


def bad_request(request, exception, template_name="400.html"):
    # A refused Host header (DisallowedHost) or another suspicious request: its message repeats what the
    # client sent (the host name), so the page says nothing of it.
    message = "" if isinstance(exception, SuspiciousOperation) else _message(exception)
    return render(request, template_name, {"message": message}, status=400)


def permission_denied(request, exception, template_name="403.html"):
    return render(request, template_name, {"message": _message(exception)}, status=403)


def page_not_found(request, exception, template_name="404.html"):
    return render(request, template_name, {"message": _message(exception)}, status=404)


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
