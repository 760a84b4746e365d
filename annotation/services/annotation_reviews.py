"""Review into gold: a reviewer compares the submitted annotations of a clip, edits one gold annotation
(a versioned draft, like the annotators'), publishes it, or sends a submission back with a comment.

Nobody reviews a clip they annotated themselves (in this campaign or outside it); campaigns that list
reviewers admit only those (and admins).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from accounts.roles import ADMIN, REVIEWER, user_has_role, user_roles
from annotation.models import AnnotationCampaign, AnnotationReview, AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import clip_still_schedulable_to
from annotation.services.annotation_checks import ERROR, Check
from annotation.services.annotation_drafts import (
    DraftConflictError,
    SavedDraft,
    draft_save_versioned,
    draft_validate,
    empty_draft,
)
from annotation.services.annotation_tasks import checked_graph, draft_checks_for
from annotation.services.expert_annotations import gold_annotation_publish
from annotation.services.gold_duplicates import gold_duplicate_checks
from corpus.models import Clip

TaskStatus = AnnotationTask.Status


class ReviewDeniedError(Exception):
    """The user may not review this clip (or campaign); the message says why."""


def campaign_review_denial(*, campaign: AnnotationCampaign, user: AbstractBaseUser) -> str | None:
    """Why `user` may not review in `campaign`, or None."""
    if ADMIN in user_roles(user):
        return None
    if not user_has_role(user, REVIEWER):
        return "only reviewers review annotations"
    if campaign.reviewers.exists() and not campaign.reviewers.filter(pk=user.pk).exists():
        return f"you are not a reviewer of campaign {campaign.name}"
    return None


def clip_review_denial(*, campaign: AnnotationCampaign, clip: Clip, user: AbstractBaseUser) -> str | None:
    """Why `user` may not review `clip` in `campaign` (not a reviewer here, or annotated it), or None."""
    denial = campaign_review_denial(campaign=campaign, user=user)
    if denial:
        return denial
    if not campaign.clips.filter(pk=clip.pk).exists():
        return f"clip {clip.pk} is not in campaign {campaign.name}"
    if annotated_by(clip=clip, user=user, campaign=campaign):
        return "you annotated this clip yourself, so someone else reviews it"
    if clip_still_schedulable_to(campaign=campaign, clip_id=clip.pk, user=user):
        return "this clip may still come to you to annotate: review it once its annotations are in"
    return None


def annotated_by(*, clip: Clip, user: AbstractBaseUser, campaign: AnnotationCampaign | None = None) -> bool:
    """Whether `user` annotated `clip` (a task in the campaign, or an own non-gold annotation anywhere)."""
    if campaign is not None and AnnotationTask.objects.filter(campaign=campaign, clip=clip, annotator=user).exists():
        return True
    own = ExpertAnnotation.objects.filter(clip=clip, annotator=user).exclude(
        status__in=[ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUPERSEDED]
    )
    return own.exists()


def _require(campaign: AnnotationCampaign, clip: Clip, user: AbstractBaseUser) -> None:
    denial = clip_review_denial(campaign=campaign, clip=clip, user=user)
    if denial:
        raise ReviewDeniedError(denial)


@transaction.atomic
def review_open(*, campaign: AnnotationCampaign, clip: Clip, reviewer: AbstractBaseUser) -> AnnotationReview:
    """The clip's review in the campaign (created with an empty gold draft on first opening)."""
    _require(campaign, clip, reviewer)
    review, _created = AnnotationReview.objects.get_or_create(
        campaign=campaign, clip=clip, defaults={"reviewer": reviewer, "draft": empty_draft()}
    )
    return review


def review_draft_save(
    *, review: AnnotationReview, reviewer: AbstractBaseUser, base_version: int, draft: dict
) -> SavedDraft:
    _require(review.campaign, review.clip, reviewer)
    clean = draft_validate(draft)

    def take_over(row: AnnotationReview) -> None:
        if row.reviewer_id != reviewer.pk:  # the last editor is the reviewer of record
            AnnotationReview.objects.filter(pk=row.pk).update(reviewer=reviewer)

    return draft_save_versioned(
        model=AnnotationReview, pk=review.pk, base_version=base_version, draft=clean, guard=take_over
    )


