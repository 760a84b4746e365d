"""Rater pages: my campaigns, the THumBS and pairwise item pages, and the reports those pages send.

Nothing rendered here names a caption's author kind, role, system or source label:
captions are numbered by their position on the page (see ratings/forms.py).
"""

import json
from functools import wraps

from django.conf import settings
from django.http import Http404, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from accounts.roles import RATER, roles_required
from ratings import selectors
from ratings.forms import PENALTY_FIELDS, PENALTY_PRESETS, RUBRIC, PairwiseItemForm, ThumbsItemForm
from ratings.models import Assignment, AssignmentItem, Campaign, PairwiseVote, ThumbsRating
from ratings.services.headphone import headphone_status
from ratings.services.judgements import (
    JudgementError,
    item_draft_save,
    item_mark_listened,
    item_mark_shown,
    listening_seconds_required,
    pairwise_item_submit,
    thumbs_item_submit,
)


def headphone_screening_required(view):
    """Send raters without a valid headphone check to the screening (JSON endpoints get 403)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if headphone_status(rater=request.user).is_valid:
            return view(request, *args, **kwargs)
        if request.method == "POST" and request.content_type == "application/json":
            return JsonResponse({"error": "complete the headphone check first"}, status=403)
        return redirect(f"{reverse('ratings:headphone_check')}?{urlencode({'next': request.get_full_path()})}")

    return wrapped


def _own_item(request, item_id: int) -> AssignmentItem:
    item = selectors.rater_item(rater=request.user, item_id=item_id)
    if item is None or not item.assignment.campaign.is_active:
        raise Http404("No such item in your open campaigns")
    return item


def _after_submit(item: AssignmentItem):
    next_id = selectors.item_neighbours(item=item)["next_open_id"]
    if next_id:
        return redirect("ratings:item", item_id=next_id)
    return redirect("ratings:campaign_next", campaign_id=item.assignment.campaign_id)


@roles_required(RATER)
def rater_home(request):
    """Who: raters (and admins). Their open campaigns with progress, and their headphone screening state."""
    return render(
        request,
        "ratings/rater_home.html",
        {
            "assignments": selectors.rater_assignments_with_progress(rater=request.user),
            "headphones": headphone_status(rater=request.user),
        },
    )


@roles_required(RATER)
@headphone_screening_required
def campaign_next(request, campaign_id: int):
    """Who: the campaign's raters. Resume: go to the first unfinished item, or say the work is done."""
    assignment = get_object_or_404(Assignment, campaign_id=campaign_id, rater=request.user, campaign__is_active=True)
    item = selectors.assignment_next_item(assignment=assignment)
    if item is not None:
        return redirect("ratings:item", item_id=item.pk)
    return render(request, "ratings/campaign_done.html", {"assignment": assignment})


@roles_required(RATER)
@headphone_screening_required
def item_page(request, item_id: int):
    """Who: the rater the item is assigned to. GET shows the item; POST submits the judgement."""
    item = item_mark_shown(item=_own_item(request, item_id))
    if item.assignment.campaign.task_type == Campaign.TaskType.PAIRWISE:
        return _pairwise_page(request, item)
    return _thumbs_page(request, item)


def _page_context(item: AssignmentItem) -> dict:
    clip = item.clip
    return {
        "item": item,
        "campaign": item.assignment.campaign,
        "progress": selectors.item_progress(item=item),
        "neighbours": selectors.item_neighbours(item=item),
        "audio_url": reverse("annotation:clip-audio", kwargs={"clip_id": clip.pk}) if clip.has_audio else "",
        "peaks": clip.waveform_peaks or [],
        "duration": clip.duration_seconds,
        "must_listen_seconds": settings.MUST_LISTEN_SECONDS,
        "listening_seconds": listening_seconds_required(item=item),
        "is_listened": item.listened_at is not None,
    }


