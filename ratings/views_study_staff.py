"""Crowd study administration (admins only): publish a campaign as a study, watch it live, exclude, export."""

import json

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from accounts.roles import ADMIN, roles_required
from ratings.crowd_platforms import GENERIC, LINK_TEMPLATES, MTURK, PROLIFIC, prolific_completion_url
from ratings.forms_study import StudySettingsForm
from ratings.models import Campaign
from ratings.models_study import Participant, Platform, Study
from ratings.services.participants import preview_participant_create
from ratings.services.studies import study_open_set, study_publish, study_settings_update
from ratings.services.study_exclusion import ReinstatementError, participant_exclude, participant_reinstate
from ratings.services.study_export import StudyExportError, study_fense_items, study_thumbs_csv
from ratings.services.study_policy import ADMIN_EXCLUSION_CODES, RULES
from ratings.services.study_report import (
    participant_item_timings,
    study_participant_rows,
    study_pay_csv,
    study_summary,
)
from ratings.services.study_shares import StudySetupError, expired_shares_release_now, study_coverage
from ratings.views_study import enter_token


def _study(study_id: int) -> Study:
    return get_object_or_404(Study.objects.select_related("campaign__dataset"), pk=study_id)


@roles_required(ADMIN)
def study_list(request):
    """Who: admins. Every crowd study with its link state, and the campaigns that could be published."""
    studies = Study.objects.select_related("campaign").order_by("-created_at")
    publishable = Campaign.objects.filter(study__isnull=True, origin=Campaign.Origin.APP).order_by("name")
    return render(request, "ratings/staff/study_list.html", {"studies": studies, "publishable": publishable})


@roles_required(ADMIN)
def study_publish_page(request, campaign_id: int):
    """Who: admins. Publish a campaign as a crowd study: link, codes, path, share, checks, rules, pay."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    if hasattr(campaign, "study"):
        return redirect("ratings:study_detail", study_id=campaign.study.pk)
    form = StudySettingsForm(request.POST or None, campaign=campaign)
    if request.method == "POST" and form.is_valid():
        try:
            study = study_publish(
                campaign=campaign, excluded_campaigns=form.cleaned_data["excluded_campaigns"], **form.settings()
            )
        except StudySetupError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"{campaign.name} is published: share the study link below.")
            return redirect("ratings:study_detail", study_id=study.pk)
    return render(
        request,
        "ratings/staff/study_settings.html",
        {"campaign": campaign, "form": form, "is_new": True},
        status=400 if form.errors else 200,
    )


@roles_required(ADMIN)
def study_settings_page(request, study_id: int):
    """Who: admins. Change a published study's settings (share size and checks apply to later participants)."""
    study = _study(study_id)
    form = StudySettingsForm(
        request.POST or None, campaign=study.campaign, initial=StudySettingsForm.initial_from(study)
    )
    if request.method == "POST" and form.is_valid():
        try:
            study_settings_update(
                study=study, excluded_campaigns=form.cleaned_data["excluded_campaigns"], **form.settings()
            )
        except StudySetupError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Study settings saved.")
            return redirect("ratings:study_detail", study_id=study.pk)
    return render(
        request,
        "ratings/staff/study_settings.html",
        {"campaign": study.campaign, "study": study, "form": form, "is_new": False},
        status=400 if form.errors else 200,
    )


# What each platform's study link is for, on the study page.
LINK_HINTS = {
    PROLIFIC: "paste into Prolific: it fills in the three ids",
    MTURK: "the ExternalQuestion URL: MTurk adds its parameters",
    GENERIC: "your panel replaces PARTICIPANT_ID",
}


def _links(request, study: Study) -> dict:
    """One link per platform the study recruits on (the same page: its parameters tell the platform apart), and
    the codes; Prolific's completion URLs only where Prolific is one of them."""
    entry = request.build_absolute_uri(reverse("study:entry", kwargs={"slug": study.slug}))
    links = {
        "platforms": [
            {
                "platform": platform,
                "label": Platform(platform).label,
                "url": entry + LINK_TEMPLATES[platform],
                "hint": LINK_HINTS[platform],
            }
            for platform in study.platforms
        ],
        "codes": [],
    }
    for label, code in (
        ("Completion", study.completion_code),
        ("Screen-out (failed headphone screen)", study.screen_out_code),
        ("No consent", study.no_consent_code),
        ("Study full", study.full_code),
    ):
        url = prolific_completion_url(code) if study.on_prolific else ""
        links["codes"].append({"label": label, "code": code, "url": url})
    return links


def _live_context(study: Study) -> dict:
    expired_shares_release_now(study=study)
    rows = study_participant_rows(study=study)
    return {
        "study": study,
        "rows": rows,
        "summary": study_summary(rows=rows, study=study),
        "coverage": study_coverage(study=study),
        "previews": study.participants.filter(is_preview=True).order_by("-created_at")[:5],
    }


