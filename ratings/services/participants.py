"""Crowd participants: arrival from a study link, the path through the study, and how it ends.

A participant is a Django user with an unusable password in the rater group (never shown its platform id),
plus a Participant row bound to (study, platform, platform id). The path, one stage at a time:

    landing -> consent -> questionnaire (if the study has one) -> headphone screens (if any)
    -> instructions with a practice item -> the share of items -> finished

and it ends with one status: completed, screened out (a failed screen, never a rejection), no consent,
timed out, returned, or study full. Each transition checks the stage it starts from, in its conditional UPDATE
or under the participant row's lock (a second tab or a double click changes nothing), and is logged as a
ParticipantEvent.

Arrivals: the same platform id in the same study resumes the same participant (in any browser); a finished
one sees its end page again, never a second participation. Participants of the studies of campaigns the
study names in `excluded_campaigns` are not eligible. New participants per client address are limited to
STUDY_ARRIVALS_PER_ADDRESS per STUDY_ARRIVAL_WINDOW_MINUTES (the address is kept only as a keyed hash), and, whatever
the addresses, at most STUDY_UNSTARTED_LIMIT active participants of a study may be between arrival and the start of
rating: a new arrival past that, or while every slot is reserved by people still rating, is asked to try again
later (nobody is created, no code). Only a study whose every slot is judged is "full".

Time: the study's time limit counts from arrival; every page shows what is left. Each request of the participant
(pages, audio, listening reports, drafts, answers) counts as activity; the MTurk frame's status poll does not.
"""

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Count, Q, Value, When
from django.utils import timezone

from accounts.roles import PARTICIPANT, RATER
from common.compiled_reads import CompiledRead
from ratings import projection
from ratings.crowd_platforms import Arrival
from ratings.models import AssignmentItem, HeadphoneCheck
from ratings.models_study import Participant, ParticipantEvent, Platform, Study, StudySlot
from ratings.services.headphone import headphone_checks_read, headphone_status
from ratings.services.listening import listening_seconds_for
from ratings.services.study_practice import PRACTICE_SECONDS
from ratings.services.study_shares import (
    BEFORE_ITEMS,
    BUSY,
    FULL,
    inactive_since,
    participant_deadline,
    participant_locked_with_study,
    share_allocate,
    share_release,
    study_availability,
    study_locked,
)

USERNAME_PREFIX = "p-"
STAGES = [choice for choice, _ in Participant.Stage.choices]


class ArrivalRefusedError(Exception):
    """Nobody is created: `kind` is closed, not_eligible or rate_limited (the page says what to do)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class StageError(ValueError):
    """The request does not fit the participant's stage (message says why)."""


class StudyBusyError(StageError):
    """No slot is free now, but some are reserved by participants still rating: try again later (not "full")."""


BUSY_MESSAGE = (
    "every clip is being rated by other participants right now; some may come back: try again in a few minutes"
)
# A participant's activity is written at most this often (each request would otherwise write the row).
SEEN_RESOLUTION = timedelta(seconds=30)


def participant_for_user(user) -> Participant | None:
    """The user's participation, or None for accounts that are not crowd participants."""
    if not getattr(user, "is_authenticated", False):
        return None
    cached = getattr(user, "_study_participant", False)
    if cached is False:
        cached = Participant.objects.select_related("study__campaign").filter(user=user).first()
        user._study_participant = cached
    return cached


# The study of a link and a participant of a signed link: read on every landing, headphone page and enter link of
# a crowd, each a join of three or four models whose compiling was most of the read's CPU (compiled once instead).
_STUDY_BY_SLUG = CompiledRead(
    lambda slug: Study.objects.select_related("campaign").filter(slug=slug).order_by(),
    slug="slug-marker-of-a-compiled-read",
)
_PARTICIPANT_BY_USERNAME = CompiledRead(
    lambda username, study_id: Participant.objects.select_related("study__campaign", "user")
    .filter(user__username=username, study_id=study_id)
    .order_by(),
    username="username-marker-of-a-compiled-read",
    study_id=-2_100_000_301,
)


