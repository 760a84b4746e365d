"""Annotation campaigns and the annotators' queue.

The scheduler hands an annotator the next clip when they ask for one:
- balanced: the clip with the fewest annotations under way or done (assigned, submitted, returned),
  so every clip collects `annotations_per_clip` before any gets more, and none gets more than that;
- never the same clip twice to one annotator (also not after skipping it), and never a clip whose review
  has started to someone who may review in the campaign (they may have seen the others' work there);
- in the annotator's own random order (a permutation seeded by the campaign seed and the annotator),
  among the clips that are equally short of annotations;
- an annotator with unfinished work (in progress, or returned by a reviewer) gets that back first.

Assignment locks the campaign row, so two annotators pressing "next" at the same moment are served one
after the other and cannot both take a clip's last open slot.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When

from accounts.roles import ANNOTATOR, REVIEWER, user_has_role
from annotation.models import AnnotationCampaign, AnnotationReview, AnnotationTask
from annotation.services.annotation_drafts import empty_draft
from corpus.models import Clip, Dataset

TaskStatus = AnnotationTask.Status
#: statuses that hold one of a clip's N annotation slots
COUNTED = (TaskStatus.ASSIGNED, TaskStatus.SUBMITTED, TaskStatus.RETURNED)
OPEN = (TaskStatus.ASSIGNED, TaskStatus.RETURNED)


class CampaignError(ValueError):
    """The campaign or queue request cannot be carried out; the message says why (and names the field)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@transaction.atomic
def annotation_campaign_create(
    *,
    name: str,
    dataset: Dataset,
    clips: Sequence[Clip],
    annotators: Sequence[AbstractBaseUser],
    reviewers: Sequence[AbstractBaseUser] = (),
    annotations_per_clip: int = 3,
    seed: int = 0,
    instructions: str = "",
    created_by: AbstractBaseUser | None = None,
) -> AnnotationCampaign:
    if AnnotationCampaign.objects.filter(name=name).exists():
        raise CampaignError(f'a campaign named "{name}" already exists', "name")
    if annotations_per_clip < 1:
        raise CampaignError("annotations per clip must be at least 1", "annotations_per_clip")
    if not clips:
        raise CampaignError("choose at least one clip", "clips")
    foreign = [clip for clip in clips if clip.dataset_id != dataset.pk]
    if foreign:
        raise CampaignError(f"clip {foreign[0]} is not in dataset {dataset.name}", "clips")
    not_annotators = [user.username for user in annotators if not user_has_role(user, ANNOTATOR)]
    if not_annotators:
        raise CampaignError(f"not annotators: {', '.join(not_annotators)}", "annotators")
    not_reviewers = [user.username for user in reviewers if not user_has_role(user, REVIEWER)]
    if not_reviewers:
        raise CampaignError(f"not reviewers: {', '.join(not_reviewers)}", "reviewers")
    if len(set(annotators)) < annotations_per_clip:
        raise CampaignError(
            f"{annotations_per_clip} independent annotations per clip need at least {annotations_per_clip} "
            f"annotators; {len(set(annotators))} chosen",
            "annotators",
        )
    campaign = AnnotationCampaign.objects.create(
        name=name,
        dataset=dataset,
        annotations_per_clip=annotations_per_clip,
        seed=seed,
        instructions=instructions,
        created_by=created_by,
    )
    campaign.clips.set(clips)
    campaign.annotators.set(annotators)
    campaign.reviewers.set(reviewers)
    return campaign


def annotator_clip_order(*, campaign: AnnotationCampaign, annotator_id: int, clip_ids: Iterable[int]) -> list[int]:
    """The annotator's own random order of the clips: the same every time for this campaign seed."""
    ordered = sorted(clip_ids)
    random.Random(f"{campaign.seed}:{campaign.pk}:{annotator_id}").shuffle(ordered)
    return ordered


def annotation_task_next(*, campaign: AnnotationCampaign, annotator: AbstractBaseUser) -> AnnotationTask | None:
    """The annotator's unfinished task, else a newly scheduled clip; None when nothing is left for them."""
    if not campaign.is_active:
        raise CampaignError(f"campaign {campaign.name} is closed")
    if not campaign.annotators.filter(pk=annotator.pk).exists():
        raise CampaignError(f"{annotator} is not an annotator of campaign {campaign.name}")
    with transaction.atomic():
        # One assignment at a time per campaign: the count below stays true until this transaction ends.
        AnnotationCampaign.objects.select_for_update().only("pk").get(pk=campaign.pk)
        unfinished = _unfinished_task(campaign, annotator)
        if unfinished is not None:
            return unfinished
        clip_id = _next_clip_id(campaign, annotator)
        if clip_id is None:
            return None
        try:
            with transaction.atomic():
                return AnnotationTask.objects.create(
                    campaign=campaign, clip_id=clip_id, annotator=annotator, draft=empty_draft()
                )
        except IntegrityError:  # a database without row locks (SQLite) raced us; the constraint held
            return _unfinished_task(campaign, annotator)


def _unfinished_task(campaign: AnnotationCampaign, annotator: AbstractBaseUser) -> AnnotationTask | None:
    tasks = AnnotationTask.objects.filter(campaign=campaign, annotator=annotator, status__in=OPEN)
    # Work a reviewer sent back comes first, then the oldest task in progress.
    returned_first = Case(When(status=TaskStatus.RETURNED, then=Value(0)), default=Value(1))
    return tasks.order_by(returned_first, "created_at", "pk").first()


