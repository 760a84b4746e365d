"""Saving an annotator's AudioCaps-F graph of a clip and moving it through review.

The graph is saved whole (events with their sources and attributes, relations by
event label) because annotators edit it as one form; replacing it keeps positions
dense and avoids partial merges.
"""

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from accounts.roles import ADMIN, user_has_role
from annotation.models import EventAttribute, EventSource, EventSpan, ExpertAnnotation, SoundEvent, TemporalRelation
from annotation.selectors import attribute_vocabulary
from annotation.vocabulary import source_is_listed
from common.time_relations import relations_derive, time_conflict
from corpus.models import Clip

Status = ExpertAnnotation.Status

# What a reviewer may do: accept a submission as gold, send it back, or revoke gold.
REVIEWER_TRANSITIONS = {
    (Status.SUBMITTED, Status.GOLD),
    (Status.SUBMITTED, Status.DRAFT),
    (Status.GOLD, Status.SUBMITTED),
}


class ExpertAnnotationError(Exception):
    """The annotation cannot be saved or moved as asked; the message says why."""


class ExpertAnnotationPermissionError(ExpertAnnotationError):
    """The annotation is not the caller's to change (the message says whose it is to change)."""


def _non_blank(texts: Sequence[str]) -> list[str]:
    return [text.strip() for text in texts if text.strip()]


def _check_graph(events: Sequence[dict], relations: Sequence[dict]) -> None:
    labels = [event["label"].strip() for event in events]
    for index, label in enumerate(labels):
        if not label:
            raise ExpertAnnotationError(f"events[{index}]: the label is empty")
        if labels.index(label) != index:
            raise ExpertAnnotationError(f"events[{index}]: the label {label!r} is used twice")
    seen_pairs = set()
    for index, relation in enumerate(relations):
        first, second = relation["first_event"].strip(), relation["second_event"].strip()
        for key, label in (("first_event", first), ("second_event", second)):
            if label not in labels:
                raise ExpertAnnotationError(f"relations[{index}].{key}: no event is labelled {label!r}")
        if first == second:
            raise ExpertAnnotationError(f"relations[{index}]: an event cannot be related to itself")
        if frozenset((first, second)) in seen_pairs:
            raise ExpertAnnotationError(f"relations[{index}]: {first!r} and {second!r} are already related")
        seen_pairs.add(frozenset((first, second)))
    spans = {event["label"].strip(): event.get("spans") or [] for event in events}
    stated = ((r["first_event"].strip(), r["second_event"].strip(), r["kind"]) for r in relations)
    report = relations_derive(stated, spans)
    if report.contradictions:
        index, message = report.contradictions[0]
        raise ExpertAnnotationError(f"relations[{index}]: contradiction: {message}")
    for index, relation in enumerate(relations):
        first, second = relation["first_event"].strip(), relation["second_event"].strip()
        conflict = time_conflict(relation["kind"], spans[first], spans[second], (repr(first), repr(second)))
        if conflict is not None:
            raise ExpertAnnotationError(f"relations[{index}]: against the time spans: {conflict.message}")


def _graph_write(annotation: ExpertAnnotation, events: Sequence[dict], relations: Sequence[dict]) -> None:
    """Replace the annotation's events (with sources, attributes, spans) and relations."""
    annotation.events.all().delete()  # cascades to sources, attributes, spans and relations
    library = attribute_vocabulary()
    event_by_label = {}
    for event_position, event_data in enumerate(events):
        event = SoundEvent.objects.create(
            annotation=annotation, label=event_data["label"].strip(), position=event_position
        )
        event_by_label[event.label] = event
        EventSource.objects.bulk_create(
            EventSource(event=event, text=text, position=position, listed=source_is_listed(text))
            for position, text in enumerate(_non_blank(event_data.get("sources", [])))
        )
        EventAttribute.objects.bulk_create(
            EventAttribute(event=event, text=text, position=position, tag_id=library.tag_of(text))
            for position, text in enumerate(_non_blank(event_data.get("attributes", [])))
        )
        EventSpan.objects.bulk_create(
            EventSpan(event=event, position=position, onset_seconds=onset, offset_seconds=offset)
            for position, (onset, offset) in enumerate(sorted(event_data.get("spans") or []))
        )
    TemporalRelation.objects.bulk_create(
        TemporalRelation(
            annotation=annotation,
            first_event=event_by_label[relation["first_event"].strip()],
            second_event=event_by_label[relation["second_event"].strip()],
            kind=relation["kind"],
        )
        for relation in relations
    )