# A slot reserved and not judged yet (or free): asked on every start refused while each slot is reserved.
_SLOT_HELD = CompiledRead(
    lambda study_id: StudySlot.objects.filter(study_id=study_id, item__completed_at__isnull=True)
    .only("pk")
    .order_by()[:1],
    study_id=-2_100_000_331,
)


def study_by_slug(slug: str) -> Study | None:
    """The study with its campaign (None for an unknown slug)."""
    return _STUDY_BY_SLUG.first(slug=slug)


def participant_by_username(*, study: Study, username: str) -> Participant | None:
    """The study's participant of that account name, with the study, campaign and user (None when there is none)."""
    return _PARTICIPANT_BY_USERNAME.first(username=username, study_id=study.pk)


def address_key(address: str) -> str:
    """A keyed hash of a client address: enough to count arrivals, useless to find the person."""
    digest = hmac.new(settings.SECRET_KEY.encode(), (address or "").encode(), hashlib.sha256)
    return digest.hexdigest()[:32]


def _event(participant: Participant, kind: str, **detail) -> None:
    ParticipantEvent.objects.create(participant=participant, kind=kind, detail=detail)


def _locked(participant: Participant) -> Participant:
    return (
        Participant.objects.select_for_update(of=("self",))
        .select_related("study__campaign", "user")
        .get(pk=participant.pk)
    )


def _participant_user(*, now: datetime):
    """A new account for a participant, in the rater and participant groups. Its sign-in is now (the arrival signs
    it in: ratings.authentication.participant_sign_in writes no sign-in time this recent again)."""
    user = get_user_model()(username=USERNAME_PREFIX + secrets.token_hex(8), last_login=now)
    user.set_unusable_password()
    user.save()
    if _groups_join(user) < 2:  # a first participant ever: the participant group is made on demand
        user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in (RATER, PARTICIPANT)))
    return user


def _groups_join(user) -> int:
    """Put the account in those of the rater and participant groups that exist, in one statement (reading the
    groups' ids and writing the links were three statements on every arrival of a crowd); how many it joined. No
    m2m_changed signal is sent: nothing listens to the groups of an account."""
    links = get_user_model().groups.through
    quote = connection.ops.quote_name
    table = quote(links._meta.db_table)
    user_column = quote(links._meta.get_field("user").column)
    group_column = quote(links._meta.get_field("group").column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({user_column}, {group_column}) SELECT %s, {quote(Group._meta.pk.column)} "
            f"FROM {quote(Group._meta.db_table)} WHERE {quote('name')} IN (%s, %s)",
            [user.pk, RATER, PARTICIPANT],
        )
        return cursor.rowcount


def _create(
    *, study: Study, platform: str, platform_id: str, data: dict, key: str, is_preview: bool, is_full: bool = False
) -> Participant:
    """The participant and their "arrived" event. `is_full`: every slot of the study is judged, and the
    participation ends at once with the "study full" code (finished as it is made: no second write of the row)."""
    now = timezone.now()
    ending = (
        {"stage": Participant.Stage.FINISHED, "status": Participant.Status.FULL, "finished_at": now} if is_full else {}
    )
    participant = Participant.objects.create(
        study=study,
        user=_participant_user(now=now),
        platform=platform,
        platform_id=platform_id,
        platform_data=data,
        is_preview=is_preview,
        address_key=key,
        **ending,
    )
    # One by one: an event's post_save checks the Prolific admission limit (ratings/apps.py).
    _event(participant, "arrived", preview=is_preview)
    if is_full:
        _event(participant, "full")
    return participant


