"""Rater pages: my studies, the THumBS and pairwise item pages, their audio and the reports they send.

Raters know an item only by its random token (never a database id). Nothing rendered here names a
caption's author kind, role, system, source label, the pair's split or gold status, the dataset or
the clip: captions are numbered by their position on the page, pairs are left/right (see
ratings/forms.py), the audio URL is the item's own and the campaign shows its rater title.
"""

import json
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.http import Http404, HttpResponseBadRequest, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import RATER, roles_required
from ratings import projection, selectors
from ratings.forms import PENALTY_FIELDS, PENALTY_PRESETS, RUBRIC, PairwiseItemForm, ThumbsItemForm
from ratings.models import Assignment, AssignmentItem, Campaign
from ratings.models_study import Participant
from ratings.services.headphone import screen_missing
from ratings.services.judgements import (
    JudgementError,
    StaleItemError,
    item_answer,
    item_change_open,
    item_draft_save,
    item_mark_shown,
    pairwise_item_submit,
    thumbs_item_submit,
)
from ratings.services.listening import item_mark_listened, listening_seconds_required
from ratings.services.participants import participant_for_user, participant_reservation_check
from ratings.services.rater_audio import item_audio_response
from ratings.views_study import participant_roles_known, stage_url


def _is_json(request) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get("Accept", "")


def _screening_redirect(request, campaign: Campaign | None):
    """None when the rater holds every screen `campaign` needs, else the response sending them to it."""
    missing = screen_missing(rater=request.user, campaign=campaign)
    if missing is None:
        return None
    if request.method == "POST" and _is_json(request):
        return JsonResponse({"error": "complete the headphone check first"}, status=403)
    url = reverse("ratings:headphone_check", kwargs={"kind": missing.kind})
    return redirect(f"{url}?{urlencode({'next': request.get_full_path()})}")


def _participant_gate(request):
    """For a crowd participant: None while they are rating their share, else where their study sends them.

    Their headphone screens were passed on the study's own path (with the study's attempts), so the rater
    screening redirect does not apply; a participant whose time ran out is timed out here.
    """
    # An answer or draft the page sends as the countdown ends is still accepted (STUDY_EXPIRY_GRACE_SECONDS).
    participant = participant_reservation_check(participant=request.study_participant, grace=request.method == "POST")
    if participant.stage == Participant.Stage.ITEMS and participant.study.is_open:
        return None
    url = stage_url(participant)
    if request.method == "POST" and _is_json(request):
        return JsonResponse({"error": "this item is no longer open in your study", "redirect": url}, status=409)
    return redirect(url)


def item_view(view=None, *, related: tuple[str, ...] = ("clip", "pair")):
    """Resolve the item token to the signed-in rater's own item (404 for anyone else) and require screening.

    A crowd participant passes without the role check: their account is made a rater with its participant row
    (ratings.services.participants), and reading their groups on each of an item's several requests is CPU spent for
    nothing when a crowd arrives at once. `related`: what a participant's item is read with (the views that do not
    use the clip or the pair say so: `@item_view(related=())`).
    """
    if view is None:
        return lambda view: item_view(view, related=related)

    def resolved(request, token: str, *args, **kwargs):
        if request.study_participant is not None:
            refusal = _participant_gate(request)
            if refusal is not None:
                return refusal
        if request.study_participant is not None:
            item = selectors.participant_item(participant=request.study_participant, token=token, related=related)
        else:
            item = selectors.rater_item(rater=request.user, token=token)
        if item is None:
            raise Http404("No such item in your open studies")
        if request.study_participant is None:
            refusal = _screening_redirect(request, item.assignment.campaign)
            if refusal is not None:
                return refusal
        return view(request, item, *args, **kwargs)

    rater_checked = roles_required(RATER)(resolved)

    @wraps(view)
    def wrapped(request, token: str, *args, **kwargs):
        request.study_participant = participant_for_user(request.user)
        if request.study_participant is not None:
            participant_roles_known(request)
            return resolved(request, token, *args, **kwargs)
        return rater_checked(request, token, *args, **kwargs)

    wrapped.allowed_roles = rater_checked.allowed_roles
    return wrapped


def _after_submit(request, item: AssignmentItem, next_token: str | None):
    """Go on to `next_token` (the next open item, read by the submit), else to the study's or campaign's page."""
    if next_token:
        return redirect("ratings:item", token=next_token)
    if getattr(request, "study_participant", None) is not None:
        return redirect("study:items", slug=request.study_participant.study.slug)
    return redirect("ratings:campaign_next", campaign_id=item.assignment.campaign_id)


def _participant_elsewhere(request):
    """Crowd participants have no rater home: their study's page leads the way."""
    participant = participant_for_user(request.user)
    return redirect(stage_url(participant)) if participant is not None else None


