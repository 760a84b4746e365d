"""What an admin sees of a crowd study: participants with time and pay, item timings, the pay export.

- Per item: time on page (first shown to first submitted, `AssignmentItem.seconds_spent`), time listening
  (`item_listening_seconds`) and answer changes after submitting (logged `changed` / `stale_replaced` events).
- Per participant: total time from arrival to the end (or to now), items done of the share, checks failed,
  median time per item and, for completed participants, the effective hourly pay (reward / total hours).
- The study: participants by outcome, the median effective hourly pay of completed participants (previews
  never count), with a warning below the study's minimum.
- The pay export (CSV), one file per platform the study recruits on (each platform's bulk tools read only their
  own participants): platform, participant id, the participant key the study's exports share, Prolific's
  STUDY_ID and SESSION_ID, MTurk assignment and HIT ids, outcome, completion code (the code the participant was
  given), minutes, reasons, rule codes and `action` (ratings/services/study_policy.py): approve (completed, or
  excluded by performance rules only: data left out, paid), reject (an instructional rule), screen-out (screened
  out or study full on Prolific or a panel: the platform's screen-out, never a rejection), return (MTurk: the
  worker returns the HIT, nothing to approve), none.
"""

import csv
import io
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Q
from django.utils import timezone

from ratings.models import AssignmentItem, ItemEvent
from ratings.models_study import AttentionCheck, Participant, Study
from ratings.services.listening import served_coverage
from ratings.services.study_policy import (
    ending_action,
    ending_returns_submission,
    exclusion_action,
    return_rejection_reason,
)

CENT = Decimal("0.01")
CHANGE_KINDS = (ItemEvent.Kind.CHANGED, ItemEvent.Kind.STALE_REPLACED)
# `participant`: the key every export of the study names the participant by (the THumBS CSV's `rater`, the
# pairwise vote table's `participant`); the platform's ids sit beside it only here.
MTURK_PAY_COLUMNS = (
    "HITId",
    "AssignmentId",
    "WorkerId",
    "participant",
    "status",
    "completion_code",
    "minutes",
    "reasons",
    "rules",
    "action",
    "Approve",
    "Reject",
)
PAY_COLUMNS = (
    "platform",
    "participant_id",
    "participant",
    "study_id",
    "session_id",
    "assignment_id",
    "hit_id",
    "status",
    "completion_code",
    "minutes",
    "reasons",
    "rules",
    "action",
)


def item_listening_seconds(item: AssignmentItem) -> float | None:
    """Seconds the participant listened to the item's clip, from what the server served; None when no audio went out.

    The server records the bytes of the item's rater audio it sent and when the first went out
    (ratings/services/listening.py). Listening time: from that first byte to the accepted "listened" report (or
    to the answer, or now), capped at the part of the clip that was served.
    """
    if item.audio_first_served_at is None:
        return None
    end = item.listened_at or item.completed_at or timezone.now()
    heard = max(0.0, (end - item.audio_first_served_at).total_seconds())
    duration = item.clip.duration_seconds
    if not duration:
        return heard
    return min(heard, duration * served_coverage(item.audio_served or {}))


def participant_code(participant: Participant) -> str:
    """The code the participant's end page shows (empty while they are still in the study)."""
    study = participant.study
    if ending_returns_submission(study, participant.ending_platform, participant.status):
        return ""  # asked to return the study (MTurk): a code would only submit a HIT nobody should pay for
    return {
        Participant.Status.COMPLETED: study.completion_code,
        Participant.Status.SCREENED_OUT: study.screen_out_code,
        Participant.Status.NO_CONSENT: study.no_consent_code,
        Participant.Status.FULL: study.full_code,
    }.get(participant.status, "")


@dataclass
class ParticipantRow:
    participant: Participant
    items_total: int = 0
    items_done: int = 0
    checks_total: int = 0
    checks_failed: int = 0
    median_seconds: float | None = None
    total_seconds: float | None = None
    hourly_pay: Decimal | None = None
    code: str = ""

    @property
    def minutes(self) -> float | None:
        return None if self.total_seconds is None else self.total_seconds / 60

    @property
    def minutes_text(self) -> str:
        """Minutes with one decimal, never "-0.0" (a study full at arrival ends in the second it began)."""
        return "" if self.minutes is None else f"{max(0.0, round(self.minutes, 1)) + 0.0:.1f}"


def _hourly_pay(reward: Decimal, seconds: float | None) -> Decimal | None:
    if not seconds or seconds <= 0:
        return None
    return (reward * Decimal(3600) / Decimal(str(seconds))).quantize(CENT)


def study_participant_rows(*, study: Study, include_previews: bool = False) -> list[ParticipantRow]:
    """One row per participant, in arrival order (four queries, whatever the number of participants)."""
    participants = list(study.participants.select_related("user", "study").order_by("created_at", "pk"))
    if not include_previews:
        participants = [participant for participant in participants if not participant.is_preview]
    user_ids = [participant.user_id for participant in participants]
    seconds: dict[int, list[float]] = defaultdict(list)
    items = AssignmentItem.objects.filter(assignment__campaign=study.campaign, assignment__rater_id__in=user_ids)
    counts = {
        row["assignment__rater_id"]: row
        for row in items.order_by()
        .values("assignment__rater_id")
        .annotate(total=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False)))
    }
    for rater_id, spent in items.filter(seconds_spent__isnull=False).values_list(
        "assignment__rater_id", "seconds_spent"
    ):
        seconds[rater_id].append(spent)
    checks = {
        row["rater_id"]: row
        for row in AttentionCheck.objects.filter(campaign=study.campaign, rater_id__in=user_ids)
        .order_by()
        .values("rater_id")
        .annotate(total=Count("pk"), failed=Count("pk", filter=Q(passed=False)))
    }
    now = timezone.now()
    rows = []
    for participant in participants:
        item_counts = counts.get(participant.user_id, {})
        check_counts = checks.get(participant.user_id, {})
        end = participant.finished_at or now
        # An arrival that ends at once (study full) can end a moment before its row was written: never negative.
        total = max(0.0, (end - participant.created_at).total_seconds())
        completed = participant.status == Participant.Status.COMPLETED
        rows.append(
            ParticipantRow(
                participant=participant,
                items_total=item_counts.get("total", 0),
                items_done=item_counts.get("done", 0),
                checks_total=check_counts.get("total", 0),
                checks_failed=check_counts.get("failed", 0),
                median_seconds=statistics.median(seconds[participant.user_id])
                if seconds[participant.user_id]
                else None,
                total_seconds=total,
                hourly_pay=_hourly_pay(study.reward, total) if completed else None,
                code=participant_code(participant),
            )
        )
    return rows


