"""The headphone screening pages (see ratings/services/headphone.py for the test itself).

The page gets trial numbers and audio URLs only; which tone is quietest stays on the server
until the answers are in, and afterwards the rater learns only the count.
"""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_safe

from accounts.roles import RATER, roles_required
from ratings.forms import HeadphoneAnswersForm
from ratings.models import HeadphoneCheck
from ratings.services.headphone import (
    PASS_MARK,
    TRIAL_COUNT,
    HeadphoneCheckError,
    calibration_wav,
    headphone_check_start,
    headphone_check_submit,
    headphone_status,
    trial_wav,
)


def _safe_next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return ""


@roles_required(RATER)
@never_cache
def headphone_check(request):
    """Who: raters. Volume calibration, then six antiphase trials; POST scores the attempt."""
    next_url = _safe_next(request)
    status = headphone_status(rater=request.user)
    if not status.is_needed:
        return render(request, "ratings/headphone_status.html", {"status": status, "next_url": next_url})
    check = headphone_check_start(rater=request.user)
    form = HeadphoneAnswersForm(request.POST or None)
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
    trials = [{"number": number, "field": form[f"trial_{number}"]} for number in range(1, TRIAL_COUNT + 1)]
    return render(
        request,
        "ratings/headphone_check.html",
        {
            "check": check,
            "form": form,
            "trials": trials,
            "status": status,
            "next_url": next_url,
            "pass_mark": PASS_MARK,
            "trial_count": TRIAL_COUNT,
        },
        status=400 if form.errors else 200,
    )


def _result(request, check: HeadphoneCheck, next_url: str):
    if check.passed:
        messages.success(request, f"Headphone check passed ({check.correct_count} of {TRIAL_COUNT}).")
        return redirect(next_url or "ratings:home")
    return render(
        request,
        "ratings/headphone_status.html",
        {
            "status": headphone_status(rater=request.user),
            "failed_check": check,
            "next_url": next_url,
            "trial_count": TRIAL_COUNT,
        },
    )


@roles_required(RATER)
@require_safe
@cache_control(private=True, max_age=3600)
def headphone_calibration_audio(request):
    """Who: raters. The calibration tones (WAV)."""
    return HttpResponse(calibration_wav(), content_type="audio/wav")


@roles_required(RATER)
@require_safe
@never_cache
def headphone_trial_audio(request, check_id: int, trial_number: int):
    """Who: the rater of an open attempt. The three tones of one trial as a stereo WAV."""
    check = get_object_or_404(
        HeadphoneCheck, pk=check_id, rater=request.user, completed_at__isnull=True, reset_at__isnull=True
    )
    if not 1 <= trial_number <= len(check.trials):
        raise Http404("No such trial")
    return HttpResponse(trial_wav(check.trials[trial_number - 1]), content_type="audio/wav")
