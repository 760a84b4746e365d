"""Crowd platform actions (admins only): link, sync, preview and send approvals, rejections and bonuses, pause and
resume a Prolific study, create an MTurk HIT. Nothing is sent without a preview first: a send carries the digest
of the plan it was shown, and is refused when the plan changed since."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from accounts.roles import ADMIN, roles_required
from ratings.crowd_platforms import MTURK, PROLIFIC
from ratings.forms_platforms import ActiveLimitForm, BonusForm, HitForm, ProlificLinkForm
from ratings.models_platforms import PlatformAction
from ratings.models_study import Platform, Study
from ratings.platforms import PlatformError
from ratings.platforms.actions import (
    PlanError,
    actions_plan,
    actions_send,
    active_limit_set,
    admission_apply,
    link_for,
    mturk_hit_create,
    mturk_hit_params,
    mturk_qualification_create,
    mturk_sync,
    plan_digest,
    prolific_link_set,
    prolific_study_transition,
    prolific_sync,
)
from ratings.platforms.admission import admission_preview

LOG_ROWS = 200
# The platforms whose APIs the page speaks to (a generic panel has none).
PLAN_PLATFORMS = (PROLIFIC, MTURK)


def _report_send(request, report) -> None:
    ok = sum(1 for entry in report.sent if entry.succeeded)
    if ok:
        messages.success(request, f"{ok} request{'s' if ok != 1 else ''} accepted by the platform.")
    for error in report.errors:
        messages.error(request, error)
    if not report.sent:
        messages.info(request, "Nothing to send: every planned action is done or blocked.")


def _plan_platform(request, study: Study) -> str:
    """The platform a preview or send is for: the form's, or the study's one platform with an API."""
    own = [platform for platform in PLAN_PLATFORMS if study.recruits_on(platform)]
    platform = request.POST.get("platform") or (own[0] if len(own) == 1 else "")
    if platform not in own:
        raise PlanError(f"platform: {platform[:20]!r} is not one this study recruits on with platform actions")
    return platform


def _post(request, study: Study) -> tuple[bool, dict]:
    """Handle one POST; (redirect?, extra context). PlanError and PlatformError become messages, never a 5xx."""
    action = request.POST.get("action", "")
    extra: dict = {}
    if action == "link":
        form = ProlificLinkForm(request.POST)
        if form.is_valid():
            prolific_link_set(study=study, prolific_study_id=form.cleaned_data["prolific_study_id"])
            messages.success(request, "Linked to the Prolific study.")
            return True, extra
        raise PlanError("; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()))
    if action == "sync":
        report = prolific_sync(study=study, by=request.user)
        if report.error:
            messages.error(request, report.error)
        else:
            messages.success(
                request,
                f"{report.submissions} submissions read; {len(report.freed)} returned or timed out, their slots freed"
                + (f"; not participants here: {', '.join(report.unknown)}" if report.unknown else ""),
            )
        if report.admission:
            messages.info(request, report.admission)
        return True, extra
    if action == "mturk_sync":
        count = mturk_sync(study=study, by=request.user)
        messages.success(request, f"{count} submitted or decided assignments read from MTurk.")
        return True, extra
    if action == "limit":
        form = ActiveLimitForm(request.POST)
        if not form.is_valid():
            raise PlanError("; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()))
        active_limit_set(study=study, limit=form.cleaned_data["active_limit"])
        messages.success(request, admission_apply(study=study, by=request.user) or "Limit saved.")
        return True, extra
    if action == "create_qualification":
        entry = mturk_qualification_create(study=study, by=request.user)
        if entry.succeeded:
            messages.success(request, f"Qualification {entry.target_id} created: give it to the workers below.")
        else:
            messages.error(request, entry.error)
        return True, extra
    if action in ("pause", "resume"):
        entry = prolific_study_transition(study=study, pause=action == "pause", by=request.user)
        if entry.succeeded:
            messages.success(request, "Study paused on Prolific." if action == "pause" else "Study started again.")
        else:
            messages.error(request, entry.error)
        return True, extra
    if action in ("preview_bonuses", "send"):
        platform = _plan_platform(request, study)
        bonus_form = _bonus_form(platform, request.POST)
        if not bonus_form.is_valid():
            raise PlanError("bonuses: " + "; ".join(" ".join(errors) for errors in bonus_form.errors.values()))
        planned = actions_plan(study=study, platform=platform, **bonus_form.cleaned_data)
        if action == "preview_bonuses":
            return False, {"platform": platform, "planned": planned, "bonus_form": bonus_form}
        if request.POST.get("digest") != plan_digest(planned):
            raise PlanError("the plan changed since the preview (a sync or an exclusion): look at it again, then send")
        _report_send(request, actions_send(study=study, planned=planned, by=request.user))
        return True, extra
    if action in ("hit_preview", "hit_create"):
        form = HitForm(request.POST)
        if not form.is_valid():
            return False, {"hit_form": form}
        arrival = request.build_absolute_uri(reverse("study:entry", kwargs={"slug": study.slug}))
        params = mturk_hit_params(study=study, arrival_url=arrival, settings=form.cleaned_data)
        if action == "hit_preview":
            return False, {"hit_form": form, "hit_params": params}
        entry = mturk_hit_create(study=study, params=params, by=request.user)
        if entry.succeeded:
            messages.success(request, f"HIT {entry.target_id} created.")
            return True, extra
        messages.error(request, entry.error)
        return False, {"hit_form": form, "hit_params": params}
    raise PlanError(f"action: {action[:40]!r} is not one of the page's buttons")


def _bonus_form(platform: str, data=None) -> BonusForm:
    # Each platform's section has its own form on the page: the same field names, ids of its own.
    form = BonusForm(data, auto_id=f"id_{platform}_%s")
    if platform != PROLIFIC:
        del form.fields["screen_out_pay"]  # only Prolific pays a screen-out (MTurk: see mturk_screen_out_pay)
    return form


def _plan_section(study: Study, platform: str, extra: dict) -> dict:
    """One platform's planned actions: the preview just asked for (with its bonuses), or the decisions alone."""
    previewed = extra.get("platform") == platform
    planned, plan_error = extra.get("planned") if previewed else None, ""
    if planned is None:
        try:
            planned = actions_plan(study=study, platform=platform)
        except PlanError as error:
            planned, plan_error = [], str(error)
    return {
        "platform": platform,
        "label": Platform(platform).label,
        "planned": planned,
        "plan_error": plan_error,
        "sendable": sum(1 for action in planned if action.sendable),
        "digest": plan_digest(planned),
        "with_bonuses": previewed,
        "bonus_form": extra["bonus_form"] if previewed else _bonus_form(platform),
    }


