"""Reviewer pages: campaigns to review, a campaign's clips, and the side-by-side review of one clip into gold."""

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from accounts.roles import REVIEWER, roles_required
from annotation import selectors_workspace
from annotation.models import AnnotationCampaign, Clip
from annotation.services.annotation_reviews import campaign_review_denial, clip_review_denial
from annotation.views_workspace import clip_player_context


@roles_required(REVIEWER)
def review_home(request):
    """Who: reviewers. Campaigns they review with clip counts, and the inter-annotator agreement overview."""
    campaigns = selectors_workspace.campaigns_reviewed_by(request.user)
    rows = []
    for campaign in campaigns:
        clip_rows = selectors_workspace.campaign_clip_rows(campaign=campaign, viewer=request.user)
        rows.append(
            {
                "campaign": campaign,
                "clips": len(clip_rows),
                "ready": sum(1 for r in clip_rows if r.submitted >= 2 and not r.denial and not _published(r)),
                "gold": sum(1 for r in clip_rows if _published(r)),
            }
        )
    return render(request, "annotation/review_home.html", {"rows": rows})


def _published(row) -> bool:
    return bool(row.review and row.review.status == "published")


def _campaign_for_reviewer(request, campaign_id: int) -> AnnotationCampaign:
    campaign = get_object_or_404(AnnotationCampaign.objects.select_related("dataset"), pk=campaign_id)
    denial = campaign_review_denial(campaign=campaign, user=request.user)
    if denial:
        raise PermissionDenied(denial)
    return campaign


@roles_required(REVIEWER)
def review_campaign(request, campaign_id: int):
    """Who: the campaign's reviewers. Its clips: submissions k of N, review state; clips they annotated are locked."""
    campaign = _campaign_for_reviewer(request, campaign_id)
    rows = selectors_workspace.campaign_clip_rows(campaign=campaign, viewer=request.user)
    return render(request, "annotation/review_campaign.html", {"campaign": campaign, "rows": rows})


@roles_required(REVIEWER)
def review_clip(request, campaign_id: int, clip_id: int):
    """Who: the campaign's reviewers, never for a clip they annotated (403). Submissions side by side,
    matched events and the clip's agreement (from metrics_bridge), the gold editor, send back with a comment."""
    campaign = _campaign_for_reviewer(request, campaign_id)
    clip = get_object_or_404(Clip, pk=clip_id)
    denial = clip_review_denial(campaign=campaign, clip=clip, user=request.user)
    if denial:
        raise PermissionDenied(denial)
    review_urls = {
        "campaignId": campaign.pk,
        "clipId": clip.pk,
        "open": reverse("annotation-review-list"),
        "draft": reverse("annotation-review-draft", args=[0]),
        "publish": reverse("annotation-review-publish", args=[0]),
        "returnTask": reverse("annotation-task-return-to-annotator", args=[0]),
        "matching": reverse("metrics_bridge:annotation_clip_matching", args=[campaign.pk, clip.pk]),
    }
    context = {
        "campaign": campaign,
        "clip": clip,
        "review_urls": review_urls,
        "tag_library": selectors_workspace.tag_library_entries(),
        "suggestions": selectors_workspace.source_suggestions(clip=clip, user=request.user),
        **clip_player_context(clip),
    }
    return render(request, "annotation/review_clip.html", context)