@roles_required(RATER)
def rater_home(request):
    """Who: raters (and admins in the rater group). Their open studies with progress, and their screening."""
    elsewhere = _participant_elsewhere(request)
    if elsewhere is not None:
        return elsewhere
    return render(
        request,
        "ratings/rater_home.html",
        {
            "assignments": projection.studies(projection.rater_assignments(rater=request.user, active_only=True)),
            "headphones": screen_missing(rater=request.user, campaign=None),
        },
    )


@roles_required(RATER)
def campaign_next(request, campaign_id: int):
    """Who: the campaign's raters. Resume: go to the first unfinished item, or say the work is done."""
    elsewhere = _participant_elsewhere(request)
    if elsewhere is not None:
        return elsewhere
    assignment = get_object_or_404(
        Assignment.objects.select_related("campaign"),
        campaign_id=campaign_id,
        rater=request.user,
        campaign__is_active=True,
    )
    refusal = _screening_redirect(request, assignment.campaign)
    if refusal is not None:
        return refusal
    item = projection.assignment_next_item(assignment=assignment)
    if item is not None:
        return redirect("ratings:item", token=item.token)
    context = {"assignment": assignment, "items": projection.assignment_items(assignment)}
    return render(request, "ratings/campaign_done.html", context)


@item_view
def item_page(request, item: AssignmentItem):
    """Who: the rater the item is assigned to. GET shows the item (or its submitted answer); POST submits.

    `?change=1` on a submitted item opens its form: that re-opening is logged here too (once per answer
    version), whether the rater came through "Change my answer" or typed the address.
    """
    item = item_mark_shown(item=item)
    if request.method == "GET" and request.GET.get("change") == "1" and item.completed_at is not None:
        item_change_open(item=item)
    if item.assignment.campaign.task_type == Campaign.TaskType.PAIRWISE:
        return _pairwise_page(request, item)
    return _thumbs_page(request, item)


def _is_editing(request, item: AssignmentItem) -> bool:
    """Unanswered items show the form; answered ones their answer, unless the rater chose to change it."""
    return item.completed_at is None or request.GET.get("change") == "1" or request.method == "POST"


def _page_context(request, item: AssignmentItem) -> dict:
    clip = item.clip
    return {
        "item": item,
        "study_title": item.assignment.campaign.rater_title,
        **projection.item_place(item=item),
        "audio_url": reverse("ratings:item_audio", kwargs={"token": item.token}) if clip.has_audio else "",
        "peaks": clip.waveform_peaks or [],
        "duration": clip.duration_seconds,
        "must_listen_seconds": settings.MUST_LISTEN_SECONDS,
        "listening_seconds": listening_seconds_required(item=item),
        "is_listened": item.listened_at is not None,
        "is_editing": _is_editing(request, item),
        "answer": item_answer(item=item) if item.completed_at else {},
        "version": item.version,
        "replacing": False,
        "conflict": None,
    }


def _conflict_context(error: StaleItemError) -> dict:
    """What the page needs to show the newer answer and offer keep / replace."""
    return {
        "conflict": {"answer": error.current_answer, "answered_at": error.answered_at},
        "version": error.current_version,
        "replacing": True,
    }


@dataclass(frozen=True)
class _Accepted:
    """A submit the service accepted, with the token of the item the page goes on to (None: every one is done)."""

    next_open_token: str | None


def _submission(request, item: AssignmentItem, form, submit) -> tuple[int, dict] | _Accepted:
    """Validate and submit a posted item form; _Accepted (with where to go on) or the page's status and context.

    409: the page was stale (the context gets the newer answer and the replace option); 400: the form
    or the judgement was refused (the errors are on the form). The page context is built only for a
    refusal: an accepted submit redirects without it.
    """
    if form.is_valid():
        try:
            next_token = submit(
                form.cleaned_data, seen_version=form.cleaned_data["version"], replacing=form.cleaned_data["replacing"]
            )
        except StaleItemError as error:
            return 409, {**_page_context(request, item), **_conflict_context(error)}
        except JudgementError as error:
            form.add_error(None, str(error))
        else:
            return _Accepted(next_token)
    return 400, {**_page_context(request, item), "version": request.POST.get("version", item.version)}


def _thumbs_initial(item: AssignmentItem, answer: dict) -> dict:
    """Form values to show: the autosaved draft if there is one, else the saved answer."""
    if item.draft:
        return {key: value for key, value in item.draft.items() if isinstance(value, str | int | float)}
    initial = {"synthesized": answer.get("synthesized", "")}
    for row in answer.get("captions", []):
        number = row["number"]
        initial.update({f"{name}_{number}": row[name] for name in ("precision", "recall", "comment", *PENALTY_FIELDS)})
    return initial