# Reads of every arrival of a crowd, each compiled once per process (compiling was most of their CPU).
# The participant the link names in this study or else one of the same platform id in a study of a campaign this
# study excludes (its own first): whether to resume, and whether a newcomer is eligible, in one read.
_ARRIVAL_MATCH = CompiledRead(
    lambda study_id, platform, platform_id: Participant.objects.select_related("user")
    .filter(platform=platform, platform_id=platform_id, is_preview=False)
    .filter(
        Q(study_id=study_id)
        | Q(
            study_id__in=Study.objects.filter(
                campaign__in=Study.excluded_campaigns.through.objects.filter(study_id=study_id).values("campaign_id")
            ).values("pk")
        )
    )
    .annotate(is_own=Case(When(study_id=study_id, then=Value(1)), default=Value(0)))
    .order_by("-is_own")[:1],
    study_id=-2_100_000_501,
    platform="platform-marker-of-a-compiled-read",
    platform_id="platform-id-marker-of-a-compiled-read",
)
_ARRIVALS_FROM_ADDRESS = CompiledRead(
    lambda key, since: Participant.objects.filter(address_key=key, created_at__gte=since, is_preview=False)
    .values("address_key")
    .annotate(count=Count("pk"))
    .order_by(),
    key="address-key-marker-of-a-compiled-read",
    since=datetime(1903, 4, 5, 6, 7, 8, tzinfo=UTC),
)
_UNSTARTED = CompiledRead(
    lambda study_id, since: Participant.objects.filter(
        study_id=study_id,
        is_preview=False,
        stage__in=BEFORE_ITEMS,
        status=Participant.Status.IN_PROGRESS,
        updated_at__gte=since,
    )
    .values("study_id")
    .annotate(count=Count("pk"))
    .order_by(),
    study_id=-2_100_000_511,
    since=datetime(1904, 5, 6, 7, 8, 9, tzinfo=UTC),
)


def participant_arrive(*, study: Study, arrival: Arrival, address: str, now: datetime | None = None) -> Participant:
    """The participant the link names: found (resumed) or created; ArrivalRefusedError when nobody may be created."""
    now = now or timezone.now()
    match = _ARRIVAL_MATCH.first(study_id=study.pk, platform=arrival.platform, platform_id=arrival.participant_id)
    if match is not None and match.study_id == study.pk:
        match.study = study  # the request's own row, read with its campaign
        _event(match, "resumed")
        return match
    if not study.is_open:
        raise ArrivalRefusedError("closed", "this study is closed")
    if match is not None:  # the same id took part in a study whose campaign this one excludes
        raise ArrivalRefusedError(
            "not_eligible", "you took part in a related study, so you cannot take part in this one"
        )
    key = address_key(address)
    window_start = now - timedelta(minutes=settings.STUDY_ARRIVAL_WINDOW_MINUTES)
    recent = _ARRIVALS_FROM_ADDRESS.row(key=key, since=window_start)
    if recent is not None and recent["count"] >= settings.STUDY_ARRIVALS_PER_ADDRESS:
        raise ArrivalRefusedError(
            "rate_limited", "too many new participants arrived from your network; try again later"
        )
    try:
        with transaction.atomic():
            # Under the study's lock: the count of unstarted participants holds however many arrive at once.
            locked = study_locked(study)
            availability = study_availability(study=locked, now=now)
            if availability == BUSY:
                raise ArrivalRefusedError("busy", BUSY_MESSAGE)
            if availability != FULL and unstarted_count(study=locked, now=now) >= settings.STUDY_UNSTARTED_LIMIT:
                raise ArrivalRefusedError(
                    "busy", "many people are starting this study right now; try again in a few minutes"
                )
            return _create(
                study=study,
                platform=arrival.platform,
                platform_id=arrival.participant_id,
                data=arrival.data,
                key=key,
                is_preview=False,
                is_full=availability == FULL,
            )
    except IntegrityError as error:
        # The same id arrived twice at once (two tabs, a double click): the other request created it. Nothing of
        # this request's transaction is kept, so its writes need no savepoint of their own.
        try:
            participant = Participant.objects.select_related("user").get(
                study=study, platform=arrival.platform, platform_id=arrival.participant_id, is_preview=False
            )
        except Participant.DoesNotExist:  # another constraint failed: that error, not a missing participant
            raise error from None
        participant.study = study
        return participant


def unstarted_count(*, study: Study, now: datetime) -> int:
    """Participants between arrival and the start of rating who made a request within STUDY_INACTIVE_MINUTES."""
    row = _UNSTARTED.row(study_id=study.pk, since=inactive_since(now))
    return 0 if row is None else row["count"]


