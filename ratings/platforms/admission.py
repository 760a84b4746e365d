"""Prolific admission control, applied when participants arrive and when they finish (not only at a sync).

With a limit set (StudyPlatformLink.active_limit), the Prolific study is paused while that many participants or more
are in progress (arrived, not finished) and started again when fewer are; only a pause this rule made is lifted.

Every arrival and every ending is a ParticipantEvent, whichever service made it (the path, the leave button, a
time-out, the inactive release, a Prolific sync): one receiver of those events schedules the check after the
transaction commits, as a Celery task, so a participant's request never waits for Prolific. The check itself
locks the link row while it decides and sends, so two checks at once send one PAUSE, and a state already
reached sends nothing (idempotent); each request is a PlatformAction in the study's log.
"""

from dataclasses import dataclass

from django.db import transaction

from common.compiled_reads import CompiledRead
from ratings.crowd_platforms import PROLIFIC
from ratings.models_platforms import StudyPlatformLink
from ratings.models_study import Participant, Study

# Event kinds after which the number of participants in progress may have changed.
ARRIVAL_KINDS = {"arrived"}
ENDING_KINDS = {"completed", "declined", "full", "returned", "timed_out"}
SCREENED_OUT_PREFIX = "screened_out"


@dataclass(frozen=True)
class AdmissionDecision:
    active: int
    limit: int
    action: str  # "PAUSE", "START" or "" (nothing to send)

    def describe(self) -> str:
        if not self.limit:
            return "no limit set: Prolific is never paused for it"
        now = f"{self.active} participant{'s' if self.active != 1 else ''} in progress, limit {self.limit}"
        if self.action == "PAUSE":
            return f"{now}: the study would be paused on Prolific now"
        if self.action == "START":
            return f"{now}: the study would be started again on Prolific now"
        return f"{now}: nothing to send"


def in_progress_count(study: Study) -> int:
    return study.participants.filter(is_preview=False).exclude(stage=Participant.Stage.FINISHED).count()


def admission_decide(*, study: Study, link: StudyPlatformLink) -> AdmissionDecision:
    """What the rule asks for now (the settings' preview shows it; the check sends it)."""
    if not link.active_limit or not link.prolific_study_id or not study.recruits_on(PROLIFIC):
        return AdmissionDecision(0, 0, "")
    active = in_progress_count(study)
    if active >= link.active_limit and not link.paused_for_limit:
        action = "PAUSE"
    elif active < link.active_limit and link.paused_for_limit:
        action = "START"
    else:
        action = ""
    return AdmissionDecision(active, link.active_limit, action)


def admission_preview(*, study: Study) -> AdmissionDecision:
    link = StudyPlatformLink.objects.filter(study=study).first() or StudyPlatformLink(study=study)
    return admission_decide(study=study, link=link)


# Read after every arrival and ending event (a crowd's arrivals are most of them): compiled once per process.
_LINK_WITH_LIMIT = CompiledRead(
    lambda study_id: StudyPlatformLink.objects.filter(study_id=study_id, active_limit__gt=0)
    .exclude(prolific_study_id="")
    .select_related("study")
    .order_by()[:1],
    study_id=-2_100_000_521,
)


def admission_check_needed(*, study_id: int) -> bool:
    """Cheap test before scheduling: only a Prolific study with a limit and a STUDY_ID is ever paused."""
    link = _LINK_WITH_LIMIT.first(study_id=study_id)
    return link is not None and link.study.recruits_on(PROLIFIC)


def admission_schedule(*, study_id: int) -> None:
    """Run the check after the current transaction commits (its counts then include this arrival or ending)."""
    if not admission_check_needed(study_id=study_id):
        return
    from ratings.tasks import study_admission_apply

    transaction.on_commit(lambda: study_admission_apply.delay(study_id))


def event_changes_admission(kind: str) -> bool:
    return kind in ARRIVAL_KINDS or kind in ENDING_KINDS or kind.startswith(SCREENED_OUT_PREFIX)