@roles_required(ADMIN)
def study_platform(request, study_id: int):
    """Who: admins. The study's platform actions, a section per platform it recruits on (Prolific, MTurk): what
    would be sent (preview), the send button, and one log; POST `action`: link, sync, mturk_sync, pause, resume,
    limit, preview_bonuses and send (with `platform`), hit_preview, hit_create, create_qualification."""
    study = get_object_or_404(Study.objects.select_related("campaign"), pk=study_id)
    extra: dict = {}
    status = 200
    if request.method == "POST":
        try:
            done, extra = _post(request, study)
        except (PlanError, PlatformError) as error:
            messages.error(request, str(error))
            done, status = False, 400
        if done:
            return redirect("ratings:study_platform", study_id=study.pk)
    context = {
        "study": study,
        "link": link_for(study),
        "is_prolific": study.on_prolific,
        "is_mturk": study.on_mturk,
        "plans": [_plan_section(study, platform, extra) for platform in PLAN_PLATFORMS if study.recruits_on(platform)],
        "admission": admission_preview(study=study),
        "limit_form": ActiveLimitForm(initial={"active_limit": link_for(study).active_limit}),
        "link_form": ProlificLinkForm(initial={"prolific_study_id": link_for(study).prolific_study_id}),
        "hit_form": extra.get("hit_form") or HitForm(initial={"title": study.campaign.title or study.campaign.name}),
        "hit_params": extra.get("hit_params"),
        "log": PlatformAction.objects.filter(study=study)
        .select_related("by")
        .order_by("-created_at", "-pk")[:LOG_ROWS],
    }
    return render(request, "ratings/platforms/study_platform.html", context, status=status)
