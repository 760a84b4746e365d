"""Campaign administration pages (admins only): list with progress, create, quality control."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, roles_required
from ratings import selectors
from ratings.forms import CampaignCreateForm
from ratings.models import Campaign
from ratings.services.campaigns import CampaignSetupError, campaign_setup
from ratings.services.headphone import headphone_checks_reset, headphone_status
from ratings.services.quality import campaign_rater_exclude, campaign_rater_quality


@roles_required(ADMIN)
def campaign_list(request):
    """Who: admins. Every campaign with raters, judgements done and a link to its quality page."""
    return render(request, "ratings/staff/campaign_list.html", {"campaigns": selectors.campaigns_with_progress()})


@roles_required(ADMIN)
def campaign_create(request):
    """Who: admins. Build a campaign (captions or generated pairs) and assign raters in one step."""
    form = CampaignCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            campaign = campaign_setup(
                name=data["name"],
                dataset=data["dataset"],
                task_type=data["task_type"],
                seed=data["seed"],
                judgements_per_item=data["judgements_per_item"],
                clips=data["clips"],
                systems=list(data["systems"]) or None,
                human_captions_per_clip=data["human_captions_per_clip"] or 0,
                split_counts=data["split_counts"],
                gold_from_hi=data["gold_from_hi"],
                raters=list(data["raters"]),
            )
        except CampaignSetupError as error:
            form.add_error(None, str(error))
        else:
            clips_without_audio = (
                campaign.dataset.clips.filter(assignment_items__assignment__campaign=campaign, audio="")
                .distinct()
                .count()
            )
            messages.success(request, f"Campaign {campaign.name} created.")
            if clips_without_audio:
                messages.warning(
                    request, f"{clips_without_audio} of its clips have no audio yet: raters cannot finish those items."
                )
            return redirect("ratings:campaign_list")
    return render(request, "ratings/staff/campaign_create.html", {"form": form}, status=400 if form.errors else 200)


@roles_required(ADMIN)
def campaign_quality(request, campaign_id: int):
    """Who: admins. Per-rater quality figures; exclude a rater from reports; reset a headphone screening."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    rows = campaign_rater_quality(campaign=campaign)
    user_model = get_user_model()
    for row in rows:
        row.headphones = headphone_status(rater=user_model(pk=row.rater_id))
    gold_count = (
        campaign.pairs.exclude(gold_choice="").count() if campaign.task_type == Campaign.TaskType.PAIRWISE else 0
    )
    return render(
        request,
        "ratings/staff/campaign_quality.html",
        {
            "campaign": campaign,
            "rows": rows,
            "is_pairwise": campaign.task_type == Campaign.TaskType.PAIRWISE,
            "gold_count": gold_count,
        },
    )


@roles_required(ADMIN)
@require_POST
def campaign_rater_exclusion(request, campaign_id: int, rater_id: int):
    """Who: admins. Exclude a rater from the campaign's reports (or include them again); data is kept."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    rater = get_object_or_404(get_user_model(), pk=rater_id, assignments__campaign=campaign)
    excluded = request.POST.get("excluded") == "1"
    campaign_rater_exclude(campaign=campaign, rater=rater, excluded=excluded)
    messages.success(
        request,
        f"{rater.get_username()} {'excluded from' if excluded else 'included in'} the reports of {campaign.name}.",
    )
    return redirect("ratings:campaign_quality", campaign_id=campaign.pk)


@roles_required(ADMIN)
@require_POST
def headphone_reset(request, rater_id: int):
    """Who: admins. Let a rater who failed the headphone screening twice try again."""
    rater = get_object_or_404(get_user_model(), pk=rater_id)
    count = headphone_checks_reset(rater=rater)
    messages.success(request, f"Headphone screening of {rater.get_username()} reset ({count} attempts set aside).")
    campaign_id = request.POST.get("campaign_id")
    if campaign_id and campaign_id.isdigit():
        return redirect("ratings:campaign_quality", campaign_id=int(campaign_id))
    return redirect("ratings:campaign_list")
