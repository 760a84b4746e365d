"""The session backend of crowd participants: their account read with their participation in one query.

A participant's every request (pages, audio, autosaves, heartbeats) needs both the account (the session's user) and
the participation with its study and campaign (ratings.services.participants.participant_for_user); read apart, that
was two queries on each request of a crowd arriving at once. Participants are signed in with this backend by their
study link (ratings/views_study.py); it never signs anyone in by password.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

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