def _thumbs_page(request, item: AssignmentItem):
    captions = projection.item_captions(item)
    if request.method == "POST":
        form = ThumbsItemForm(request.POST, caption_count=len(captions))

        def submit(data, **versions):
            scores = form.caption_scores(item.caption_order)
            return thumbs_item_submit(item=item, scores=scores, synthesized=data["synthesized"], **versions)

        outcome = _submission(request, item, form, submit)
        if isinstance(outcome, _Accepted):
            return _after_submit(request, item, outcome.next_open_token)
        status, context = outcome
    else:
        status, context = 200, _page_context(request, item)
        form = ThumbsItemForm(initial=_thumbs_initial(item, context["answer"]), caption_count=len(captions))
    blocks = [
        {
            "number": number,
            "text": caption.text,
            "precision": _score_field(form[f"precision_{number}"]),
            "recall": _score_field(form[f"recall_{number}"]),
            "penalties": [
                {
                    "field": _penalty_field(form[f"{name}_{number}"]),
                    "label": name.capitalize(),
                    "hint": RUBRIC[name],
                }
                for name in PENALTY_FIELDS
            ],
            "comment": _comment_field(form[f"comment_{number}"]),
        }
        for number, caption in enumerate(captions, start=1)
    ]
    context.update(
        {
            "form": form,
            "blocks": blocks,
            "rubric": RUBRIC,
            # The same buttons under every penalty of every caption: rendered once for the page.
            "penalty_preset_buttons": render_to_string(
                "ratings/_penalty_presets.html", {"penalty_presets": PENALTY_PRESETS}
            ),
        }
    )
    return render(request, "ratings/thumbs_item.html", context, status=status)


# The THumBS page repeats each field's values in loops (five radios per score, for each caption): each is
# computed here once, as plain strings, instead of the template asking the bound field again on every pass.
SCORES = tuple(str(value) for value in range(1, 6))


def _shown_errors(bound) -> object:
    """The field's errors as the template shows them; an empty list is rendered as nothing without rendering it."""
    return bound.errors or ""


def _score_field(bound) -> dict:
    checked = str(bound.value())
    return {
        "html_name": bound.html_name,
        "auto_id": bound.auto_id,
        "choices": [{"value": value, "is_checked": value == checked} for value in SCORES],
        "errors": _shown_errors(bound),
    }


def _penalty_field(bound) -> dict:
    value = bound.value()
    return {"html_name": bound.html_name, "value": "0" if value is None else str(value), "errors": _shown_errors(bound)}


def _comment_field(bound) -> dict:
    value = bound.value()
    return {"html_name": bound.html_name, "auto_id": bound.auto_id, "value": "" if value is None else value}


def _pairwise_page(request, item: AssignmentItem):
    if request.method == "POST":
        form = PairwiseItemForm(request.POST)
        outcome = _submission(
            request,
            item,
            form,
            lambda data, **versions: pairwise_item_submit(item=item, side=data["side"], **versions),
        )
        if isinstance(outcome, _Accepted):
            return _after_submit(request, item, outcome.next_open_token)
        status, context = outcome
    else:
        status, context = 200, _page_context(request, item)
        side = item.draft.get("side") or context["answer"].get("side", "")
        form = PairwiseItemForm(initial={"side": side if side in projection.SIDES else ""})
    left, right = projection.item_captions(item)
    side_field = form["side"]
    context.update(
        {
            "form": form,
            "left_text": left.text,
            "right_text": right.text,
            # Read once here: the template compares the chosen side three times and shows the field's errors.
            "side": {"auto_id": side_field.auto_id, "value": side_field.value(), "errors": _shown_errors(side_field)},
        }
    )
    return render(request, "ratings/pairwise_item.html", context, status=status)


@item_view
@require_POST
def item_change(request, item: AssignmentItem):
    """Who: the item's rater. Open a submitted answer for changing (logged), then show the form."""
    try:
        item_change_open(item=item)
    except JudgementError:
        pass  # not answered yet: the form is shown anyway
    return HttpResponseRedirect(f"{reverse('ratings:item', kwargs={'token': item.token})}?change=1")


@item_view(related=())
@require_POST
def item_listened(request, item: AssignmentItem):
    """Who: the item's rater. The player reports that the clip was heard; submitting needs this."""
    try:
        item_mark_listened(item=item)
    except JudgementError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"listened": True})


@item_view(related=())
@require_POST
def item_draft(request, item: AssignmentItem):
    """Who: the item's rater. Autosave: {"version": N, "fields": {name: value}}; validated like a submission."""
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return HttpResponseBadRequest("the draft is not valid JSON")
    if not isinstance(body, dict):
        return JsonResponse({"error": "the draft must be a JSON object"}, status=400)
    try:
        item_draft_save(item=item, draft=body.get("fields", {}), seen_version=body.get("version"))
    except StaleItemError as error:
        return JsonResponse(
            {"error": str(error), "current_version": error.current_version, "current_answer": error.current_answer},
            status=409,
        )
    except JudgementError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"saved": True})


@item_view(related=("clip",))
@require_safe
def item_audio(request, item: AssignmentItem):
    """Who: the item's rater only (404 for anyone else). The clip's rater copy (samples only, no metadata)
    under the item's own URL, streamed by the app (also on S3) so that what it sends is the listening proof."""
    try:
        return item_audio_response(item=item, range_header=request.headers.get("Range"), head=request.method == "HEAD")
    except FileNotFoundError:
        raise Http404("This clip has no audio") from None
