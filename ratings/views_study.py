"""The crowd participant's pages under /study/<slug>/: arrival, landing, consent, questionnaire, headphone screens,
instructions with a practice item, and the end page with the code and the way back to the platform.

The items themselves are the ordinary rating pages (/ratings/items/<token>/): a participant is a rater, so
what raters receive is what participants receive. Each page here serves one stage of the path
(ratings/services/participants.py); a participant who opens another stage's page is sent to their own.
The platform id is taken from the arrival link once and never shown again (nor put in any later URL).
"""

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.roles import PARTICIPANT, RATER, request_roles_known
from common.client_address import client_address
from ratings.authentication import participant_sign_in
from ratings.crowd_platforms import (
    GENERIC,
    MTURK,
    PROLIFIC,
    ArrivalError,
    arrival_parse,
    arrival_platform,
    generic_redirect_url,
    mturk_submit_url,
    prolific_completion_url,
)
from ratings.forms import PENALTY_FIELDS, RUBRIC, HeadphoneAnswersForm
from ratings.middleware import FRAME_SUBMITS, opener_keep
from ratings.models import Campaign
from ratings.models_study import Participant, Study
from ratings.services.headphone import (
    HeadphoneCheckError,
    headphone_check_start,
    headphone_check_submit,
    headphone_checks_read,
    headphone_status,
)
from ratings.services.participants import (
    ArrivalRefusedError,
    StageError,
    StudyBusyError,
    participant_arrive,
    participant_by_username,
    participant_consent,
    participant_for_user,
    participant_items_finish_or_next,
    participant_items_start,
    participant_practice_audio_served,
    participant_practice_done,
    participant_questionnaire_submit,
    participant_reservation_check,
    participant_return,
    participant_screening_advance,
    participant_start,
    screening_next_kind,
    stage_needed,
    study_by_slug,
)
from ratings.services.study_policy import ending_returns_submission
from ratings.services.study_practice import (
    PRACTICE_SECONDS,
    practice_captions,
    practice_feedback,
    practice_peaks,
    practice_right_first,
    practice_wav,
)
from ratings.services.study_report import participant_code
from ratings.views_headphone import headphone_check_page

ENTER_SALT = "study-enter"
STAGE_URLS = {
    Participant.Stage.LANDING: "study:entry",
    Participant.Stage.CONSENT: "study:consent",
    Participant.Stage.QUESTIONNAIRE: "study:questionnaire",
    Participant.Stage.SCREENING: "study:headphones",
    Participant.Stage.INSTRUCTIONS: "study:instructions",
    Participant.Stage.ITEMS: "study:items",
    Participant.Stage.FINISHED: "study:end",
}


def stage_url(participant: Participant) -> str:
    """The page of the participant's current stage."""
    return reverse(STAGE_URLS[participant.stage], kwargs={"slug": participant.study.slug})


def enter_token(participant: Participant) -> str:
    """A signed link token that signs a browser in as the participant (a new window from MTurk, an admin preview)."""
    # The participant's account name (random), not a database id: the token is readable by whoever holds it.
    return signing.dumps({"user": participant.user.get_username()}, salt=ENTER_SALT, compress=True)


def _participant_from_token(study: Study, token: str) -> Participant:
    try:
        data = signing.loads(token, salt=ENTER_SALT, max_age=settings.STUDY_ENTER_LINK_HOURS * 3600)
    except signing.BadSignature:
        raise Http404("This link is not valid (or has expired)") from None
    username = data.get("user") if isinstance(data, dict) else None
    participant = participant_by_username(study=study, username=username) if isinstance(username, str) else None
    if participant is None:
        raise Http404("No such participant")
    return participant


def _study(slug: str) -> Study:
    study = study_by_slug(slug)
    if study is None:
        raise Http404("No such study")
    return study


def _own_participant(request, study: Study) -> Participant | None:
    participant = participant_for_user(request.user)
    return participant if participant is not None and participant.study_id == study.pk else None


