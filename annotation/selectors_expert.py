"""Who sees which expert annotations: the one rule every reader of them (the API, its lists and its detail
routes) applies."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch, Q, QuerySet

from accounts.roles import ADMIN, REVIEWER, user_has_role
from annotation.models import AnnotationTask, EventAttribute, ExpertAnnotation, SoundEvent, TemporalRelation
from annotation.services.annotation_campaigns import clips_still_schedulable_to


def expert_annotations_with_graph() -> QuerySet[ExpertAnnotation]:
    """Expert annotations with their annotator, events (sources, spans, attributes in order) and relations."""
    attributes = EventAttribute.objects.select_related("tag").order_by("position")
    events = SoundEvent.objects.prefetch_related("sources", "spans", Prefetch("attributes", queryset=attributes))
    relations = TemporalRelation.objects.select_related("first_event", "second_event").order_by("pk")
    return ExpertAnnotation.objects.select_related("annotator").prefetch_related(
        Prefetch("events", queryset=events.order_by("position")), Prefetch("relations", queryset=relations)
    )


def expert_annotations_visible_to(*, user: AbstractBaseUser) -> QuerySet[ExpertAnnotation]:
    """The expert annotations `user` may read (with their graph): admins all; everyone else their own, and
    reviewers also others' submitted and gold ones (see `_visible_annotations`)."""
    queryset = expert_annotations_with_graph()
    if user_has_role(user, ADMIN):
        return queryset
    return queryset.filter(_visible_annotations(user)).distinct()


def _visible_annotations(user: AbstractBaseUser) -> Q:
    """Everyone sees their own annotations. Reviewers also see others' submitted and gold ones, except of
    clips they annotate themselves (blind until review) and of campaigns that list other reviewers."""
    own = Q(annotator=user)
    if not user_has_role(user, REVIEWER):
        return own
    own_clips = (
        ExpertAnnotation.objects.filter(annotator=user)
        .exclude(status__in=[ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUPERSEDED])
        .values("clip_id")
    )
    tasks = AnnotationTask.objects.filter(annotator=user).values("clip_id")
    reviewable = Q(campaign__isnull=True) | Q(campaign__reviewers=user) | Q(campaign__reviewers__isnull=True)
    others = (
        Q(status__in=[ExpertAnnotation.Status.SUBMITTED, ExpertAnnotation.Status.GOLD])
        & ~Q(clip_id__in=own_clips)
        & ~Q(clip_id__in=tasks)
        & reviewable
    )
    # A reviewer who also annotates in a campaign sees none of its submissions of a clip that may still come
    # to them.
    for campaign_id, clip_ids in clips_still_schedulable_to(user=user).items():
        if clip_ids:
            others &= ~Q(campaign_id=campaign_id, clip_id__in=clip_ids, status=ExpertAnnotation.Status.SUBMITTED)
    return own | others
