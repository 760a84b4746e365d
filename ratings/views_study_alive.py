"""The heartbeat of a participant's open page: the study bar's script posts it while the participant uses the page.

A share is held only while its holder works (STUDY_INACTIVE_MINUTES without a request gives it back when others
need it). Reading, thinking or typing a comment makes no request, so the open page says so itself: every
STUDY_HEARTBEAT_SECONDS, when the participant pressed a key, touched, scrolled or played audio within
STUDY_INACTIVE_MINUTES. A closed tab sends nothing, so its share goes back after STUDY_INACTIVE_MINUTES as before,
and an open tab nobody uses stops beating. The heartbeat is a request of the participant like any other (the time
limit is checked, activity recorded); it never extends the time limit.
"""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from ratings.models_study import Participant
from ratings.services.participants import participant_reservation_check, participant_seconds_left
from ratings.views_study import _study_with_own_participant


@never_cache
@require_POST
def study_alive(request, slug: str):
    """Who: the participant's open page (the study bar). Records activity; says whether the study is over."""
    _, participant = _study_with_own_participant(request, slug)
    if participant is None:
        return JsonResponse({"finished": True}, status=404)
    participant = participant_reservation_check(participant=participant)
    finished = participant.stage == Participant.Stage.FINISHED
    return JsonResponse(
        {"finished": finished, "seconds_left": 0 if finished else participant_seconds_left(participant=participant)}
    )