def participant_roles_known(request) -> None:
    """A participant's account is made with the rater and participant groups (ratings.services.participants): the
    pages' role checks and navigation take them from here, sparing a query on each request of a crowd."""
    request_roles_known(request, {RATER, PARTICIPANT})


def _study_with_own_participant(request, slug: str) -> tuple[Study, Participant | None]:
    """The study of the link and the signed-in participant of it (None for anyone else); the participant's own
    study row (loaded with them) spares reading it again on each of their requests."""
    participant = participant_for_user(request.user)
    if participant is not None and participant.study.slug == slug:
        participant_roles_known(request)
        return participant.study, participant
    return _study(slug), None


CONTINUE_AS_PARTICIPANT = "continue_as_participant"


def _account_in_the_way(request) -> bool:
    """Whether a participant link would sign out an account of this app (staff, a rater): a participant's sign-in
    replaces the session, so the person is asked first (`_switch_confirm`). A participant account of any study
    is replaced without asking: it is nobody's to lose."""
    if not request.user.is_authenticated or participant_for_user(request.user) is not None:
        return False
    return not (request.method == "POST" and request.POST.get(CONTINUE_AS_PARTICIPANT) == "1")


def _switch_confirm(request, study: Study):
    """The page asking a signed-in account to continue as the participant (signing out) or go back."""
    return render(
        request,
        "ratings/study/signed_in.html",
        _context(study, account_name=request.user.get_username(), continue_field=CONTINUE_AS_PARTICIPANT),
    )


def _sign_in(request, participant: Participant) -> None:
    if request.user.is_authenticated and request.user.pk == participant.user_id:
        return
    participant_sign_in(request, participant.user)
    request.user._study_participant = participant
    participant_roles_known(request)


STEP_LABELS = {
    Participant.Stage.CONSENT: "Consent",
    Participant.Stage.QUESTIONNAIRE: "About you",
    Participant.Stage.SCREENING: "Headphone check",
    Participant.Stage.INSTRUCTIONS: "Practice",
    Participant.Stage.ITEMS: "Rating",
}


def _steps_done_by(participant: Participant) -> set[str]:
    """The steps a finished participant went through: a study can end at any step (declined consent, study full
    at arrival, screened out), and only the steps passed before that are done."""
    done = set()
    if participant.consented_at is not None:
        done.add(Participant.Stage.CONSENT)
    if participant.questionnaire_answers:
        done.add(Participant.Stage.QUESTIONNAIRE)
    if participant.practice_done_at is not None or participant.events.filter(kind="screens_passed").exists():
        done.add(Participant.Stage.SCREENING)
    if participant.practice_done_at is not None:
        done.add(Participant.Stage.INSTRUCTIONS)
    if participant.status == Participant.Status.COMPLETED:
        done.add(Participant.Stage.ITEMS)
    return done


def _steps(study: Study, participant: Participant | None) -> list[dict]:
    """The study's steps with the participant's place among them (the progress line on every page)."""
    if participant is None:
        return []
    stages = list(STAGE_URLS)
    current = stages.index(participant.stage)
    finished = participant.stage == Participant.Stage.FINISHED
    done = _steps_done_by(participant) if finished else set()
    return [
        {
            "label": label,
            "is_done": stage in done if finished else current > stages.index(stage),
            "is_current": participant.stage == stage,
        }
        for stage, label in STEP_LABELS.items()
        if stage_needed(study, stage)
    ]


# How the end page names the platform a participant goes back to.
PLATFORM_NAMES = {PROLIFIC: "Prolific", MTURK: "MTurk", GENERIC: "the panel you came from"}


def _platform_name(study: Study, participant: Participant | None) -> str:
    """The platform the participant goes back to; before we know them, the study's only platform if it has one."""
    if participant is not None:
        platform = participant.ending_platform
    else:
        platform = study.platforms[0] if len(study.platforms) == 1 else ""
    return PLATFORM_NAMES.get(platform, "your platform")


