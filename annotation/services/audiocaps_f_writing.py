"""Writing an AudioCaps-F import: the clips its keys name, the annotations, their events and relations.

Clip keys: AudioCaps-F's are "Y<youtube_id>.wav"; other datasets' clips are keyed by their file name or
external id as it came in ("34.wav", "kitchen 02.flac"). A key matches the dataset's clip whose file_name
is the key, else whose external_id is the key, else, for a "Y<id>.wav" key, whose external_id is <id> (as
the AudioCaps-Eval pairwise import creates them); a missing clip is created with the key as its file name
(and <id> as its external id for a "Y<id>.wav" key). The export (audiocaps_f_exporting.py) writes each clip
back under the key it came in with.
Attributes link to the tag library by case-insensitive, trimmed text (or the template they fill in); others
stay free text (tag=None); sources are marked listed when they are in the list of common sound sources.
Re-importing leaves an annotation whose events are identical untouched and replaces the events of
one that differs, so the final state never depends on how often the import ran.
"""

from django.utils import timezone

from annotation.models import EventAttribute, EventSource, EventSpan, ExpertAnnotation, SoundEvent, TemporalRelation
from annotation.services.audiocaps_f_parsing import ClipAnnotationSpec
from annotation.vocabulary import AttributeVocabulary, source_is_listed
from corpus.models import Clip, Dataset
from corpus.services.importing import ImportDataError, ImportSummary


def clips_ensure(dataset: Dataset, specs: list[ClipAnnotationSpec], summary: ImportSummary) -> dict[str, Clip]:
    """Clip per input key: by file_name = key, else external_id = key, else external_id = <id> of a
    "Y<id>.wav" key, else a new clip (see the module docstring)."""
    existing = list(Clip.objects.filter(dataset=dataset))
    by_external_id = {clip.external_id: clip for clip in existing}
    by_file_name = {clip.file_name: clip for clip in existing if clip.file_name}
    clips, new_clips, key_of_clip = {}, [], {}
    for spec in specs:
        clip = (
            by_file_name.get(spec.key)
            or by_external_id.get(spec.key)
            or (by_external_id.get(spec.youtube_id) if spec.youtube_id else None)
        )
        if clip is not None and id(clip) in key_of_clip:
            raise ImportDataError(
                f'{summary.source_name}: key "{spec.key}": same clip as key "{key_of_clip[id(clip)]}"'
            )
        if clip is None:
            external_id = spec.youtube_id or spec.key
            if external_id in by_external_id:  # "Yab.wav" when a clip "ab" with another file name exists
                raise ImportDataError(
                    f'{summary.source_name}: key "{spec.key}": clip "{external_id}" of dataset {dataset.name} '
                    f'has the file name "{by_external_id[external_id].file_name}"'
                )
            clip = Clip(dataset=dataset, external_id=external_id, file_name=spec.key)
            new_clips.append(clip)
            by_external_id[external_id] = clip
            by_file_name[spec.key] = clip
        clips[spec.key] = clip
        key_of_clip[id(clip)] = spec.key
    Clip.objects.bulk_create(new_clips)
    summary.add("clips", "created", len(new_clips))
    summary.add("clips", "unchanged", len(specs) - len(new_clips))
    return clips


def _stored_graphs(annotation_ids: list[int]) -> dict[int, tuple]:
    """annotation id -> (events, relations) as stored, in order; an event is (label, [(source text, listed)],
    [(attribute text, tag id)], spans), a relation (first label, second label, kind)."""
    events: dict[int, list[tuple]] = {pk: [] for pk in annotation_ids}
    relations: dict[int, list[tuple]] = {pk: [] for pk in annotation_ids}
    event_rows = SoundEvent.objects.filter(annotation_id__in=annotation_ids).order_by("annotation_id", "position")
    children: dict[str, dict[int, list[tuple]]] = {"sources": {}, "attributes": {}, "spans": {}}
    queries = {
        "sources": EventSource.objects.values_list("event_id", "text", "listed"),
        "attributes": EventAttribute.objects.values_list("event_id", "text", "tag_id"),
        "spans": EventSpan.objects.values_list("event_id", "onset_seconds", "offset_seconds"),
    }
    for kind, query in queries.items():
        for event_id, *values in query.filter(event__annotation_id__in=annotation_ids).order_by("event_id", "position"):
            children[kind].setdefault(event_id, []).append(tuple(values))
    for event in event_rows:
        events[event.annotation_id].append(
            (event.label, *(tuple(children[kind].get(event.pk, [])) for kind in ("sources", "attributes", "spans")))
        )
    for annotation_id, first, second, kind in (
        TemporalRelation.objects.filter(annotation_id__in=annotation_ids)
        .order_by("annotation_id", "pk")
        .values_list("annotation_id", "first_event__label", "second_event__label", "kind")
    ):
        relations[annotation_id].append((first, second, kind))
    return {pk: (tuple(events[pk]), tuple(relations[pk])) for pk in annotation_ids}


def _wanted_graph(spec: ClipAnnotationSpec, library: AttributeVocabulary) -> tuple:
    events = tuple(
        (
            e.label,
            tuple((text, source_is_listed(text)) for text in e.sources),
            tuple((text, library.tag_of(text)) for text in e.attributes),
            e.spans,
        )
        for e in spec.events
    )
    relations = tuple((e.label, other, kind) for e in spec.events for other, kind in e.relations)
    return events, relations