def clip_submissions(*, campaign: AnnotationCampaign, clip: Clip):
    """The clip's submitted tasks in the campaign (with their annotations), oldest first."""
    return (
        AnnotationTask.objects.filter(campaign=campaign, clip=clip, status=TaskStatus.SUBMITTED)
        .select_related("annotator", "annotation")
        .order_by("submitted_at", "pk")
    )


def review_checks(*, review: AnnotationReview, reviewer: AbstractBaseUser, draft: dict | None = None) -> list[Check]:
    """The checks publishing runs on `draft` (or the stored gold draft), gold duplicates included; nothing is saved."""
    _require(review.campaign, review.clip, reviewer)
    if draft is None:
        draft = AnnotationReview.objects.values_list("draft", flat=True).get(pk=review.pk)  # as stored now
    clean = draft_validate(draft)
    checks = [*draft_checks_for(draft=clean, clip=review.clip, gold=True), *gold_duplicate_checks(draft=clean)]
    return sorted(checks, key=lambda check: check.level != ERROR)


def review_publish(
    *, review: AnnotationReview, reviewer: AbstractBaseUser, base_version: int, confirm_warnings: bool = False
) -> ExpertAnnotation:
    """Publish the gold draft as the clip's gold annotation (the checks of submitting, clashing attributes and
    events that name one sound being errors; SubmitRefusedError)."""
    _require(review.campaign, review.clip, reviewer)
    with transaction.atomic():
        locked = AnnotationReview.objects.select_for_update().select_related("clip", "campaign").get(pk=review.pk)
        if locked.draft_version != base_version:
            raise DraftConflictError(current_version=locked.draft_version, base_version=base_version)
        events, relations = checked_graph(
            draft=locked.draft,
            clip=locked.clip,
            confirm_warnings=confirm_warnings,
            gold=True,
            more_checks=lambda clean: gold_duplicate_checks(draft=clean),
        )
        merged_from = [
            task.annotation for task in clip_submissions(campaign=locked.campaign, clip=locked.clip) if task.annotation
        ]
        gold = gold_annotation_publish(
            clip=locked.clip,
            reviewer=reviewer,
            campaign=locked.campaign,
            events=events,
            relations=relations,
            merged_from=merged_from,
            note=locked.draft.get("note", ""),
        )
        locked.gold = gold
        locked.reviewer = reviewer
        locked.status = AnnotationReview.Status.PUBLISHED
        locked.published_at = timezone.now()
        locked.save(update_fields=["gold", "reviewer", "status", "published_at", "updated_at"])
    return gold


@transaction.atomic
def annotation_task_return(*, task: AnnotationTask, reviewer: AbstractBaseUser, comment: str) -> AnnotationTask:
    """Send a submission back to its annotator with a comment they see in their queue."""
    _require(task.campaign, task.clip, reviewer)
    if not comment.strip():
        raise ReviewDeniedError("say what the annotator should change (the comment is empty)")
    locked = AnnotationTask.objects.select_for_update().get(pk=task.pk)
    if locked.status != TaskStatus.SUBMITTED:
        raise ReviewDeniedError(
            f"only a submitted annotation can be sent back; this one is {locked.get_status_display().lower()}"
        )
    locked.status = TaskStatus.RETURNED
    locked.review_comment = comment.strip()
    locked.returned_by = reviewer
    locked.save(update_fields=["status", "review_comment", "returned_by", "updated_at"])
    if locked.annotation_id:
        ExpertAnnotation.objects.filter(pk=locked.annotation_id, status=ExpertAnnotation.Status.SUBMITTED).update(
            status=ExpertAnnotation.Status.DRAFT, updated_at=timezone.now()
        )
    return locked
