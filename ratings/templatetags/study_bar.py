"""The bar on every page of a crowd participant: the time left of the study's time limit and a way to leave.

Rendered from the site's layout, so no participant page can be without it (the study's own pages, the headphone
screens and the rating items alike). The time left is the server's; the page's script only counts it down.
"""

from django import template
from django.conf import settings
from django.urls import reverse

from ratings.models_study import Participant
from ratings.services.participants import participant_for_user, participant_seconds_left

register = template.Library()


@register.inclusion_tag("ratings/study/_bar.html", takes_context=True)
def study_bar(context) -> dict:
    # The page's own participant when it has one (it may have just changed stage), else the signed-in user's.
    participant = context.get("participant")
    if not isinstance(participant, Participant):
        participant = participant_for_user(context.get("user"))
    if participant is None or participant.stage == Participant.Stage.FINISHED:
        return {"participant": None}
    slug = participant.study.slug
    seconds_left = participant_seconds_left(participant=participant)
    return {
        "participant": participant,
        "seconds_left": seconds_left,
        "time_label": f"{seconds_left // 60}:{seconds_left % 60:02d}",
        # Not on MTurk's arrival page, which may be inside MTurk's frame where the session cookie can be refused
        # (the link would find no participant); nothing is reserved yet there: the worker returns the HIT on MTurk.
        "leave_url": "" if context.get("enter_url") else reverse("study:leave", kwargs={"slug": slug}),
        # Where the page goes when the time is up: the study's own page of the stage, which ends the participation.
        "expired_url": reverse("study:items", kwargs={"slug": slug}),
        # The heartbeat (ratings/views_study_alive.py): sent while the participant uses the page, not while it
        # only stays open.
        "alive_url": reverse("study:alive", kwargs={"slug": slug}) if settings.STUDY_HEARTBEAT_SECONDS else "",
        "heartbeat_seconds": settings.STUDY_HEARTBEAT_SECONDS,
        "idle_seconds": settings.STUDY_INACTIVE_MINUTES * 60,
        "csrf_token": context.get("csrf_token", ""),
    }