def _next_clip_id(campaign: AnnotationCampaign, annotator: AbstractBaseUser) -> int | None:
    clip_ids = list(campaign.clips.values_list("pk", flat=True))
    counts = Counter(
        AnnotationTask.objects.filter(campaign=campaign, status__in=COUNTED).values_list("clip_id", flat=True)
    )
    had = set(AnnotationTask.objects.filter(campaign=campaign, annotator=annotator).values_list("clip_id", flat=True))
    if _may_review(campaign, annotator):
        had |= set(AnnotationReview.objects.filter(campaign=campaign).values_list("clip_id", flat=True))
    open_clips = [pk for pk in clip_ids if counts[pk] < campaign.annotations_per_clip and pk not in had]
    if not open_clips:
        return None
    fewest = min(counts[pk] for pk in open_clips)
    candidates = {pk for pk in open_clips if counts[pk] == fewest}
    order = annotator_clip_order(campaign=campaign, annotator_id=annotator.pk, clip_ids=clip_ids)
    return next(pk for pk in order if pk in candidates)


def _may_review(campaign: AnnotationCampaign, user: AbstractBaseUser) -> bool:
    """Whether `user` could open this campaign's review pages (campaign reviewers, any reviewer when the
    campaign names none, admins): such a user is never scheduled a clip whose submissions they may have seen."""
    if user.is_staff or user.is_superuser:
        return True
    if not user_has_role(user, REVIEWER):
        return False
    return not campaign.reviewers.exists() or campaign.reviewers.filter(pk=user.pk).exists()


def clip_still_schedulable_to(*, campaign: AnnotationCampaign, clip_id: int, user: AbstractBaseUser) -> bool:
    """Whether "next clip" could still give `user` this clip (an annotator of the campaign who has not had it,
    and the clip has an open slot): such a user must not see the clip's submissions yet."""
    if not campaign.annotators.filter(pk=user.pk).exists():
        return False
    if AnnotationTask.objects.filter(campaign=campaign, clip_id=clip_id, annotator=user).exists():
        return False
    held = AnnotationTask.objects.filter(campaign=campaign, clip_id=clip_id, status__in=COUNTED).count()
    return held < campaign.annotations_per_clip


def clips_still_schedulable_to(*, user: AbstractBaseUser) -> dict[int, set[int]]:
    """{campaign id: clip ids} that "next clip" could still give `user` in the active campaigns they annotate."""
    open_clips: dict[int, set[int]] = {}
    for campaign in AnnotationCampaign.objects.filter(annotators=user, is_active=True):
        held = Counter(
            AnnotationTask.objects.filter(campaign=campaign, status__in=COUNTED).values_list("clip_id", flat=True)
        )
        had = set(AnnotationTask.objects.filter(campaign=campaign, annotator=user).values_list("clip_id", flat=True))
        clip_ids = campaign.clips.values_list("pk", flat=True)
        open_clips[campaign.pk] = {pk for pk in clip_ids if pk not in had and held[pk] < campaign.annotations_per_clip}
    return open_clips


@transaction.atomic
def annotation_task_skip(*, task: AnnotationTask, reason: str, comment: str = "") -> AnnotationTask:
    """The annotator cannot annotate this clip (bad audio, silence, ...): the slot goes to someone else."""
    if reason not in AnnotationTask.SkipReason.values:
        raise CampaignError(f"reason must be one of {', '.join(AnnotationTask.SkipReason.values)}", "reason")
    if reason == AnnotationTask.SkipReason.OTHER and not comment.strip():
        raise CampaignError('say why in a comment when the reason is "other"', "comment")
    locked = AnnotationTask.objects.select_for_update().get(pk=task.pk)
    if locked.status != TaskStatus.ASSIGNED:
        raise CampaignError(
            f"only a clip in progress can be skipped; this one is {locked.get_status_display().lower()}"
        )
    locked.status = TaskStatus.SKIPPED
    locked.skip_reason = reason
    locked.skip_comment = comment.strip()
    locked.save(update_fields=["status", "skip_reason", "skip_comment", "updated_at"])
    return locked


@dataclass(frozen=True)
class AnnotatorProgress:
    done: int  # submitted (a returned task counts again once resubmitted)
    quota: int  # this annotator's share: ceil(clips x N / annotators), at most the clip count
    in_progress: int
    returned: int
    skipped: int
    available: bool  # whether "next" could still give them a new clip

    @property
    def share_done(self) -> bool:
        return self.done >= self.quota


def annotator_progress(*, campaign: AnnotationCampaign, annotator: AbstractBaseUser) -> AnnotatorProgress:
    statuses = Counter(
        AnnotationTask.objects.filter(campaign=campaign, annotator=annotator).values_list("status", flat=True)
    )
    clip_count = campaign.clips.count()
    annotator_count = max(1, campaign.annotators.count())
    quota = min(clip_count, math.ceil(clip_count * campaign.annotations_per_clip / annotator_count))
    return AnnotatorProgress(
        done=statuses[TaskStatus.SUBMITTED],
        quota=quota,
        in_progress=statuses[TaskStatus.ASSIGNED],
        returned=statuses[TaskStatus.RETURNED],
        skipped=statuses[TaskStatus.SKIPPED],
        available=_next_clip_id(campaign, annotator) is not None,
    )
