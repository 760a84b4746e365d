"""Login throttling: django-axes' lockout check in front of Django's model backend, for pages and the token API."""

from axes.backends import AxesStandaloneBackend
from rest_framework.authtoken.views import ObtainAuthToken


class LockoutBackend(AxesStandaloneBackend):
    """Refuses sign-ins of a locked-out username+address pair; lets everything else through to ModelBackend.

    Every web sign-in (login page, admin, /api/token/) passes its request. Code that authenticates without
    a request (a management command, the test client's `login()`) has no client address to throttle, so
    it is not counted instead of being refused, which axes' own backend would do.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class ThrottledObtainAuthToken(ObtainAuthToken):
    """/api/token/: a locked-out username+address gets 429 like the login page, not a generic 400.

    django-axes flags the lockout on the request it was given, which here is DRF's wrapper; the flag is
    copied to the Django request so AxesMiddleware answers with its lockout response.
    """

    def post(self, request, *args, **kwargs):
        try:
            return super().post(request, *args, **kwargs)
        finally:
            if getattr(request, "axes_locked_out", False):
                request._request.axes_locked_out = True
                request._request.axes_credentials = getattr(request, "axes_credentials", None)
