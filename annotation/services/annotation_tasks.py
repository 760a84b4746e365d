"""An annotator's work on one clip: autosaving the draft, the automated checks, submitting.

A submitted task is written out as the annotator's ExpertAnnotation of the clip in the campaign
(status submitted); the draft stays on the task, so a task returned by a reviewer reopens exactly
what was submitted.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.models import AnnotationTask, ExpertAnnotation
from annotation.selectors import attribute_vocabulary, stored_tag_facts
from annotation.services.annotation_checks import ERROR, WARNING, Check, draft_checks, has_errors
from annotation.services.annotation_drafts import (
    DraftConflictError,
    SavedDraft,
    draft_save_versioned,
    draft_to_graph,
    draft_validate,
)
from annotation.services.expert_annotations import expert_annotation_save

TaskStatus = AnnotationTask.Status
EDITABLE = (TaskStatus.ASSIGNED, TaskStatus.RETURNED)


class TaskLockedError(Exception):
    """The task cannot change any more (submitted, skipped) or belongs to someone else."""


class SubmitRefusedError(Exception):
    """Automated checks found errors, or warnings the caller did not confirm; `checks` lists them all."""

    def __init__(self, checks: list[Check]) -> None:
        self.checks = checks
        self.needs_confirmation_only = not has_errors(checks)
        what = "warnings to confirm" if self.needs_confirmation_only else "errors to fix"
        super().__init__(f"the annotation has {what}")


def _editable_guard(annotator: AbstractBaseUser):
    def guard(task: AnnotationTask) -> None:
        if task.annotator_id != annotator.pk:
            raise TaskLockedError("this clip is assigned to someone else")
        if task.status not in EDITABLE:
            raise TaskLockedError(f"this clip is {task.get_status_display().lower()}; it can no longer be edited")

    return guard


def task_draft_save(*, task: AnnotationTask, annotator: AbstractBaseUser, base_version: int, draft: dict) -> SavedDraft:
    """Validate and store the annotator's draft (DraftInvalidError, DraftConflictError or TaskLockedError otherwise)."""
    clean = draft_validate(draft)
    return draft_save_versioned(
        model=AnnotationTask, pk=task.pk, base_version=base_version, draft=clean, guard=_editable_guard(annotator)
    )


def task_checks(*, task: AnnotationTask, draft: dict | None = None) -> list[Check]:
    """The automated checks of `draft` (validated here), or of the stored draft."""
    clean = draft_validate(task.draft if draft is None else draft)
    return draft_checks(
        draft=clean,
        library=attribute_vocabulary(),
        clip_duration=task.clip.duration_seconds,
        tag_facts=stored_tag_facts(),
    )


def draft_checks_for(*, draft: dict, clip, gold: bool = False) -> list[Check]:
    """The automated checks of a validated draft of `clip` (gold: see draft_checks)."""
    return draft_checks(
        draft=draft,
        library=attribute_vocabulary(),
        clip_duration=clip.duration_seconds,
        tag_facts=stored_tag_facts(),
        gold=gold,
    )


def checked_graph(
    *, draft: dict, clip, confirm_warnings: bool, gold: bool = False, more_checks=None
) -> tuple[list[dict], list[dict]]:
    """(events, relations) of a stored draft that passes the automated checks (SubmitRefusedError otherwise:
    errors always, warnings unless confirmed). Shared by submitting and by publishing gold (`gold`: attributes
    that clash are then an error, the reviewer keeps one). `more_checks(validated draft)` adds checks (gold
    duplicates)."""
    clean = draft_validate(draft)
    checks = draft_checks_for(draft=clean, clip=clip, gold=gold)
    if more_checks is not None:
        checks = sorted([*checks, *more_checks(clean)], key=lambda check: check.level != ERROR)
    if has_errors(checks) or (not confirm_warnings and any(check.level == WARNING for check in checks)):
        raise SubmitRefusedError(checks)
    return draft_to_graph(clean)


def task_submit(
    *, task: AnnotationTask, annotator: AbstractBaseUser, base_version: int, confirm_warnings: bool = False
) -> AnnotationTask:
    """Submit the stored draft as it is at `base_version` (what the annotator saw).

    Errors refuse; warnings refuse unless confirmed (SubmitRefusedError lists them). A returned task may be
    submitted again: its annotation is replaced and goes back to the reviewers.
    """
    with transaction.atomic():
        locked = AnnotationTask.objects.select_for_update().select_related("clip", "campaign").get(pk=task.pk)
        _editable_guard(annotator)(locked)
        if locked.draft_version != base_version:
            raise DraftConflictError(current_version=locked.draft_version, base_version=base_version)
        events, relations = checked_graph(draft=locked.draft, clip=locked.clip, confirm_warnings=confirm_warnings)
        annotation = expert_annotation_save(
            clip=locked.clip,
            annotator=annotator,
            events=events,
            relations=relations,
            status=ExpertAnnotation.Status.SUBMITTED,
            campaign=locked.campaign,
            note=locked.draft.get("note", ""),
        )
        locked.annotation = annotation
        locked.status = TaskStatus.SUBMITTED
        locked.submitted_at = timezone.now()
        locked.save(update_fields=["annotation", "status", "submitted_at", "updated_at"])
    return locked


__all__ = ["ERROR", "WARNING", "SubmitRefusedError", "TaskLockedError", "task_checks", "task_draft_save", "task_submit"]