def _context(study: Study, participant: Participant | None = None, **extra) -> dict:
    campaign = study.campaign
    return {
        "study": study,
        "study_title": campaign.rater_title,
        "participant": participant,
        "is_pairwise": campaign.task_type == Campaign.TaskType.PAIRWISE,
        "steps": _steps(study, participant),
        "platform_name": _platform_name(study, participant),
        **extra,
    }


def _mturk_frameable(view):
    """MTurk shows an ExternalQuestion in a frame on its own pages: these pages allow exactly those frames."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        ancestors = " ".join(["'self'", *settings.MTURK_FRAME_ANCESTORS])
        response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
        return response

    return xframe_options_exempt(wrapped)


def participant_page(stage: str):
    """A stage's page: the signed-in participant of this study at that stage; anyone else is sent on."""

    def decorator(view):
        @never_cache
        @wraps(view)
        def wrapped(request, slug: str, *args, **kwargs):
            study, participant = _study_with_own_participant(request, slug)
            if participant is None:
                return redirect("study:entry", slug=study.slug)
            participant = participant_reservation_check(participant=participant)
            if not study.is_open and participant.stage != Participant.Stage.FINISHED:
                return render(request, "ratings/study/closed.html", _context(study, participant), status=410)
            if participant.stage != stage:
                return redirect(stage_url(participant))
            return view(request, study, participant, *args, **kwargs)

        return wrapped

    return decorator


# --- Arrival and landing ----------------------------------------------------------------------------------


# Seconds a "try again later" answer asks the browser to wait.
BUSY_RETRY_SECONDS = 120


def _arrival_refused(request, study: Study, error: ArrivalRefusedError):
    status = {"rate_limited": 429, "closed": 410, "busy": 503}.get(error.kind, 403)
    response = render(
        request, "ratings/study/refused.html", _context(study, kind=error.kind, message=str(error)), status=status
    )
    if error.kind == "busy":
        response["Retry-After"] = str(BUSY_RETRY_SECONDS)
    return response


@never_cache
@_mturk_frameable
def study_entry(request, slug: str):
    """Who: anyone with the link. Arrival (platform parameters create or resume the participant), then the landing
    page; POST starts the study."""
    # A signed-in participant's own study was read with them: no second read of it on their landing and start.
    study, _ = _study_with_own_participant(request, slug)
    try:
        platform = arrival_platform(study.platforms, request.GET)
    except ArrivalError as error:
        return render(request, "ratings/study/link_error.html", _context(study, message=str(error)), status=400)
    if platform:
        try:
            arrival = arrival_parse(platform, request.GET, mturk_submit_hosts=settings.MTURK_SUBMIT_HOSTS)
        except ArrivalError as error:
            return render(request, "ratings/study/link_error.html", _context(study, message=str(error)), status=400)
        if arrival.is_mturk_preview:
            return render(
                request,
                "ratings/study/landing.html",
                _context(study, is_mturk_preview=True, platform_name=PLATFORM_NAMES[MTURK]),
            )
        if arrival.is_identified:
            if _account_in_the_way(request):
                return _switch_confirm(request, study)
            try:
                participant = participant_arrive(study=study, arrival=arrival, address=client_address(request))
            except ArrivalRefusedError as error:
                return _arrival_refused(request, study, error)
            _sign_in(request, participant)
            if participant.platform != MTURK:
                # The platform id leaves the address bar: no later URL, referrer or history entry carries it.
                return redirect("study:entry", slug=study.slug)
            # MTurk shows this page in a frame, where the session cookie may be refused: answer here, with a
            # signed link that continues the study in a window of its own.
            return _landing(request, study, participant)
    participant = _own_participant(request, study)
    if participant is None:
        template = "ratings/study/closed.html" if not study.is_open else "ratings/study/no_participant.html"
        return render(request, template, _context(study), status=410 if not study.is_open else 200)
    participant = participant_reservation_check(participant=participant)
    if request.method == "POST" and participant.stage == Participant.Stage.LANDING:
        try:
            participant = participant_start(participant=participant)
        except StageError:
            pass
        return redirect(stage_url(participant))
    if participant.stage != Participant.Stage.LANDING:
        return redirect(stage_url(participant))
    return _landing(request, study, participant)


