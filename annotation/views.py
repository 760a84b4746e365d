from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_safe

from accounts.blinding import dataset_visible_check
from accounts.roles import ADMIN, ANNOTATOR, RATER, REVIEWER, roles_required, user_has_role, user_roles
from annotation import selectors
from annotation.services.spectrogram import CHANNELS, SCALES, clip_spectrogram_ensure, clip_waveform_ensure
from annotation.services.spectrogram_zoom import ZoomRangeError, clip_spectrogram_range_png
from corpus.audio import clip_audio_response
from corpus.models import Clip


@login_required
def home(request):
    """Who: any signed-in user. Entry points for the user's roles; annotators, reviewers and admins
    also see every dataset with its counts (raters don't: they only need their assignments)."""
    roles = user_roles(request.user)
    sees_corpus = user_has_role(request.user, ANNOTATOR, REVIEWER)
    context = {
        "sees_corpus": sees_corpus,
        "datasets": selectors.dataset_overview() if sees_corpus else [],
        "is_admin": ADMIN in roles,
        # Admins pass every role check, but rating is personal work: only members of the rater group get the card.
        "is_rater": RATER in roles,
        "is_annotator": user_has_role(request.user, ANNOTATOR),
        "is_reviewer": user_has_role(request.user, REVIEWER),
        "has_role": bool(roles),
    }
    return render(request, "annotation/home.html", context)


@roles_required(ANNOTATOR, REVIEWER)
@require_safe
def clip_audio(request, clip_id: int):
    """Who: annotators, reviewers, admins (raters get their items' audio by the item's own URL, in ratings).
    The clip's audio, with byte ranges so players can seek.

    With S3 storage the browser is sent to a short-lived pre-signed URL instead of streaming through Django.
    """
    clip = get_object_or_404(Clip, pk=clip_id)
    dataset_visible_check(request.user, clip.dataset_id)
    if not clip.audio:
        raise Http404("This clip has no audio")
    if settings.USES_S3_STORAGE:
        response = HttpResponseRedirect(clip.audio.storage.url(clip.audio.name))
        add_never_cache_headers(response)  # the signed URL expires; don't let a cache keep the redirect
        return response
    try:
        return clip_audio_response(clip, request.headers.get("Range"))
    except FileNotFoundError:
        raise Http404("The audio file of this clip is missing from storage") from None


@roles_required(ANNOTATOR, REVIEWER, ADMIN)
@require_safe
def clip_spectrogram(request, clip_id: int):
    """Who: annotators, reviewers, admins. The clip's spectrogram, a grey PNG the page colours (computed once, then
    cached in storage): ?scale=mel|linear (default mel), ?channel=mix|left|right (default mix); with
    ?start=&end=&columns= the zoomed stretch at that many columns (spectrogram_zoom.py)."""
    scale, channel = request.GET.get("scale", "mel"), request.GET.get("channel", "mix")
    if scale not in SCALES or channel not in CHANNELS:
        return HttpResponseBadRequest(f"scale is one of {', '.join(SCALES)}; channel one of {', '.join(CHANNELS)}")
    if "start" in request.GET:
        return _clip_spectrogram_range(request, clip_id, scale, channel)
    return _clip_media(
        request, clip_id, lambda clip: clip_spectrogram_ensure(clip=clip, scale=scale, channel=channel), "image/png"
    )


def _clip_spectrogram_range(request, clip_id: int, scale: str, channel: str):
    """?start=&end= seconds and ?columns= pixels: that stretch at the zoomed timeline's resolution (not stored)."""
    try:
        start, end = float(request.GET["start"]), float(request.GET.get("end", ""))
        columns = int(request.GET.get("columns", ""))
    except ValueError:
        return HttpResponseBadRequest("start and end are seconds, columns a whole number of pixels")
    clip = get_object_or_404(Clip, pk=clip_id)
    dataset_visible_check(request.user, clip.dataset_id)
    if not clip.audio:
        raise Http404("This clip has no audio")
    try:
        png = clip_spectrogram_range_png(clip=clip, scale=scale, channel=channel, start=start, end=end, columns=columns)
    except ZoomRangeError as error:
        return HttpResponseBadRequest(str(error))
    except FileNotFoundError:
        raise Http404("The audio file of this clip is missing from storage") from None
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"  # the URL carries the audio's version
    return response


@roles_required(ANNOTATOR, REVIEWER, ADMIN)
@require_safe
def clip_waveform(request, clip_id: int):
    """Who: annotators, reviewers, admins. The clip's waveform per channel (JSON, one byte per 5 ms bucket)."""
    return _clip_media(request, clip_id, lambda clip: clip_waveform_ensure(clip=clip), "application/json")


def _clip_media(request, clip_id: int, ensure, content_type: str):
    """Serve what `ensure(clip)` computed from the clip's audio and keeps in storage.

    Behind the rater lock like the clip's audio (a rater of an active campaign on the clip's dataset gets 403):
    spectrogram and waveform show the same sound by another route.
    """
    clip = get_object_or_404(Clip, pk=clip_id)
    dataset_visible_check(request.user, clip.dataset_id)
    if not clip.audio:
        raise Http404("This clip has no audio")
    try:
        name = ensure(clip)
    except FileNotFoundError:
        raise Http404("The audio file of this clip is missing from storage") from None
    except Exception as error:  # undecodable stored audio: say so rather than a 500
        raise Http404(f"Nothing to show for this clip's audio ({type(error).__name__})") from None
    storage = clip.audio.storage
    if settings.USES_S3_STORAGE:
        response = HttpResponseRedirect(storage.url(name))
        add_never_cache_headers(response)
        return response
    response = FileResponse(storage.open(name, "rb"), content_type=content_type)
    # The page asks for ?v=<audio sha256 prefix>: a new audio file gets a new URL.
    response["Cache-Control"] = "private, max-age=86400"
    return response