def annotations_ensure(
    specs, clips, annotator, library: AttributeVocabulary, summary: ImportSummary, status: str
) -> None:
    gold = ExpertAnnotation.Status.GOLD
    clip_ids = [clip.pk for clip in clips.values()]
    annotations = {
        a.clip_id: a
        for a in ExpertAnnotation.objects.filter(annotator=annotator, clip_id__in=clip_ids, campaign__isnull=True)
    }
    stored = _stored_graphs([a.pk for a in annotations.values()])

    new_annotations, status_changed, to_fill = [], [], []
    replaced_ids, unchanged, gold_kept = [], 0, 0
    for spec in specs:
        clip = clips[spec.key]
        wanted = _wanted_graph(spec, library)
        annotation = annotations.get(clip.pk)
        if annotation is None:
            annotation = ExpertAnnotation(clip=clip, annotator=annotator, status=status)
            new_annotations.append(annotation)
            to_fill.append((annotation, wanted))
            continue
        if annotation.status == gold and status != gold:
            gold_kept += 1  # an import of submissions never demotes a reference annotation
        elif annotation.status != status:
            annotation.status = status
            status_changed.append(annotation)
        if stored[annotation.pk] != wanted:
            replaced_ids.append(annotation.pk)
            to_fill.append((annotation, wanted))
        elif annotation not in status_changed:
            unchanged += 1

    if status == gold:
        # One gold annotation per clip: the imported one replaces any other.
        ExpertAnnotation.objects.filter(clip_id__in=clip_ids, status=gold).exclude(annotator=annotator).update(
            status=ExpertAnnotation.Status.SUPERSEDED, updated_at=timezone.now()
        )
    ExpertAnnotation.objects.bulk_create(new_annotations)
    for annotation in status_changed:
        annotation.save(update_fields=["status", "updated_at"])
    SoundEvent.objects.filter(annotation_id__in=replaced_ids).delete()
    summary.add("expert annotations", "created", len(new_annotations))
    summary.add("expert annotations", "updated", len({*replaced_ids, *(a.pk for a in status_changed)}))
    summary.add("expert annotations", "unchanged", unchanged)
    if gold_kept:
        summary.notes.append(f"{gold_kept} of these annotations are gold and were left gold")
    _events_create(to_fill, summary)
    # Events of annotations left as they were.
    replaced = set(replaced_ids)
    kept_events = [event for pk, (events, _) in stored.items() if pk not in replaced for event in events]
    summary.add("events", "unchanged", len(kept_events))
    summary.add("event sources", "unchanged", sum(len(event[1]) for event in kept_events))
    summary.add("event attributes", "unchanged", sum(len(event[2]) for event in kept_events))


def attribute_counts(specs: list[ClipAnnotationSpec], library: AttributeVocabulary, summary: ImportSummary) -> None:
    free = [text for spec in specs for e in spec.events for text in e.attributes if library.tag_of(text) is None]
    summary.extra["attributes in the tag library"] = sum(len(e.attributes) for s in specs for e in s.events) - len(free)
    summary.extra["free attributes (not in the tag library)"] = len(free)
    summary.extra["distinct free attribute texts"] = len({text.strip().casefold() for text in free})


def _events_create(to_fill: list[tuple[ExpertAnnotation, tuple]], summary: ImportSummary) -> None:
    events, children, relations = [], [], []
    for annotation, (wanted_events, wanted_relations) in to_fill:
        by_label = {}
        for position, (label, sources, attributes, spans) in enumerate(wanted_events):
            event = SoundEvent(annotation=annotation, label=label, position=position)
            by_label[label] = event
            events.append(event)
            children.append((event, sources, attributes, spans))
        relations.extend(
            (annotation, by_label[first], by_label[second], kind) for first, second, kind in wanted_relations
        )
    SoundEvent.objects.bulk_create(events)
    if any(event.pk is None for event in events):
        raise RuntimeError("this database does not return primary keys from bulk inserts")
    sources = [
        EventSource(event=event, text=text, listed=listed, position=i)
        for event, pairs, _, _ in children
        for i, (text, listed) in enumerate(pairs)
    ]
    attributes = [
        EventAttribute(event=event, text=text, tag_id=tag_id, position=i)
        for event, _, pairs, _ in children
        for i, (text, tag_id) in enumerate(pairs)
    ]
    spans = [
        EventSpan(event=event, position=i, onset_seconds=onset, offset_seconds=offset)
        for event, _, _, event_spans in children
        for i, (onset, offset) in enumerate(event_spans)
    ]
    EventSource.objects.bulk_create(sources)
    EventAttribute.objects.bulk_create(attributes)
    EventSpan.objects.bulk_create(spans)
    TemporalRelation.objects.bulk_create(
        TemporalRelation(annotation=annotation, first_event=first, second_event=second, kind=kind)
        for annotation, first, second, kind in relations
    )
    summary.add("events", "created", len(events))
    summary.add("event sources", "created", len(sources))
    summary.add("event attributes", "created", len(attributes))
    if spans:
        summary.add("event spans", "created", len(spans))
    if relations:
        summary.add("event relations", "created", len(relations))