def _landing(request, study: Study, participant: Participant):
    is_mturk = participant.ending_platform == MTURK
    if participant.stage != Participant.Stage.LANDING and not is_mturk:
        return redirect(stage_url(participant))
    token = enter_token(participant) if is_mturk else ""
    return render(
        request,
        "ratings/study/landing.html",
        _context(
            study,
            participant,
            enter_url=f"{reverse('study:enter', kwargs={'slug': study.slug, 'token': token})}?framed=1"
            if token
            else "",
            status_url=reverse("study:status", kwargs={"slug": study.slug, "token": token}) if token else "",
            mturk_submit_url=mturk_submit_url(participant.platform_data.get("turkSubmitTo", "")) if is_mturk else "",
            stage_url=stage_url(participant),
        ),
    )


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def study_enter(request, slug: str, token: str):
    """Who: whoever holds the participant's signed link (a new window opened from MTurk, an admin's preview).
    POST: the confirmation of a signed-in account to continue as the participant."""
    study = _study(slug)
    participant = _participant_from_token(study, token)
    framed = request.GET.get("framed") == "1"
    if _account_in_the_way(request):
        # Its form posts back here, to the same link.
        response = _switch_confirm(request, study)
    else:
        _sign_in(request, participant)
        if framed:
            # Opened from MTurk's frame: that frame submits the HIT, so the end page here must not.
            request.session[FRAME_SUBMITS] = True
        response = redirect(stage_url(participant))
    # The window opened from the frame keeps its opener from its first page on, also where the session has no flag
    # yet (an account's switch confirmation): one page with the site's policy cuts the link for good.
    return opener_keep(response) if framed else response


@never_cache
@require_safe
@_mturk_frameable
def study_status(request, slug: str, token: str):
    """Who: the MTurk frame of the participant's HIT (signed link). Whether the study is done, and the code."""
    study = _study(slug)
    # A poll of the frame, not the participant at work: it keeps no share alive.
    participant = participant_reservation_check(participant=_participant_from_token(study, token), active=False)
    finished = participant.stage == Participant.Stage.FINISHED
    return JsonResponse(
        {
            "finished": finished,
            "code": participant_code(participant),
            # The worker returns the HIT (declined, study full, screened out): the frame must not submit it.
            "return_hit": finished
            and ending_returns_submission(study, participant.ending_platform, participant.status),
        }
    )


# --- Consent, questionnaire --------------------------------------------------------------------------------


@participant_page(Participant.Stage.CONSENT)
def study_consent(request, study: Study, participant: Participant):
    """Who: the participant. The study's consent text; agreeing goes on, declining ends with the no-consent code."""
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision in ("agree", "decline"):
            try:
                participant = participant_consent(participant=participant, agreed=decision == "agree")
            except StageError:
                pass
            return redirect(stage_url(participant))
    return render(request, "ratings/study/consent.html", _context(study, participant))


@participant_page(Participant.Stage.QUESTIONNAIRE)
def study_questionnaire(request, study: Study, participant: Participant):
    """Who: the participant. The study's questions (about them and their listening set-up)."""
    error, answers = "", {}
    if request.method == "POST":
        answers = {question["key"]: request.POST.get(question["key"], "") for question in study.questionnaire}
        try:
            participant = participant_questionnaire_submit(participant=participant, answers=answers)
        except StageError as refusal:
            error = str(refusal)
        else:
            return redirect(stage_url(participant))
    questions = [{**question, "value": answers.get(question["key"], "")} for question in study.questionnaire]
    return render(
        request,
        "ratings/study/questionnaire.html",
        _context(study, participant, questions=questions, error=error),
        status=400 if error else 200,
    )