def _thumbs_initial(item: AssignmentItem) -> dict:
    """Form values to show: the saved ratings of a completed item, else the autosaved draft."""
    if item.completed_at:
        ratings = {
            rating.caption_id: rating
            for rating in ThumbsRating.objects.filter(rater=item.assignment.rater, caption_id__in=item.caption_order)
        }
        initial = {}
        for number, caption_id in enumerate(item.caption_order, start=1):
            rating = ratings.get(caption_id)
            if rating is None:
                continue
            initial.update(
                {
                    f"precision_{number}": rating.precision,
                    f"recall_{number}": rating.recall,
                    f"comment_{number}": rating.comment,
                    **{f"{name}_{number}": getattr(rating, name) for name in PENALTY_FIELDS},
                }
            )
            initial["synthesized"] = rating.synthesized
        return initial
    return {key: value for key, value in item.draft.items() if isinstance(value, str | int | float)}


def _thumbs_page(request, item: AssignmentItem):
    captions = selectors.thumbs_item_captions(item=item)
    if request.method == "POST":
        form = ThumbsItemForm(request.POST, caption_count=len(captions))
        if form.is_valid():
            try:
                thumbs_item_submit(
                    item=item,
                    scores=form.caption_scores(item.caption_order),
                    synthesized=form.cleaned_data["synthesized"],
                )
            except JudgementError as error:
                form.add_error(None, str(error))
            else:
                return _after_submit(item)
    else:
        form = ThumbsItemForm(initial=_thumbs_initial(item), caption_count=len(captions))
    blocks = [
        {
            "number": number,
            "text": caption.text,
            "precision": form[f"precision_{number}"],
            "recall": form[f"recall_{number}"],
            "penalties": [
                {"field": form[f"{name}_{number}"], "label": name.capitalize(), "hint": RUBRIC[name]}
                for name in PENALTY_FIELDS
            ],
            "comment": form[f"comment_{number}"],
        }
        for number, caption in enumerate(captions, start=1)
    ]
    context = {
        **_page_context(item),
        "form": form,
        "blocks": blocks,
        "scores": range(1, 6),
        "rubric": RUBRIC,
        "penalty_presets": PENALTY_PRESETS,
    }
    return render(request, "ratings/thumbs_item.html", context, status=400 if form.errors else 200)


def _pairwise_page(request, item: AssignmentItem):
    pair = item.pair
    left, right = (pair.caption_a, pair.caption_b) if item.a_on_left else (pair.caption_b, pair.caption_a)
    if request.method == "POST":
        form = PairwiseItemForm(request.POST)
        if form.is_valid():
            try:
                pairwise_item_submit(item=item, side=form.cleaned_data["side"])
            except JudgementError as error:
                form.add_error(None, str(error))
            else:
                return _after_submit(item)
    else:
        form = PairwiseItemForm(initial={"side": _pairwise_initial_side(item)})
    context = {**_page_context(item), "form": form, "left_text": left.text, "right_text": right.text}
    return render(request, "ratings/pairwise_item.html", context, status=400 if form.errors else 200)


def _pairwise_initial_side(item: AssignmentItem) -> str:
    if item.completed_at:
        vote = PairwiseVote.objects.filter(rater=item.assignment.rater, pair_id=item.pair_id).first()
        if vote:
            if vote.choice == "none":
                return "none"
            return "left" if (vote.choice == "a") == item.a_on_left else "right"
    side = item.draft.get("side")
    return side if side in ("left", "right", "none") else ""


@roles_required(RATER)
@headphone_screening_required
@require_POST
def item_listened(request, item_id: int):
    """Who: the item's rater. The player reports that the clip was heard; submitting needs this."""
    item = _own_item(request, item_id)
    try:
        item_mark_listened(item=item)
    except JudgementError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"listened": True})


@roles_required(RATER)
@headphone_screening_required
@require_POST
def item_draft(request, item_id: int):
    """Who: the item's rater. Autosave: the unsubmitted form as a JSON object of field name to value."""
    item = _own_item(request, item_id)
    try:
        draft = json.loads(request.body or b"{}")
    except ValueError:
        return HttpResponseBadRequest("the draft is not valid JSON")
    try:
        item_draft_save(item=item, draft=draft)
    except JudgementError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"saved": True})
