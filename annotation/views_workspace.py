"""Annotator pages (queue, editor) and the admins' annotation-campaign pages.

The editor page is a shell: the draft, checks, submit and skip go through the JSON API
(annotation/api_workspace.py), which the page's scripts call with the session.
"""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, ANNOTATOR, roles_required
from annotation import selectors_workspace
from annotation.forms import AnnotationCampaignForm
from annotation.models import AnnotationCampaign, AnnotationTask
from annotation.services.annotation_campaigns import (
    CampaignError,
    annotation_campaign_create,
    annotation_task_next,
    annotator_progress,
)
from annotation.services.annotation_drafts import empty_draft
from annotation.services.annotation_tasks import EDITABLE
from annotation.services.spectrogram import LOWEST_HZ
from annotation.vocabulary import sound_sources


@roles_required(ANNOTATOR)
def annotator_home(request):
    """Who: annotators. Their campaigns with "k of n done", work in progress, work sent back with comments."""
    rows = selectors_workspace.annotator_campaign_rows(annotator=request.user)
    return render(request, "annotation/annotator_home.html", {"rows": rows})


@roles_required(ANNOTATOR)
@require_POST
def campaign_next(request, campaign_id: int):
    """Who: the campaign's annotators. Go to their unfinished clip, else to a newly scheduled one."""
    campaign = get_object_or_404(AnnotationCampaign, pk=campaign_id, annotators=request.user)
    try:
        task = annotation_task_next(campaign=campaign, annotator=request.user)
    except CampaignError as error:
        messages.error(request, str(error))
        return redirect("annotation:annotator_home")
    if task is None:
        messages.info(request, f"Nothing left for you in {campaign.name}: every clip has its annotations. Thank you!")
        return redirect("annotation:annotator_home")
    return redirect("annotation:task", task_id=task.pk)


def clip_player_context(clip) -> dict:
    """What the annotation player needs: the audio, stored peaks, and where its spectrogram and channel waveforms
    are (URLs versioned by the audio's hash, so a new file is never shown an old image)."""
    version = f"?v={clip.sha256[:12]}"
    options = {}
    if clip.audio:
        options = {
            "spectrogramUrl": reverse("annotation:clip-spectrogram", args=[clip.pk]) + version,
            "waveformUrl": reverse("annotation:clip-waveform", args=[clip.pk]) + version,
            "topHz": (clip.sample_rate or 22050) / 2,
            "lowestHz": LOWEST_HZ,
            "channels": clip.channels or 1,
        }
    return {
        "audio_url": reverse("annotation:clip-audio", args=[clip.pk]) if clip.audio else "",
        "peaks": clip.waveform_peaks,
        "duration": clip.duration_seconds,
        "player_options": options,
        "sound_sources": list(sound_sources()),
    }


@roles_required(ANNOTATOR)
def task_page(request, task_id: int):
    """Who: the task's annotator only (others get 404). The keyboard-first editor with autosave."""
    task = AnnotationTask.objects.select_related("campaign__dataset", "clip").filter(pk=task_id).first()
    if task is None or task.annotator_id != request.user.pk:
        raise Http404("No such clip in your queue")
    campaign = task.campaign
    editable = task.status in EDITABLE
    task_data = {
        "id": task.pk,
        "status": task.status,
        "status_display": task.get_status_display(),
        "editable": editable,
        "draft": task.draft or empty_draft(),
        "draft_version": task.draft_version,
    }
    task_urls = {
        "draft": reverse("annotation-task-draft", args=[task.pk]),
        "checks": reverse("annotation-task-checks", args=[task.pk]),
        "submit": reverse("annotation-task-submit", args=[task.pk]),
        "skip": reverse("annotation-task-skip", args=[task.pk]),
        "next": reverse("annotation-campaign-next", args=[campaign.pk]),
        "taskPage": reverse("annotation:task", args=[0]),
        "queue": reverse("annotation:annotator_home"),
    }
    context = {
        "task": task,
        "campaign": campaign,
        "editable": editable,
        "task_data": task_data,
        "task_urls": task_urls,
        "progress": annotator_progress(campaign=campaign, annotator=request.user),
        "tag_library": selectors_workspace.tag_library_entries(),
        "suggestions": selectors_workspace.source_suggestions(clip=task.clip, user=request.user),
        "skip_reasons": AnnotationTask.SkipReason.choices,
        **clip_player_context(task.clip),
    }
    return render(request, "annotation/task.html", context)


# --- Admins: annotation campaigns ------------------------------------------------------------------------


@roles_required(ADMIN)
def campaign_list(request):
    """Who: admins. Annotation campaigns with progress; create one."""
    form = AnnotationCampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            campaign = annotation_campaign_create(
                name=data["name"],
                dataset=data["dataset"],
                clips=data["clips"],
                annotators=list(data["annotators"]),
                reviewers=list(data["reviewers"]),
                annotations_per_clip=data["annotations_per_clip"],
                seed=data["seed"],
                instructions=data["instructions"],
                created_by=request.user,
            )
        except CampaignError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            messages.success(request, f"Annotation campaign {campaign.name} created with {len(data['clips'])} clips.")
            return redirect("annotation:staff_campaign", campaign_id=campaign.pk)
    context = {"campaigns": selectors_workspace.campaigns_with_counts(), "form": form}
    return render(request, "annotation/staff_campaigns.html", context, status=400 if form.errors else 200)


@roles_required(ADMIN)
def campaign_detail(request, campaign_id: int):
    """Who: admins. Per annotator and per clip progress, skips with their reasons, review state."""
    campaign = get_object_or_404(AnnotationCampaign.objects.select_related("dataset"), pk=campaign_id)
    clip_rows = selectors_workspace.campaign_clip_rows(campaign=campaign)
    context = {
        "campaign": campaign,
        "annotator_rows": selectors_workspace.campaign_annotator_rows(campaign=campaign),
        "clip_rows": clip_rows,
        "skips": [task for row in clip_rows for task in row.skips],
        "complete_count": sum(1 for row in clip_rows if row.submitted >= campaign.annotations_per_clip),
        "gold_count": sum(1 for row in clip_rows if row.review and row.review.status == "published"),
    }
    return render(request, "annotation/staff_campaign.html", context)


@roles_required(ADMIN)
@require_POST
def campaign_toggle(request, campaign_id: int):
    campaign = get_object_or_404(AnnotationCampaign, pk=campaign_id)
    campaign.is_active = not campaign.is_active
    campaign.save(update_fields=["is_active", "updated_at"])
    messages.success(request, f"Campaign {campaign.name} {'reopened' if campaign.is_active else 'closed'}.")
    return redirect("annotation:staff_campaign", campaign_id=campaign.pk)