# --- Headphone screens ------------------------------------------------------------------------------------


@participant_page(Participant.Stage.SCREENING)
def study_headphones(request, study: Study, participant: Participant):
    """Who: the participant. The study's headphone screens, in turn, with the study's number of attempts
    (the same tests and one-play rule as raters'); a screen failed on every attempt ends with the screen-out code."""
    # The participant's attempts, read once: which screen is next, its open attempt and the statuses come from them.
    checks = headphone_checks_read(rater=participant.user)
    kind = screening_next_kind(participant=participant, checks=checks)
    if kind is None:
        return redirect(stage_url(participant_screening_advance(participant=participant, checks=checks)))
    attempts = study.screen_attempts
    try:
        check = headphone_check_start(rater=participant.user, kind=kind, allowed_failures=attempts, checks=checks)
    except HeadphoneCheckError:
        return redirect(stage_url(participant_screening_advance(participant=participant, checks=checks)))
    form = HeadphoneAnswersForm(request.POST or None, trial_count=len(check.trials))
    if request.method == "POST" and str(check.pk) == request.POST.get("check_id") and form.is_valid():
        try:
            check = headphone_check_submit(check=check, answers=form.answers())
        except HeadphoneCheckError as error:
            form.add_error(None, str(error))
        else:
            checks = [check, *(other for other in checks if other.pk != check.pk)]
            participant = participant_screening_advance(participant=participant, checks=checks)
            if check.passed or participant.stage != Participant.Stage.SCREENING:
                return redirect(stage_url(participant))
            status = headphone_status(rater=participant.user, kind=kind, allowed_failures=attempts, checks=checks)
            return render(
                request,
                "ratings/study/screen_failed.html",
                _context(study, participant, check=check, status=status, trial_count=len(check.trials)),
            )
    status = headphone_status(rater=participant.user, kind=kind, allowed_failures=attempts, checks=checks)
    return headphone_check_page(request, check=check, form=form, status=status, context=_context(study, participant))


# --- Instructions and the practice item -------------------------------------------------------------------


@participant_page(Participant.Stage.INSTRUCTIONS)
def study_instructions(request, study: Study, participant: Participant):
    """Who: the participant. How to judge, one practice item (its answer gets feedback and is not stored),
    then the start of the share."""
    is_pairwise = study.campaign.task_type == Campaign.TaskType.PAIRWISE
    right_first = practice_right_first(str(participant.pk))
    feedback = None
    answer = {}
    status = 200
    if request.method == "POST":
        answer = {
            key: request.POST.get(key, "") for key in ("side", "precision_1", "precision_2", "recall_1", "recall_2")
        }
        try:
            participant = participant_practice_done(participant=participant)
        except StageError as refusal:  # the sound cannot have been heard yet: no feedback, try again
            feedback, status = {"is_right": False, "text": str(refusal)}, 400
        else:
            is_right, text = practice_feedback(is_pairwise=is_pairwise, answer=answer, right_first=right_first)
            feedback = {"is_right": is_right, "text": text}
    return render(
        request,
        "ratings/study/instructions.html",
        _context(
            study,
            participant,
            practice_audio_url=reverse("study:practice_audio", kwargs={"slug": study.slug}),
            practice_peaks=practice_peaks(),
            practice_seconds=PRACTICE_SECONDS,
            practice_captions=practice_captions(str(participant.pk)),
            feedback=feedback,
            answer=answer,
            rubric=RUBRIC,
            penalty_names=PENALTY_FIELDS,
            scores=range(1, 6),
            time_limit=study.time_limit_minutes,
            share_size=study.items_per_participant + (study.attention_checks if is_pairwise else 0),
        ),
        status=status,
    )