def preview_participant_create(*, study: Study, by) -> Participant:
    """An admin's walk through the study: a participant that takes no slot and counts in no figure."""
    with transaction.atomic():
        participant = _create(
            study=study,
            platform=Platform.PREVIEW,
            platform_id=f"preview-{secrets.token_hex(4)}",
            data={"admin": by.get_username()},
            key="",
            is_preview=True,
        )
        ParticipantEvent.objects.filter(participant=participant).update(by=by)
    return participant


# --- The path --------------------------------------------------------------------------------------------


def stage_needed(study: Study, stage: str) -> bool:
    if stage == Participant.Stage.QUESTIONNAIRE:
        return bool(study.questionnaire)
    if stage == Participant.Stage.SCREENING:
        return bool(study.screen_kinds)
    return True


def _next_stage(study: Study, stage: str) -> str:
    for later in STAGES[STAGES.index(stage) + 1 :]:
        if stage_needed(study, later):
            return later
    return Participant.Stage.FINISHED


def _advance(
    participant: Participant, *, expected: str, kind: str, fields: dict | None = None, **detail
) -> Participant:
    """Move from `expected` to the next stage, setting `fields`; refused from any other stage.

    One conditional UPDATE (the stage it leaves in its WHERE) in place of a locked read: of two requests at once (a
    second tab, a double click) one moves the participant on and logs the event, the other is refused."""
    fields = {**(fields or {}), "stage": _next_stage(participant.study, expected), "updated_at": timezone.now()}
    with transaction.atomic():
        if not Participant.objects.filter(pk=participant.pk, stage=expected).update(**fields):
            current = Participant.objects.get(pk=participant.pk)
            raise StageError(f"this step is done already (you are at: {current.get_stage_display()})")
        for name, value in fields.items():
            setattr(participant, name, value)
        _event(participant, kind, **detail)
    return participant


def _finish(participant: Participant, *, expected: str | None, status: str, kind: str, now=None) -> Participant:
    with transaction.atomic():
        participant = _locked(participant)
        if expected is not None and participant.stage != expected:
            raise StageError(f"this step is done already (you are at: {participant.get_stage_display()})")
        if participant.stage == Participant.Stage.FINISHED:
            return participant
        participant.stage = Participant.Stage.FINISHED
        participant.status = status
        participant.finished_at = now or timezone.now()
        participant.save()
        _event(participant, kind)
    return participant


def participant_start(*, participant: Participant) -> Participant:
    """The participant read the landing page and chose to take part."""
    return _advance(participant, expected=Participant.Stage.LANDING, kind="started")


def participant_consent(*, participant: Participant, agreed: bool) -> Participant:
    """Consent given (on to the next step) or declined (the study ends with the no-consent code)."""
    if not agreed:
        return _finish(
            participant, expected=Participant.Stage.CONSENT, status=Participant.Status.NO_CONSENT, kind="declined"
        )
    return _advance(
        participant, expected=Participant.Stage.CONSENT, kind="consented", fields={"consented_at": timezone.now()}
    )


def questionnaire_answers_clean(*, study: Study, answers: dict) -> dict:
    """Answers keyed by question, or StageError naming the first question answered wrongly."""
    cleaned = {}
    for question in study.questionnaire:
        value = str(answers.get(question["key"], "")).strip()
        if not value and question.get("required"):
            raise StageError(f"Please answer: {question['label']}")
        if value and question.get("choices") and value not in question["choices"]:
            raise StageError(f"{question['label']}: choose one of the options")
        if len(value) > 200:
            raise StageError(f"{question['label']}: at most 200 characters")
        cleaned[question["key"]] = value
    return cleaned


def participant_questionnaire_submit(*, participant: Participant, answers: dict) -> Participant:
    cleaned = questionnaire_answers_clean(study=participant.study, answers=answers)
    return _advance(
        participant,
        expected=Participant.Stage.QUESTIONNAIRE,
        kind="questionnaire",
        fields={"questionnaire_answers": cleaned},
    )


