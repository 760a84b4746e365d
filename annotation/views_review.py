"""Reviewer pages: campaigns to review, a campaign's clips, and the side-by-side review of one clip into gold."""

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import REVIEWER, roles_required
from annotation import selectors_workspace
from annotation.models import AnnotationCampaign
from annotation.serializers_workspace import AnnotationReviewSerializer, SubmissionSerializer
from annotation.services.annotation_drafts import empty_draft
from annotation.services.annotation_reviews import campaign_review_denial, clip_review_denial, clip_submissions
from annotation.views_workspace import clip_player_context
from corpus.models import Clip


def _overview_rows(user) -> list[dict]:
    rows = []
    for campaign in selectors_workspace.campaigns_reviewed_by(user):
        clip_rows = selectors_workspace.campaign_clip_rows(campaign=campaign, viewer=user)
        rows.append({"campaign": campaign, **selectors_workspace.review_counts(clip_rows)})
    return rows


def _overview_version(rows: list[dict]) -> str:
    return live_version([[value if key != "campaign" else value.pk for key, value in row.items()] for row in rows])


@roles_required(REVIEWER)
def review_home(request):
    """Who: reviewers. Campaigns they review with clip counts (as the campaign pages count them), and the
    inter-annotator agreement overview; the page refreshes itself as annotators submit."""
    rows = _overview_rows(request.user)
    live = live_context(status_url=reverse("annotation:review_status"), version=_overview_version(rows), busy=False)
    return render(request, "annotation/review_home.html", {"rows": rows, "live": live})


@roles_required(REVIEWER)
def review_status(request):
    """Who: reviewers. The review overview's live status (accounts/live.py)."""
    return live_status_response(version=_overview_version(_overview_rows(request.user)), busy=False)


def _campaign_for_reviewer(request, campaign_id: int) -> AnnotationCampaign:
    campaign = get_object_or_404(AnnotationCampaign.objects.select_related("dataset"), pk=campaign_id)
    denial = campaign_review_denial(campaign=campaign, user=request.user)
    if denial:
        raise PermissionDenied(denial)
    return campaign


def _campaign_version(rows) -> str:
    shown = [(row.clip.pk, row.submitted, row.in_progress, row.returned, len(row.skips), row.state) for row in rows]
    return live_version(shown)


@roles_required(REVIEWER)
def review_campaign(request, campaign_id: int):
    """Who: the campaign's reviewers. Its clips: submissions k of N, review state; clips they annotated are locked."""
    campaign = _campaign_for_reviewer(request, campaign_id)
    rows = selectors_workspace.campaign_clip_rows(campaign=campaign, viewer=request.user)
    live = live_context(
        status_url=reverse("annotation:review_campaign_status", args=[campaign.pk]),
        version=_campaign_version(rows),
        busy=False,
    )
    return render(request, "annotation/review_campaign.html", {"campaign": campaign, "rows": rows, "live": live})


@roles_required(REVIEWER)
def review_campaign_status(request, campaign_id: int):
    """Who: the campaign's reviewers. The campaign's clip list's live status."""
    campaign = _campaign_for_reviewer(request, campaign_id)
    rows = selectors_workspace.campaign_clip_rows(campaign=campaign, viewer=request.user)
    return live_status_response(version=_campaign_version(rows), busy=False)


@roles_required(REVIEWER)
def review_clip(request, campaign_id: int, clip_id: int):
    """Who: the campaign's reviewers, never for a clip they annotated (403). Submissions side by side,
    matched events and the clip's agreement (from metrics_bridge), the gold editor, send back with a comment."""
    campaign = _campaign_for_reviewer(request, campaign_id)
    clip = get_object_or_404(Clip, pk=clip_id)
    denial = clip_review_denial(campaign=campaign, clip=clip, user=request.user)
    if denial:
        raise PermissionDenied(denial)
    # Read-only: opening the page shows the review if one was started, else the submissions and an empty gold
    # draft; the review itself is created by the reviewer's first action (an edit, "+ gold", publish), so a clip
    # merely looked at is not "in review" (and a clip without submissions never is).
    review = selectors_workspace.clip_review(campaign=campaign, clip=clip)
    if review is not None:
        review_state = {"review": AnnotationReviewSerializer(review).data}
        review_state["submissions"] = review_state["review"].pop("submissions")
    else:
        submitted = [task for task in clip_submissions(campaign=campaign, clip=clip) if task.annotation_id]
        review_state = {"review": None, "submissions": SubmissionSerializer(submitted, many=True).data}
    review_state["emptyDraft"] = empty_draft()
    review_urls = {
        "campaignId": campaign.pk,
        "clipId": clip.pk,
        "open": reverse("annotation-review-list"),
        "draft": reverse("annotation-review-draft", args=[0]),
        "publish": reverse("annotation-review-publish", args=[0]),
        "checks": reverse("annotation-review-checks", args=[0]),
        "returnTask": reverse("annotation-task-return-to-annotator", args=[0]),
        "matching": reverse("metrics_bridge:annotation_clip_matching", args=[campaign.pk, clip.pk]),
    }
    context = {
        "campaign": campaign,
        "clip": clip,
        "review_urls": review_urls,
        "review_state": review_state,
        "tag_library": selectors_workspace.tag_library_entries(),
        "suggestions": selectors_workspace.source_suggestions(clip=clip, user=request.user),
        **clip_player_context(clip),
    }
    return render(request, "annotation/review_clip.html", context)