@participant_page(Participant.Stage.INSTRUCTIONS)
@require_safe
def study_practice_audio(request, study: Study, participant: Participant):
    """Who: the participant at the instructions. The practice sound (three beeps made by the server; no dataset's
    clip), whole in one response (Range is not honoured); a GET is the practice's listening proof."""
    response = HttpResponse(practice_wav(), content_type="audio/wav")
    response["Cache-Control"] = "private, no-store"  # every play is asked of the server, as for rated items
    if request.method == "GET":
        participant_practice_audio_served(participant=participant)
    return response


@participant_page(Participant.Stage.INSTRUCTIONS)
@require_POST
def study_start(request, study: Study, participant: Participant):
    """Who: the participant, after the practice. Reserve the share and open its first item."""
    try:
        participant = participant_items_start(participant=participant)
    except StudyBusyError as busy:
        messages.info(request, f"Not yet: {busy}.")
        return redirect("study:instructions", slug=study.slug)
    except StageError:
        return redirect("study:instructions", slug=study.slug)
    return redirect(stage_url(participant))


@participant_page(Participant.Stage.ITEMS)
@require_safe
def study_items(request, study: Study, participant: Participant):
    """Who: the participant. The next unanswered item of the share, or the end once all are answered."""
    participant, token = participant_items_finish_or_next(participant=participant)
    if token is None:
        return redirect(stage_url(participant))
    return redirect("ratings:item", token=token)


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def study_leave(request, slug: str):
    """Who: the participant, from any page of the study (the bar at the top). GET asks to confirm; POST leaves:
    the answers given are kept, the unanswered items go to others at once, the end page says what to do."""
    study, participant = _study_with_own_participant(request, slug)
    if participant is None:
        raise Http404("You are not taking part in this study")
    # A participant whose time ran out has timed out, whatever they click now.
    participant = participant_reservation_check(participant=participant)
    if request.method == "POST":
        return redirect(stage_url(participant_return(participant=participant)))
    if participant.stage == Participant.Stage.FINISHED:
        return redirect(stage_url(participant))
    return render(
        request,
        "ratings/study/leave.html",
        _context(
            study,
            participant,
            back_url=stage_url(participant),
            returns_submission=ending_returns_submission(
                study, participant.ending_platform, Participant.Status.RETURNED
            ),
        ),
    )


# --- The end ----------------------------------------------------------------------------------------------


def end_redirect(participant: Participant, code: str) -> dict:
    """Where the end page sends the participant: {"url"} to follow, or {"post_url", "fields"} to submit (MTurk)."""
    study = participant.study
    platform = participant.platform
    if not code or participant.is_preview or ending_returns_submission(study, platform, participant.status):
        return {}
    if platform == PROLIFIC:
        return {"url": prolific_completion_url(code)}
    if platform == MTURK and participant.platform_data.get("turkSubmitTo"):
        return {
            "post_url": mturk_submit_url(participant.platform_data["turkSubmitTo"]),
            "fields": {"assignmentId": participant.platform_data["assignmentId"], "completion_code": code},
        }
    if platform == GENERIC and study.redirect_url:
        return {"url": generic_redirect_url(study.redirect_url, code)}
    return {}


@participant_page(Participant.Stage.FINISHED)
@_mturk_frameable
def study_end(request, study: Study, participant: Participant):
    """Who: the participant. How the study ended, the code to give the platform, and the way back to it."""
    code = participant_code(participant)
    ending = participant.events.filter(kind__in=("timed_out", "returned")).order_by("-pk").first()
    detail = ending.detail if ending is not None and isinstance(ending.detail, dict) else {}
    return render(
        request,
        "ratings/study/end.html",
        _context(
            study,
            participant,
            code=code,
            redirect=end_redirect(participant, code),
            returns_submission=ending_returns_submission(study, participant.ending_platform, participant.status),
            redirect_seconds=settings.STUDY_END_REDIRECT_SECONDS,
            frame_submits=bool(request.session.get(FRAME_SUBMITS)),
            timeout_reason=detail.get("reason", ""),
            inactive_minutes=settings.STUDY_INACTIVE_MINUTES,
            drafts_kept=len(detail.get("drafts_kept", [])),
        ),
    )
