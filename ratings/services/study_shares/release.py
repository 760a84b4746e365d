"""Shares given back: returns, time-outs (time limit or inactivity), exclusion and reinstatement free slots or
take them back; abandoned arrivals are timed out."""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.compiled_reads import CompiledRead
from ratings.models import AssignmentItem
from ratings.models_study import AttentionCheck, Participant, ParticipantEvent, Study, StudySlot
from ratings.services.study_shares.slots import participant_locked_with_study, study_locked


def _release(participant: Participant, *, answered_too: bool) -> dict:
    """Free the participant's slots (the caller holds the study and participant locks); delete unanswered items.

    The items are locked first, so a submission in flight either lands before (the item counts as answered)
    or finds its item gone (and is refused): never a judgement on a slot someone else holds.
    """
    items = list(
        AssignmentItem.objects.select_for_update()
        .filter(assignment__campaign=participant.study.campaign, assignment__rater=participant.user)
        .order_by("pk")
    )
    unanswered = [item.pk for item in items if item.completed_at is None]
    # An answer started but not submitted is kept in the record (the admin's participant page, the end page
    # says so) though its item goes to someone else: nothing typed is lost silently, nothing unsent counts.
    drafts = [
        {"position": item.position, "draft": item.draft} for item in items if not item.completed_at and item.draft
    ]
    slots = StudySlot.objects.filter(participant=participant)
    if not answered_too:
        slots = slots.filter(Q(item_id__in=unanswered) | Q(item__isnull=True))
    freed = slots.update(participant=None, item=None)
    AssignmentItem.objects.filter(pk__in=unanswered).delete()
    detail = {"slots_freed": freed, "unanswered_items_removed": len(unanswered)}
    if drafts:
        detail["drafts_kept"] = drafts
    return detail


def share_release(
    *, participant: Participant, status: str, kind: str, now: datetime | None = None, reason: str = ""
) -> Participant:
    """End a participation that did not complete (timed out, returned): give its unanswered items back.
    `reason` (time_limit, inactive) goes into the event's detail."""
    now = now or timezone.now()
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        if participant.stage == Participant.Stage.FINISHED:
            return participant
        detail = _release(participant, answered_too=False)
        if reason:
            detail["reason"] = reason
        participant.stage = Participant.Stage.FINISHED
        participant.status = status
        participant.finished_at = now
        participant.save(update_fields=["stage", "status", "finished_at", "updated_at"])
        ParticipantEvent.objects.create(participant=participant, kind=kind, detail=detail)
    return participant


def slots_release_for_exclusion(*, participant: Participant) -> dict:
    """An excluded participant's slots go back to the pool (their answers stay, left out of every figure)."""
    with transaction.atomic():
        return _release(participant_locked_with_study(participant), answered_too=True)


def slots_retake_for_reinstatement(*, participant: Participant, partial: bool = False) -> dict:
    """A reinstated participant takes back a free slot of each item they answered; `items_over_count`: items with
    no free slot left. Then nothing is taken unless `partial` (the free slots are taken, the rest is over)."""
    with transaction.atomic():
        participant = participant_locked_with_study(participant)
        study = participant.study
        answered = AssignmentItem.objects.filter(
            assignment__campaign=study.campaign, assignment__rater=participant.user, completed_at__isnull=False
        ).exclude(attention_checks__kind=AttentionCheck.Kind.GOLD_PAIR)
        plan, over = [], 0
        for item in answered:
            if StudySlot.objects.filter(study=study, participant=participant, item=item).exists():
                continue
            lookup = {"pair_id": item.pair_id} if item.pair_id else {"clip_id": item.clip_id, "pair__isnull": True}
            # Locked: a start claims free slots without the study's lock, so a slot read as free could be taken.
            slot = (
                StudySlot.objects.select_for_update()
                .filter(study=study, participant__isnull=True, **lookup)
                .order_by("number")
                .first()
            )
            if slot is None:
                over += 1
            else:
                plan.append((slot, item))
        if over and not partial:
            return {"slots_retaken": 0, "items_over_count": over}
        for slot, item in plan:
            StudySlot.objects.filter(pk=slot.pk, participant__isnull=True).update(participant=participant, item=item)
        return {"slots_retaken": len(plan), "items_over_count": over}


def inactive_since(now: datetime) -> datetime:
    """Participants whose last request came before this are inactive (STUDY_INACTIVE_MINUTES)."""
    return now - timedelta(minutes=settings.STUDY_INACTIVE_MINUTES)


