"""The headphone screening pages (the tests themselves: ratings/services/headphone.py, ratings/screening/).

The page gets trial numbers and audio URLs only. Each trial's sound is served once per attempt: the
page fetches it once and plays it with the Web Audio API; a second request (reload, replay, another
tab) gets 410 and the trial stays "played". Which sound is the answer stays on the server until the
answers are in, and afterwards the rater learns only the count.
"""

from functools import wraps

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_safe

from accounts.roles import PARTICIPANT, RATER, request_roles_known, roles_required
from ratings.forms import HeadphoneAnswersForm
from ratings.models import HeadphoneCheck
from ratings.services.headphone import (
    HeadphoneCheckError,
    TrialAlreadyPlayedError,
    calibration_wav,
    headphone_check_start,
    headphone_check_submit,
    headphone_checks_read,
    headphone_open_attempt,
    headphone_status,
    screen,
    trial_is_played,
    trial_sound_fetch,
)
from ratings.services.participants import participant_for_user

INSTRUCTIONS = {
    HeadphoneCheck.Kind.ANTIPHASE: {
        "intro": "This short check (about two minutes) makes sure you are wearing headphones.",
        "question": "Which tone is the quietest?",
        "trial_text": "Each trial plays three tones, one after the other. Choose the one that sounds quietest.",
        "calibration": "Play the sound below and set your computer's volume so that it is clearly audible but "
        "comfortable. Do not change the volume after this.",
        "sound_name": "Tone",
    },
    HeadphoneCheck.Kind.HUGGINS: {
        "intro": "This study asks for a second headphone check (about two minutes). It only works over headphones.",
        "question": "Which noise contains a faint tone?",
        "trial_text": "Each trial plays three bursts of noise, one after the other. In one of them a faint tone "
        "sounds inside the noise. Choose that one.",
        "calibration": "Play the noise below and set your computer's volume so that it is comfortable. Do not "
        "change the volume after this.",
        "sound_name": "Noise",
    },
}


def _kind(kind: str) -> str:
    if kind not in HeadphoneCheck.Kind.values:
        raise Http404("No such headphone check")
    return kind


def _safe_next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return ""


@roles_required(RATER)
def headphone_check_default(request):
    """Who: raters. The screening every rater takes (the antiphase test)."""
    return redirect("ratings:headphone_check", kind=HeadphoneCheck.Kind.ANTIPHASE)


@roles_required(RATER)
@never_cache
def headphone_check(request, kind: str):
    """Who: raters. Volume calibration, then six trials (each plays once); POST scores the attempt."""
    participant = participant_for_user(request.user)
    if participant is not None:
        # Crowd participants take the screens on their study's path, with the study's number of attempts.
        return redirect("study:entry", slug=participant.study.slug)
    kind = _kind(kind)
    next_url = _safe_next(request)
    checks = headphone_checks_read(rater=request.user)
    status = headphone_status(rater=request.user, kind=kind, checks=checks)
    if not status.is_needed:
        return render(request, "ratings/headphone_status.html", {"status": status, "next_url": next_url})
    check = headphone_check_start(rater=request.user, kind=kind, checks=checks)
    form = HeadphoneAnswersForm(request.POST or None, trial_count=len(check.trials))
    if request.method == "POST":
        if str(check.pk) != request.POST.get("check_id"):
            messages.error(request, "That attempt is no longer open; here is a fresh one.")
            return redirect(request.get_full_path())
        if form.is_valid():
            try:
                check = headphone_check_submit(check=check, answers=form.answers())
            except HeadphoneCheckError as error:
                form.add_error(None, str(error))
            else:
                return _result(request, check, next_url)
    return headphone_check_page(request, check=check, form=form, status=status, next_url=next_url)


def headphone_check_page(request, *, check: HeadphoneCheck, form, status, next_url: str = "", context=None):
    """An attempt's page: calibration, the trials (played or not) and the answers; raters' and crowd studies'."""
    trials = [
        {"number": number, "field": form[f"trial_{number}"], "is_played": trial_is_played(trial)}
        for number, trial in enumerate(check.trials, start=1)
    ]
    return render(
        request,
        "ratings/headphone_check.html",
        {
            **(context or {}),
            "check": check,
            "kind": check.kind,
            "text": INSTRUCTIONS[check.kind],
            "form": form,
            "trials": trials,
            "status": status,
            "next_url": next_url,
            "pass_mark": screen(check.kind).PASS_MARK,
            "trial_count": len(check.trials),
        },
        status=400 if form.errors else 200,
    )


def _result(request, check: HeadphoneCheck, next_url: str):
    if check.passed:
        messages.success(request, f"Headphone check passed ({check.correct_count} of {len(check.trials)}).")
        return redirect(next_url or "ratings:home")
    return render(
        request,
        "ratings/headphone_status.html",
        {
            "status": headphone_status(rater=request.user, kind=check.kind),
            "failed_check": check,
            "next_url": next_url,
            "trial_count": len(check.trials),
        },
    )


def _rater_or_signed_in_participant(view):
    """roles_required(RATER) without the group read for a crowd participant: their account is made a rater and
    participant (ratings.services.participants), and a participant fetches seven screen sounds in their first
    minute. Only a participation the session's backend read already counts (ratings.authentication): a rater's
    request reads nothing more."""
    checked = roles_required(RATER)(view)

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if getattr(request.user, "_study_participant", None) is not None:
            request_roles_known(request, {RATER, PARTICIPANT})
        return checked(request, *args, **kwargs)

    wrapped.allowed_roles = checked.allowed_roles
    return wrapped


@_rater_or_signed_in_participant
@require_safe
@cache_control(private=True, max_age=3600)
def headphone_calibration_audio(request, kind: str):
    """Who: raters. The calibration sound of a screen (WAV)."""
    return HttpResponse(calibration_wav(kind=_kind(kind)), content_type="audio/wav")


@_rater_or_signed_in_participant
@require_safe
@never_cache
def headphone_trial_audio(request, check_id: int, trial_number: int):
    """Who: the rater of an open attempt. One trial's three sounds as a stereo WAV, once (410 afterwards)."""
    check = headphone_open_attempt(check_id=check_id, rater=request.user)
    if check is None:
        raise Http404("No such open attempt")
    if not 1 <= trial_number <= len(check.trials):
        raise Http404("No such trial")
    try:
        content = trial_sound_fetch(check=check, trial_number=trial_number)
    except TrialAlreadyPlayedError as error:
        return HttpResponse(str(error), status=410, content_type="text/plain; charset=utf-8")
    except HeadphoneCheckError as error:
        raise Http404(str(error)) from None
    return HttpResponse(content, content_type="audio/wav")
