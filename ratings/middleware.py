"""The study window that MTurk's frame opens keeps its link to that frame.

The frame (the HIT's landing page, inside MTurk's page on MTurk's site) opens the study in a window of its own and
waits for that window's end page to tell it, through `window.opener`, that the study is over. The site's pages
send `Cross-Origin-Opener-Policy: same-origin`, which cuts that link as soon as the window loads a page: the
opener's top-level page is MTurk's, another site. So the pages of a browser session that came in through the
frame's signed link send `unsafe-none` instead (they lose the isolation from MTurk's page, which holds no
reference to them anyway except through the frame); every other page keeps the site's policy.
"""

# Set by the signed link's view when the window was opened from the frame (the frame submits the HIT).
FRAME_SUBMITS = "study_frame_submits"


class StudyWindowOpenerMiddleware:
    """Placed after SessionMiddleware: SecurityMiddleware only sets the policy where a response has none."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        session = getattr(request, "session", None)
        # Only a request with a session cookie can be the study window's. Reading the session of any other (the frame's
        # status polls, which carry none) would mark it read, and Django would add `Vary: Cookie` to the response.
        if session is not None and session.session_key and session.get(FRAME_SUBMITS):
            opener_keep(response)
        return response


def opener_keep(response):
    """The page keeps the link to the window that opened it (SecurityMiddleware adds the site's policy only where a
    response has none)."""
    response["Cross-Origin-Opener-Policy"] = "unsafe-none"
    return response