def _holding_ended(study: Study, now: datetime, *, inactive_too: bool) -> Q:
    """Participants holding a share whose reservation ran out (and, `inactive_too`, who went quiet)."""
    ended = Q(reserved_until__lt=now)
    if inactive_too:
        ended |= Q(updated_at__lt=inactive_since(now))
    return Q(study=study, stage=Participant.Stage.ITEMS) & ended


def _holding_ended_read(study_id: int, now: datetime, inactive_since: datetime):
    ended = Q(reserved_until__lt=now) | Q(updated_at__lt=inactive_since)
    return Participant.objects.filter(ended, study_id=study_id, stage=Participant.Stage.ITEMS).only("pk").order_by()[:1]


# Asked before every share is planned, on every press of "start": compiled once (as _holding_ended, inactive too).
_HOLDING_ENDED = CompiledRead(
    _holding_ended_read,
    study_id=-2_100_000_351,
    now=datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC),
    inactive_since=datetime(1902, 3, 4, 5, 6, 7, tzinfo=UTC),
)


def expired_shares_release_if_due(*, study: Study, now: datetime) -> None:
    """Shares of participants whose time ran out, or who went quiet, come back before a share is planned. The
    study's lock is taken only when someone is due (one read otherwise), so starts do not queue behind it."""
    if _HOLDING_ENDED.first(study_id=study.pk, now=now, inactive_since=inactive_since(now)) is not None:
        with transaction.atomic():
            expired_shares_release(study=study_locked(study), now=now, inactive_too=True)


def expired_shares_release(*, study: Study, now: datetime, inactive_too: bool = False) -> int:
    """Time out every participant of the study whose reservation ran out and, with `inactive_too` (someone needs
    the slots now), those who made no request for STUDY_INACTIVE_MINUTES (the caller holds the study lock)."""
    from ratings.services.participants import participant_finish_if_done

    count = 0
    for participant in Participant.objects.filter(_holding_ended(study, now, inactive_too=inactive_too)):
        reason = "time_limit" if participant.reserved_until and participant.reserved_until < now else "inactive"
        # Everything answered but the end page never reached: that is a completion, not a timeout.
        if participant_finish_if_done(participant=participant, now=now).stage != Participant.Stage.FINISHED:
            share_release(
                participant=participant, status=Participant.Status.TIMED_OUT, kind="timed_out", now=now, reason=reason
            )
            count += 1
    return count


FREE, BUSY, FULL = "free", "busy", "full"


def study_availability(*, study: Study, now: datetime) -> str:
    """FREE: a slot is free (after releasing shares that ran out or went quiet; the caller holds the study lock);
    BUSY: none is free but some are reserved by participants still rating (they may come back: "try again
    later", no code); FULL: every slot is judged (the "study full" ending). Reservations alone never make a
    study full, so participants who reserve shares and do nothing cannot send others away with a paid code."""
    slots = StudySlot.objects.filter(study=study)
    if slots.filter(participant__isnull=True).exists():
        return FREE
    expired_shares_release(study=study, now=now, inactive_too=True)
    if slots.filter(participant__isnull=True).exists():
        return FREE
    return BUSY if slots.filter(item__completed_at__isnull=True).exists() else FULL


BEFORE_ITEMS = (
    Participant.Stage.LANDING,
    Participant.Stage.CONSENT,
    Participant.Stage.QUESTIONNAIRE,
    Participant.Stage.SCREENING,
    Participant.Stage.INSTRUCTIONS,
)


def abandoned_arrivals_time_out(*, study: Study, now: datetime) -> int:
    """Participants who stopped before their share, for longer than the time limit, are timed out (no slot to free)."""
    limit = now - timedelta(minutes=study.time_limit_minutes)
    # Arrived longer ago than the time limit (the countdown reached 0), or silent that long.
    abandoned = Participant.objects.filter(study=study, stage__in=BEFORE_ITEMS).filter(
        Q(created_at__lt=limit) | Q(updated_at__lt=limit)
    )
    count = 0
    for participant in abandoned:
        ParticipantEvent.objects.create(
            participant=participant, kind="timed_out", detail={"stage": participant.stage, "reason": "time_limit"}
        )
        count += 1
    abandoned.update(
        stage=Participant.Stage.FINISHED, status=Participant.Status.TIMED_OUT, finished_at=now, updated_at=now
    )
    return count


def expired_shares_release_now(*, study: Study) -> int:
    """Time out the participants whose reservation ran out, or who abandoned the study before their share (the
    admin page calls this before showing the study)."""
    now = timezone.now()
    abandoned_arrivals_time_out(study=study, now=now)
    if not Participant.objects.filter(study=study, stage=Participant.Stage.ITEMS, reserved_until__lt=now).exists():
        return 0
    with transaction.atomic():
        return expired_shares_release(study=study_locked(study), now=now)