def screening_next_kind(*, participant: Participant, checks: list[HeadphoneCheck] | None = None) -> str | None:
    """The first screen the participant has still to pass (None: all passed). `checks`: their attempts read this
    request (ratings.services.headphone.headphone_checks_read; read here when None)."""
    if checks is None:
        checks = headphone_checks_read(rater=participant.user)
    for kind in participant.study.screen_kinds:
        status = headphone_status(
            rater=participant.user, kind=kind, allowed_failures=participant.study.screen_attempts, checks=checks
        )
        if not status.is_valid:
            return kind
    return None


def participant_screening_advance(
    *, participant: Participant, checks: list[HeadphoneCheck] | None = None
) -> Participant:
    """After a screen attempt: on when every screen is passed, screened out when a screen's attempts are used up.
    `checks`: as screening_next_kind's, including the attempt just submitted."""
    if participant.stage != Participant.Stage.SCREENING:
        return participant
    if checks is None:
        checks = headphone_checks_read(rater=participant.user)
    for kind in participant.study.screen_kinds:
        status = headphone_status(
            rater=participant.user, kind=kind, allowed_failures=participant.study.screen_attempts, checks=checks
        )
        if status.is_blocked:
            return _finish(
                participant,
                expected=Participant.Stage.SCREENING,
                status=Participant.Status.SCREENED_OUT,
                kind=f"screened_out_{kind}",
            )
        if not status.is_valid:
            return participant
    return _advance(participant, expected=Participant.Stage.SCREENING, kind="screens_passed")


def participant_practice_audio_served(*, participant: Participant) -> None:
    """The practice sound went out, whole: its listening time runs from the first time it did."""
    Participant.objects.filter(pk=participant.pk, practice_audio_served_at__isnull=True).update(
        practice_audio_served_at=timezone.now()
    )


def practice_listening_check(*, participant: Participant, now: datetime | None = None) -> None:
    """StageError, saying what is missing, unless the practice sound was served and could have been heard
    (the rule of the rating items: ratings/services/listening.py)."""
    required = listening_seconds_for(PRACTICE_SECONDS)
    now = now or timezone.now()
    served_at = participant.practice_audio_served_at
    if served_at is None or (now - served_at).total_seconds() < required:
        # The participant may have been read before the sound went out: refuse only on the row as it is now (the
        # time is written once, so a participant read this request that passes passes on the row too).
        served_at = (
            Participant.objects.filter(pk=participant.pk).values_list("practice_audio_served_at", flat=True).get()
        )
    if served_at is None:
        raise StageError("the practice sound has not been played yet: play it to its end")
    elapsed = (now - served_at).total_seconds()
    if elapsed < required:
        raise StageError(f"the practice sound needs {required:.1f} s of listening; it started {elapsed:.1f} s ago")


def participant_practice_done(*, participant: Participant) -> Participant:
    """The practice item was answered after its sound was heard (the answer is not stored); the participant may
    start. StageError when the sound cannot have been heard yet."""
    practice_listening_check(participant=participant)
    now = timezone.now()
    with transaction.atomic():
        # A conditional UPDATE in place of a locked read: of two answers at once (two tabs, a double click) one
        # matches the row and logs the event; the other reads the participant as the first left it.
        marked = Participant.objects.filter(
            pk=participant.pk, stage=Participant.Stage.INSTRUCTIONS, practice_done_at__isnull=True
        ).update(practice_done_at=now, updated_at=now)
        if not marked:
            return _locked(participant)
        participant.practice_done_at = participant.updated_at = now
        _event(participant, "practice_done")
    return participant


def participant_items_start(*, participant: Participant) -> Participant:
    """Reserve the share and go to the items; a full study ends with its own code."""
    if participant.stage == Participant.Stage.ITEMS:
        return participant
    if participant.stage != Participant.Stage.INSTRUCTIONS:
        raise StageError(f"finish the earlier steps first (you are at: {participant.get_stage_display()})")
    if participant.practice_done_at is None:
        raise StageError("try the practice item first")
    if not participant.study.is_open:
        raise StageError("this study is closed")
    allocation = share_allocate(participant=participant)
    if allocation.is_full:
        if _SLOT_HELD.first(study_id=participant.study_id) is not None:
            # Reserved by others still rating, not judged: they may come back. The participant stays here.
            raise StudyBusyError(BUSY_MESSAGE)
        return _finish(
            participant, expected=Participant.Stage.INSTRUCTIONS, status=Participant.Status.FULL, kind="full"
        )
    return allocation.participant


