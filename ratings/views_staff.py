"""Campaign administration pages (admins only): list, create, one campaign, quality control, raters."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, roles_required
from ratings import selectors
from ratings.forms import CampaignCreateForm, CampaignRatersAddForm, CampaignSettingsForm
from ratings.models import Campaign, HeadphoneCheck
from ratings.services.campaign_rules import CampaignRuleError, campaign_request_setup
from ratings.services.campaigns import CampaignSetupError, campaign_add_raters, campaign_settings_update
from ratings.services.headphone import headphone_checks_reset, headphone_status
from ratings.services.quality import campaign_rater_exclude, campaign_rater_quality


@roles_required(ADMIN)
def campaign_list(request):
    """Who: admins. Every campaign with raters, judgements done and links to its page and quality."""
    return render(request, "ratings/staff/campaign_list.html", {"campaigns": selectors.campaigns_with_progress()})


@roles_required(ADMIN)
def campaign_create(request):
    """Who: admins. Build a campaign (captions or generated pairs) and assign raters in one step."""
    form = CampaignCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            campaign = campaign_request_setup(
                name=data["name"],
                title=data["title"],
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
                crowd_only=data["crowd_only"],
                requires_huggins=data["requires_huggins"],
            )
        except CampaignRuleError as error:
            form.add_error(error.field, str(error))
        except CampaignSetupError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Campaign {campaign.name} created.")
            donors = selectors.campaign_donor_clip_count(campaign=campaign)
            if donors:
                messages.info(
                    request,
                    f"Clips giving the HI pairs their other caption: {donors} (not rated in this campaign; none of "
                    "its raters has them among their items, so nobody recognises those captions).",
                )
            breaches = selectors.campaign_gold_rule_breaches(campaign=campaign)
            if breaches:
                messages.warning(request, _gold_rule_warning(breaches))
            clips_without_audio = selectors.campaign_clips_without_audio(campaign=campaign)
            if clips_without_audio:
                messages.warning(
                    request, f"{clips_without_audio} of its clips have no audio yet: raters cannot finish those items."
                )
            return redirect("ratings:campaign_detail", campaign_id=campaign.pk)
    return render(request, "ratings/staff/campaign_create.html", {"form": form}, status=400 if form.errors else 200)


def _gold_rule_warning(breaches: int) -> str:
    if not breaches:
        return ""
    return (
        f"The gold rule could not be kept: {breaches} gold item{'s' if breaches != 1 else ''} went to raters who "
        "also have another item of the same clip, so those checks can be answered by reading instead of listening "
        "(too few clips or raters for the judgements asked). Their failures say little about attention; ask for "
        "fewer judgements per item or gold pairs per clip, or add raters."
    )


@roles_required(ADMIN)
def campaign_detail(request, campaign_id: int):
    """Who: admins. One campaign: settings (raters' title, open/closed, second screen), its raters with
    progress, workbook download per rater and upload (THumBS), adding raters, links to quality control."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    settings_form = CampaignSettingsForm(
        request.POST if request.POST.get("form") == "settings" else None,
        initial={
            "title": campaign.title,
            "is_active": campaign.is_active,
            "requires_huggins": campaign.requires_huggins,
        },
    )
    raters_form = CampaignRatersAddForm(
        request.POST if request.POST.get("form") == "raters" else None, campaign=campaign
    )
    if request.method == "POST":
        if settings_form.is_bound and settings_form.is_valid():
            campaign_settings_update(campaign=campaign, **settings_form.cleaned_data)
            messages.success(request, f"Settings of {campaign.name} saved.")
            return redirect("ratings:campaign_detail", campaign_id=campaign.pk)
        if raters_form.is_bound and raters_form.is_valid():
            added = list(raters_form.cleaned_data["raters"])
            try:
                campaign_add_raters(campaign=campaign, raters=added)
            except CampaignSetupError as error:
                raters_form.add_error(None, str(error))
            else:
                names = ", ".join(user.get_username() for user in added)
                messages.success(request, f"Added to {campaign.name}: {names}. Each got a balanced share of the items.")
                breaches = selectors.campaign_gold_rule_breaches(campaign=campaign)
                if breaches:
                    messages.warning(request, _gold_rule_warning(breaches))
                return redirect("ratings:campaign_detail", campaign_id=campaign.pk)
    context = {
        "campaign": campaign,
        "is_thumbs": campaign.task_type == Campaign.TaskType.THUMBS,
        "assignments": selectors.campaign_assignments_with_progress(campaign=campaign),
        "settings_form": settings_form,
        "raters_form": raters_form,
        "clips_without_audio": selectors.campaign_clips_without_audio(campaign=campaign),
        "gold_rule_warning": _gold_rule_warning(selectors.campaign_gold_rule_breaches(campaign=campaign)),
    }
    return render(
        request,
        "ratings/staff/campaign_detail.html",
        context,
        status=400 if settings_form.errors or raters_form.errors else 200,
    )


@roles_required(ADMIN)
def campaign_quality(request, campaign_id: int):
    """Who: admins. Per-rater quality figures; exclude a rater from reports; reset a headphone screening."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    rows = campaign_rater_quality(campaign=campaign)
    user_model = get_user_model()
    admin_ids = set(
        user_model.objects.filter(pk__in=[row.rater_id for row in rows], is_staff=True).values_list("pk", flat=True)
    )
    for row in rows:
        row.headphones = headphone_status(rater=user_model(pk=row.rater_id))
        row.is_admin = row.rater_id in admin_ids
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
    campaign_rater_exclude(campaign=campaign, rater=rater, excluded=excluded, by=request.user)
    messages.success(
        request,
        f"{rater.get_username()} {'excluded from' if excluded else 'included in'} the reports of {campaign.name}.",
    )
    return redirect("ratings:campaign_quality", campaign_id=campaign.pk)


@roles_required(ADMIN)
def rater_list(request):
    """Who: admins. Every rater (rater group or assigned somewhere): their studies and both headphone screens,
    with the reset for raters a screen has blocked."""
    rows = []
    for rater in selectors.raters_with_assignments():
        screens = [headphone_status(rater=rater, kind=kind) for kind in HeadphoneCheck.Kind.values]
        rows.append(
            {"rater": rater, "screens": screens, "needs_reset": any(status.failed_attempts for status in screens)}
        )
    return render(request, "ratings/staff/rater_list.html", {"rows": rows})


@roles_required(ADMIN)
@require_POST
def headphone_reset(request, rater_id: int):
    """Who: admins. Let a rater who failed a headphone screen twice try again (attempts are kept)."""
    rater = get_object_or_404(get_user_model(), pk=rater_id)
    count = headphone_checks_reset(rater=rater)
    messages.success(request, f"Headphone screening of {rater.get_username()} reset ({count} attempts set aside).")
    campaign_id = request.POST.get("campaign_id")
    if campaign_id and campaign_id.isdigit():
        return redirect("ratings:campaign_quality", campaign_id=int(campaign_id))
    return redirect("ratings:rater_list")
