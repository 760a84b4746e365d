"""Inter-annotator agreement pages and JSON for reviewers (the review pages of the annotation app call these)."""

from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import REVIEWER, roles_required
from annotation.models import AnnotationCampaign
from annotation.services.annotation_reviews import campaign_review_denial, clip_review_denial
from common.web_input import query_id
from corpus.models import Clip, Dataset
from metrics_bridge.agreement.annotation_agreement import FACTORS
from metrics_bridge.services.evaluation.annotation_agreement import annotation_agreement_state, clip_annotation_matching
from metrics_bridge.tasks.agreement import request_annotation_agreement


@roles_required(REVIEWER)
@require_safe
def annotation_agreement(request):
    """Who: reviewers and admins. Agreement per factor of a dataset (or one campaign), overall and per annotator.

    ?dataset=<id> or ?campaign=<id>; &format=json gives the data (the review overview loads it; 202 with
    "computing" while a worker computes it), &format=status the page's live status (accounts/live.py). The
    agreement embeds phrases with Sentence-BERT: a worker computes it and this view reads the stored result.
    """
    campaign = None
    campaign_id = query_id(request, "campaign", AnnotationCampaign)
    if campaign_id is not None:
        campaign = get_object_or_404(AnnotationCampaign.objects.select_related("dataset"), pk=campaign_id)
        denial = campaign_review_denial(campaign=campaign, user=request.user)
        if denial:
            raise PermissionDenied(denial)
        dataset = campaign.dataset
    else:
        dataset = get_object_or_404(Dataset, pk=query_id(request, "dataset", Dataset) or 0)
    state = annotation_agreement_state(dataset=dataset, campaign=campaign)
    if not state.fresh and request_annotation_agreement(dataset=dataset, campaign=campaign):
        state = annotation_agreement_state(dataset=dataset, campaign=campaign)  # done already with eager Celery
    computation = state.computation
    given_up = bool(computation and computation.given_up)
    version = live_version(state.computed_at, state.fresh, computation and (computation.phase, computation.attempts))
    names = {"dataset": dataset.name, "campaign": campaign.name if campaign else None}
    output = request.GET.get("format")
    if output == "status":
        return live_status_response(version=version, busy=not state.fresh and not given_up, fresh=state.fresh)
    if output == "json":
        if state.payload is None:
            error = computation.error if computation else ""
            return JsonResponse({**names, "computing": not given_up, "error": error}, status=202)
        return JsonResponse({**names, **state.payload, "current": state.fresh})
    report = state.payload
    rows = []
    if report is not None:
        rows = [("All annotators", report["clips"], report["pairs"], [report["factors"][f] for f in FACTORS])]
        rows += [
            (name, entry["clips"], entry["pairs"], [entry["factors"][f] for f in FACTORS])
            for name, entry in report["per_annotator"].items()
        ]
    status_url = f"{request.path}?{request.GET.urlencode()}&format=status"
    context = {
        "dataset": dataset,
        "campaign": campaign,
        "report": report,
        "factors": FACTORS,
        "rows": rows,
        "state": state,
        "computation": computation,
        "given_up": given_up,
        "live": live_context(status_url=status_url, version=version, busy=not state.fresh and not given_up),
    }
    return render(request, "metrics_bridge/annotation_agreement.html", context)


@roles_required(REVIEWER)
@require_safe
def clip_matching(request, campaign_id: int, clip_id: int):
    """Who: reviewers who may review this clip. Events matched across its submitted annotations (X-ACE
    similarity) and the clip's per-factor agreement, as JSON for the review page."""
    campaign = get_object_or_404(AnnotationCampaign.objects.select_related("dataset"), pk=campaign_id)
    clip = get_object_or_404(Clip, pk=clip_id)
    denial = clip_review_denial(campaign=campaign, clip=clip, user=request.user)
    if denial:
        raise PermissionDenied(denial)
    return JsonResponse(clip_annotation_matching(campaign=campaign, clip=clip))