@transaction.atomic
def expert_annotation_save(
    *,
    clip: Clip,
    annotator: AbstractBaseUser,
    events: Sequence[dict],
    relations: Sequence[dict] = (),
    status: str = Status.DRAFT,
    campaign=None,
    note: str = "",
) -> ExpertAnnotation:
    """Create or replace `annotator`'s graph of `clip` (in `campaign`, or outside any campaign).

    `events`: [{"label": str, "sources": [str], "attributes": [str], "spans": [[onset, offset], ...]}];
    `relations`: [{"first_event": label, "second_event": label, "kind": before/after/simultaneous}].
    Attributes that match a library tag (case-insensitively, or filling in a template) are linked to it, others
    are kept as free text; sources are marked listed when they are in the list of common sound sources.
    A gold annotation is frozen: a reviewer must revoke gold before it can change.
    """
    if status not in (Status.DRAFT, Status.SUBMITTED):
        raise ExpertAnnotationError(f"status {status!r}: annotators can only save a draft or submit")
    _check_graph(events, relations)
    annotation, _created = ExpertAnnotation.objects.select_for_update().get_or_create(
        clip=clip, annotator=annotator, campaign=campaign
    )
    if annotation.status in (Status.GOLD, Status.SUPERSEDED):
        raise ExpertAnnotationError(
            f"annotation {annotation.pk} is {annotation.status}; a reviewer must revoke gold before it changes"
        )
    _graph_write(annotation, events, relations)
    annotation.status = status
    annotation.note = note.strip()
    annotation.save(update_fields=["status", "note", "updated_at"])
    return annotation


def gold_supersede_others(*, clip: Clip, keep: ExpertAnnotation | None = None) -> int:
    """Mark the clip's current gold annotation (other than `keep`) superseded; call inside a transaction."""
    others = ExpertAnnotation.objects.select_for_update().filter(clip=clip, status=Status.GOLD)
    if keep is not None:
        others = others.exclude(pk=keep.pk)
    return others.update(status=Status.SUPERSEDED, updated_at=timezone.now())


@transaction.atomic
def gold_annotation_publish(
    *,
    clip: Clip,
    reviewer: AbstractBaseUser,
    campaign,
    events: Sequence[dict],
    relations: Sequence[dict],
    merged_from: Sequence[ExpertAnnotation] = (),
    note: str = "",
) -> ExpertAnnotation:
    """Write the reviewer's graph of `clip` as its one gold annotation (the previous gold is superseded)."""
    _check_graph(events, relations)
    annotation, _created = ExpertAnnotation.objects.select_for_update().get_or_create(
        clip=clip, annotator=reviewer, campaign=campaign
    )
    gold_supersede_others(clip=clip, keep=annotation)
    _graph_write(annotation, events, relations)
    annotation.status = Status.GOLD
    annotation.note = note.strip()
    annotation.save(update_fields=["status", "note", "updated_at"])
    annotation.merged_from.set(merged_from)
    return annotation


@transaction.atomic
def expert_annotation_set_status(
    *, annotation: ExpertAnnotation, status: str, is_admin: bool = False
) -> ExpertAnnotation:
    """Review step: reviewers follow REVIEWER_TRANSITIONS; admins may set any status.

    Making an annotation gold supersedes the clip's previous gold annotation (one gold per clip).
    """
    if status not in Status.values:
        raise ExpertAnnotationError(f"status {status!r} is not one of {', '.join(Status.values)}")
    locked = ExpertAnnotation.objects.select_for_update().get(pk=annotation.pk)
    if locked.status == status:
        return locked
    if not is_admin and (locked.status, status) not in REVIEWER_TRANSITIONS:
        raise ExpertAnnotationError(
            f"annotation {locked.pk}: a reviewer cannot move it from {locked.status} to {status}"
        )
    if status == Status.GOLD:
        gold_supersede_others(clip=locked.clip, keep=locked)
    locked.status = status
    locked.save(update_fields=["status", "updated_at"])
    return locked


def expert_annotation_outside_campaign_check(*, annotation: ExpertAnnotation) -> None:
    """Work made in an annotation campaign changes only through its task (versioned drafts, checks, review)."""
    if annotation.campaign_id is not None:
        raise ExpertAnnotationError(
            f"annotation {annotation.pk} belongs to an annotation campaign: edit it in the workspace "
            "(/api/annotation-tasks/), not here"
        )


@transaction.atomic
def expert_annotation_delete(*, annotation: ExpertAnnotation, user: AbstractBaseUser) -> None:
    """Delete an annotation: its annotator may while it is not gold and not a campaign's work; an admin always.

    Gold is kept from annotators because it is what the dataset exports and the metrics score against.
    """
    is_admin = user_has_role(user, ADMIN)
    if annotation.annotator_id != user.pk and not is_admin:
        raise ExpertAnnotationPermissionError("only the annotator or an admin can delete an annotation")
    if not is_admin:
        if annotation.status == Status.GOLD:
            raise ExpertAnnotationError(f"annotation {annotation.pk} is gold and cannot be deleted")
        expert_annotation_outside_campaign_check(annotation=annotation)
    annotation.delete()