def participant_finish_if_done(*, participant: Participant, now: datetime | None = None) -> Participant:
    """Complete the participation once every item of the share is answered; apply the exclusion rules."""
    from ratings.services.study_exclusion import exclusion_apply_rules

    with transaction.atomic():
        # The study first: exclusion gives slots back, which only happens under the study's lock.
        participant = participant_locked_with_study(participant)
        if participant.stage != Participant.Stage.ITEMS:
            return participant
        items = AssignmentItem.objects.filter(
            assignment__campaign=participant.study.campaign, assignment__rater=participant.user
        )
        if not items.exists() or items.filter(completed_at__isnull=True).exists():
            return participant
        participant.stage = Participant.Stage.FINISHED
        participant.status = Participant.Status.COMPLETED
        participant.finished_at = now or timezone.now()
        participant.save()
        _event(participant, "completed")
        exclusion_apply_rules(participant=participant)
    return participant


def participant_items_finish_or_next(*, participant: Participant) -> tuple[Participant, str | None]:
    """The token of the participant's next unanswered item, or (once all are answered) None and the finished
    participant."""
    items = AssignmentItem.objects.filter(
        assignment__campaign=participant.study.campaign, assignment__rater=participant.user
    )
    next_token = projection.next_open_token(items)
    if next_token is not None:
        return participant, next_token
    return participant_finish_if_done(participant=participant), None


def participant_return(*, participant: Participant) -> Participant:
    """The participant leaves the study before the end: their unanswered items go to the next participants."""
    if participant.stage == Participant.Stage.FINISHED:
        return participant
    if participant.stage == Participant.Stage.ITEMS:
        return share_release(participant=participant, status=Participant.Status.RETURNED, kind="returned")
    return _finish(participant, expected=None, status=Participant.Status.RETURNED, kind="returned")


def participant_seen(*, participant: Participant, now: datetime) -> None:
    """Record a request of the participant (their activity: inactive shares go back when others need them)."""
    if participant.updated_at is None or now - participant.updated_at >= SEEN_RESOLUTION:
        Participant.objects.filter(pk=participant.pk).update(updated_at=now)
        participant.updated_at = now


def participant_seconds_left(*, participant: Participant, now: datetime | None = None) -> int:
    """Whole seconds until the participant's time limit (0 once it has passed)."""
    left = (participant_deadline(participant) - (now or timezone.now())).total_seconds()
    return max(0, int(left))


def participant_reservation_check(
    *, participant: Participant, now: datetime | None = None, grace: bool = False, active: bool = True
) -> Participant:
    """A participant whose time ran out is timed out now (while rating, their open items are released; what was
    answered stays). `grace`: an answer or draft sent as the countdown ended (STUDY_EXPIRY_GRACE_SECONDS late at
    most) still lands. `active`: the request counts as the participant's activity."""
    now = now or timezone.now()
    if participant.stage == Participant.Stage.FINISHED:
        return participant
    if active:
        participant_seen(participant=participant, now=now)
    deadline = participant_deadline(participant)
    if grace:
        deadline += timedelta(seconds=settings.STUDY_EXPIRY_GRACE_SECONDS)
    if deadline >= now:
        return participant
    if participant.stage == Participant.Stage.ITEMS:
        participant = participant_finish_if_done(participant=participant, now=now)
        if participant.stage == Participant.Stage.ITEMS:
            return share_release(
                participant=participant,
                status=Participant.Status.TIMED_OUT,
                kind="timed_out",
                now=now,
                reason="time_limit",
            )
        return participant
    with transaction.atomic():
        participant = _locked(participant)
        if participant.stage == Participant.Stage.FINISHED:
            return participant
        stage = participant.stage
        participant.stage = Participant.Stage.FINISHED
        participant.status = Participant.Status.TIMED_OUT
        participant.finished_at = now
        participant.save()
        _event(participant, "timed_out", stage=stage, reason="time_limit")
    return participant