OUTCOMES = ("in_progress", "completed", "excluded", "screened_out", "no_consent", "timed_out", "returned", "full")


@dataclass
class StudySummary:
    counts: dict[str, int] = field(default_factory=dict)
    arrivals: int = 0
    # Arrivals per platform the study recruits on, in the study's order: [(platform, count)].
    platform_arrivals: list[tuple[str, int]] = field(default_factory=list)
    median_hourly_pay: Decimal | None = None
    pay_warning: str = ""


def study_summary(*, rows: list[ParticipantRow], study: Study) -> StudySummary:
    """Participants by outcome, and the median effective hourly pay of completed participants."""
    counts = {outcome: 0 for outcome in OUTCOMES}
    for row in rows:
        counts[row.participant.outcome] += 1
    pays = [row.hourly_pay for row in rows if row.hourly_pay is not None]
    # The median of an even count is a midpoint (88.595): money is shown to the cent.
    median = statistics.median(pays).quantize(CENT) if pays else None
    warning = ""
    if median is not None and study.minimum_hourly_pay is not None and median < study.minimum_hourly_pay:
        warning = (
            f"The median effective pay, {median} {study.reward_currency} per hour, is below the minimum you set "
            f"({study.minimum_hourly_pay} {study.reward_currency}): raise the reward or shorten the study."
        )
    by_platform = [
        (platform, sum(1 for row in rows if row.participant.platform == platform)) for platform in study.platforms
    ]
    return StudySummary(
        counts=counts,
        arrivals=len(rows),
        platform_arrivals=by_platform,
        median_hourly_pay=median,
        pay_warning=warning,
    )


def pay_action(participant: Participant) -> str:
    """approve, reject, screen-out, return or none: ratings/services/study_policy.py decides, from the rules that
    excluded the participant (only an instructional one rejects) or from how the study ended on its platform."""
    if participant.is_excluded:
        return exclusion_action(participant.exclusion_codes)
    return ending_action(participant.study, participant.platform, participant.status)


def study_pay_csv(*, study: Study, platform: str) -> str:
    """The pay export of the participants who came from `platform` (see the module docstring); previews are left
    out.

    An MTurk study's file has MTurk's own column names for the ids and its `Approve` ("x") and `Reject` (the
    reasons) columns, which its batch upload reads. Workers asked to return the HIT after no work are not approved;
    their `Reject` says why, in case one submitted the HIT anyway (MTurk would approve it unmarked).
    """
    is_mturk = platform == "mturk"
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(MTURK_PAY_COLUMNS if is_mturk else PAY_COLUMNS)
    for row in study_participant_rows(study=study):
        participant = row.participant
        if participant.platform != platform:
            continue
        data = participant.platform_data or {}
        action = pay_action(participant)
        reasons = "; ".join(participant.exclusion_reasons)
        rules = " ".join(participant.exclusion_codes)
        key = participant.user.get_username()
        common = [participant.outcome, row.code, row.minutes_text, reasons, rules, action]
        if is_mturk:
            approve = "x" if action == "approve" else ""
            reject = (
                (reasons or "excluded")
                if action == "reject"
                else return_rejection_reason(study, platform, participant.status)
            )
            writer.writerow(
                [data.get("hitId", ""), data.get("assignmentId", ""), participant.platform_id, key, *common]
                + [approve, reject]
            )
            continue
        writer.writerow(
            [
                participant.platform,
                participant.platform_id,
                key,
                data.get("STUDY_ID", ""),
                data.get("SESSION_ID", ""),
                data.get("assignmentId", ""),
                data.get("hitId", ""),
                *common,
            ]
        )
    return buffer.getvalue()


def participant_item_timings(*, participant: Participant) -> list[dict]:
    """Per item of the participant's share, in their order: time on page, listening, answer changes, check."""
    items = list(
        AssignmentItem.objects.filter(
            assignment__campaign=participant.study.campaign, assignment__rater=participant.user
        )
        .select_related("clip")
        .annotate(changes=Count("events", filter=Q(events__kind__in=CHANGE_KINDS)))
        .order_by("position")
    )
    checks = {check.item_id: check for check in AttentionCheck.objects.filter(item__in=items).order_by("pk")}
    return [
        {
            "number": number,
            "completed": item.completed_at is not None,
            "seconds_on_page": item.seconds_spent,
            "seconds_listening": item_listening_seconds(item),
            "answer_changes": item.changes,
            "check": checks[item.pk].get_kind_display() if item.pk in checks else "",
            "check_passed": checks[item.pk].passed if item.pk in checks else None,
        }
        for number, item in enumerate(items, start=1)
    ]
