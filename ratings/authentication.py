"""The session backend of crowd participants: their account read with their participation in one query.

A participant's every request (pages, audio, autosaves, heartbeats) needs both the account (the session's user) and
the participation with its study and campaign (ratings.services.participants.participant_for_user); read apart, that
was two queries on each request of a crowd arriving at once. Participants are signed in with this backend by their
study link (ratings/views_study.py); it never signs anyone in by password.
"""

from datetime import timedelta

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.middleware.csrf import rotate_token
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from common.compiled_reads import CompiledRead

#: the path the session records for participants (settings.AUTHENTICATION_BACKENDS lists it)
PARTICIPANT_BACKEND = "ratings.authentication.ParticipantBackend"

# Compiled once per process: compiling this four-model join was most of its cost, on every request of a crowd.
_USER_WITH_PARTICIPATION = CompiledRead(
    lambda user_id: get_user_model()._default_manager.select_related("participant__study__campaign").filter(pk=user_id),
    user_id=-2_100_000_001,
)


class ParticipantBackend(ModelBackend):
    def authenticate(self, request, **kwargs):
        """No password sign-in here (ModelBackend does that): participants arrive by their study link."""
        return None

    def get_user(self, user_id):
        """ModelBackend's user, with the participation (None for an account that has none) already read."""
        user = _USER_WITH_PARTICIPATION.first(user_id=user_id)
        if user is None or not self.user_can_authenticate(user):
            return None
        # What participant_for_user caches: an account without a participation raises on the reverse relation.
        user._study_participant = getattr(user, "participant", None)
        return user


# A participant's sign-in time is written again only when the last one is older than this (the arrival that makes the
# account records it as it is made; a link opened twice within a minute need not write it twice).
SIGN_IN_RESOLUTION = timedelta(minutes=1)


def participant_sign_in(request, user) -> None:
    """Sign the browser in as the participant's account by their study link: django.contrib.auth.login without its
    user_logged_in signal and without first saving an empty session.

    The signal's receivers are django-axes, which throttles password sign-ins (a participant has no password: no
    failures to clear; its access log would get a row per arrival, and ParticipantEvent already logs each arrival
    and resumption), and Django's last-login write, done here unless the time is recent. With them and the empty
    session login() writes and then rewrites, a crowd's arrival cost 15 statements more. A browser that comes with
    no session gets one when this request's session is saved: there is no old key to fix and nothing to carry over.
    A session of someone else is replaced as login() replaces it."""
    session = request.session
    session_auth_hash = user.get_session_auth_hash()
    if SESSION_KEY in session:
        signed_in_as = get_user_model()._meta.pk.to_python(session[SESSION_KEY])
        if signed_in_as != user.pk or not constant_time_compare(session.get(HASH_SESSION_KEY, ""), session_auth_hash):
            session.flush()
    elif session.session_key is not None:
        session.cycle_key()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = PARTICIPANT_BACKEND
    session[HASH_SESSION_KEY] = session_auth_hash
    request.user = user
    rotate_token(request)
    now = timezone.now()
    if user.last_login is None or now - user.last_login >= SIGN_IN_RESOLUTION:
        get_user_model()._default_manager.filter(pk=user.pk).update(last_login=now)
        user.last_login = now