@roles_required(ADMIN)
def study_detail(request, study_id: int):
    """Who: admins. The study live: arrivals and outcomes, coverage, pay, links and codes to copy, previews,
    close/reopen; POST `action`: close, reopen, preview."""
    study = _study(study_id)
    preview_url = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action in ("close", "reopen"):
            study_open_set(study=study, is_open=action == "reopen")
            messages.success(
                request, "Study reopened." if action == "reopen" else "Study closed: nobody new can start."
            )
            return redirect("ratings:study_detail", study_id=study.pk)
        if action == "preview":
            preview = preview_participant_create(study=study, by=request.user)
            preview_url = request.build_absolute_uri(
                reverse("study:enter", kwargs={"slug": study.slug, "token": enter_token(preview)})
            )
    context = {**_live_context(study), "links": _links(request, study), "preview_url": preview_url}
    return render(request, "ratings/staff/study_detail.html", context)


@roles_required(ADMIN)
@require_safe
def study_live(request, study_id: int):
    """Who: admins. The live part of the study page (counts, coverage, participants) for the page to refresh."""
    return render(request, "ratings/staff/_study_live.html", _live_context(_study(study_id)))


def _event_rows(participant: Participant) -> list[dict]:
    """The participant's events with their detail as (key, value) pairs, listed in the view: a detail may have a
    key named like a dict method ("items": a share's size), which a template's `detail.items` would read instead."""
    return [
        {"event": event, "detail": sorted(event.detail.items()) if isinstance(event.detail, dict) else []}
        for event in participant.events.select_related("by").order_by("created_at", "pk")
    ]


@roles_required(ADMIN)
def study_participant(request, study_id: int, participant_id: int):
    """Who: admins. One participant: answers to the questionnaire, items with timings, checks, the event log;
    exclude or reinstate (logged with your name)."""
    study = _study(study_id)
    participant = get_object_or_404(Participant.objects.select_related("user"), pk=participant_id, study=study)
    if request.method == "POST":
        if request.POST.get("action") == "exclude":
            reason = request.POST.get("reason", "").strip()[:200] or "excluded by an admin"
            code = request.POST.get("rule") or ADMIN_EXCLUSION_CODES[0][0]
            if code not in dict(ADMIN_EXCLUSION_CODES):
                messages.error(request, f"rule: {code[:40]!r} is not one of {', '.join(dict(ADMIN_EXCLUSION_CODES))}")
            else:
                participant_exclude(participant=participant, reasons=[reason], codes=[code], by=request.user)
                messages.success(request, "Participant excluded: their answers stay, every figure leaves them out.")
        elif request.POST.get("action") in ("reinstate", "reinstate_beyond_target"):
            try:
                participant_reinstate(
                    participant=participant,
                    by=request.user,
                    over_target_ok=request.POST.get("action") == "reinstate_beyond_target",
                )
            except ReinstatementError as error:
                messages.error(request, str(error))
            else:
                messages.success(request, "Participant reinstated: their answers count again.")
        return redirect("ratings:study_participant", study_id=study.pk, participant_id=participant.pk)
    return render(
        request,
        "ratings/staff/study_participant.html",
        {
            "study": study,
            "participant": participant,
            "timings": participant_item_timings(participant=participant),
            "events": _event_rows(participant),
            "exclusion_rules": ADMIN_EXCLUSION_CODES,
            "rule_labels": [RULES[code].label for code in participant.exclusion_codes if code in RULES],
            "answers": [
                {"label": question["label"], "value": participant.questionnaire_answers.get(question["key"], "")}
                for question in study.questionnaire
            ],
        },
    )


@roles_required(ADMIN)
@require_safe
def study_pay_export(request, study_id: int):
    """Who: admins. The pay CSV of the participants from `?platform=` (default: the study's first platform): one
    row per participant, ready for that platform's bulk approve / reject."""
    study = _study(study_id)
    platform = request.GET.get("platform") or study.platforms[0]
    if not study.recruits_on(platform):
        raise Http404("The study does not recruit on this platform")
    response = HttpResponse(study_pay_csv(study=study, platform=platform), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.campaign.name}-{platform}-pay.csv"'
    return response


@roles_required(ADMIN)
@require_safe
def study_benchmark_export(request, study_id: int):
    """Who: admins. The study as a benchmark file: FENSE JSON (pairwise) or a flat CSV (THumBS), included
    judgements only."""
    study = _study(study_id)
    try:
        if study.campaign.task_type == Campaign.TaskType.PAIRWISE:
            content = json.dumps(study_fense_items(study=study), ensure_ascii=False, indent=1)
            content_type, extension = "application/json", "json"
        else:
            content, content_type, extension = study_thumbs_csv(study=study), "text/csv; charset=utf-8", "csv"
    except StudyExportError as error:
        messages.error(request, str(error))
        return redirect("ratings:study_detail", study_id=study.pk)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{study.campaign.name}.{extension}"'
    return response
