"""AudioCaps-F expert annotations: import as GOLD annotations (or as one annotator's submissions), export back.

Format: {"Y<youtube_id>.wav": {event: {"source": [...], "attr": [...]}, ...}, ...}. Events, sources
and attributes keep their order (position) and their exact text, so import -> export reproduces
the input. This product's annotations may also carry, per event, optional keys that readers of the
plain format ignore: "relations": {other event: "before" | "after" | "simultaneous"} (this event
<kind> the other one) and "spans": [[onset, offset], ...] in seconds (the event's occurrences; the
earlier single "onset" / "offset" pair still imports, as one span); they are written only when present,
so an annotation without them exports exactly as the released file.

Clip keys: AudioCaps-F's are "Y<youtube_id>.wav"; other datasets' clips are keyed by their file name or
external id as it came in ("34.wav", "kitchen 02.flac"). A key matches the dataset's clip whose file_name
is the key, else whose external_id is the key, else, for a "Y<id>.wav" key, whose external_id is <id> (as
the AudioCaps-Eval pairwise import creates them); a missing clip is created with the key as its file name
(and <id> as its external id for a "Y<id>.wav" key). The export writes each clip's file name, else its
external id when that names a file, else "Y<external id>.wav", so every imported key comes back as it was.
Attributes link to the tag library by case-insensitive, trimmed text (or the template they fill in); others
stay free text (tag=None); sources are marked listed when they are in the list of common sound sources.
Re-importing leaves an annotation whose events are identical untouched and replaces the events of
one that differs, so the final state never depends on how often the import ran.

The editor's checks run on the file: spans past a clip's end, overlapping occurrences and relations the spans
contradict are refused. Attributes of one event that the tag library calls opposites or different counts
(which gold publishing refuses) are flagged in the summary, naming clip, event and attributes; a gold import
keeps such clips gold by default, because the released AudioCaps-F gold holds them (75 clips with opposites,
1 with two counts) and import -> export must give the file back, or imports them as submitted annotations
(not gold, for a reviewer) with `conflicting_as="submitted"`. Two events of a clip that gold publishing calls
one sound (its gold_duplicate check) stop a gold import, or with `duplicates_as="submitted"` put the clip among
the submitted annotations, flagged; only clips whose events all have spans are checked, the others are
counted in the summary (audiocaps_f_checks.py says why).
"""

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import EventAttribute, EventSource, EventSpan, ExpertAnnotation, SoundEvent, TemporalRelation
from annotation.selectors import annotation_as_audiocaps_f, attribute_vocabulary, dataset_gold_annotations
from annotation.services.annotation_checks import CLIP_END_SLACK_SECONDS, overlapping_occurrences
from annotation.services.audiocaps_f_checks import (
    CONFLICTING_AS,
    DUPLICATES_AS,
    attribute_conflicts_flag,
    attribute_conflicts_note,
    duplicates_checked,
    gold_duplicates_flag,
    repeated_names_flag,
)
from annotation.vocabulary import AttributeVocabulary, source_is_listed
from common.structured_log import logged_import
from common.time_relations import relations_derive, time_conflict
from corpus.models import Clip, Dataset
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_get_existing,
    dataset_get_or_create,
    dataset_name_validate,
    import_account_get_or_create,
    json_file_load,
    json_nul_check,
    json_type_name,
    text_field_check,
)

EXPERT_USERNAME = "audiocaps-f-experts"
EXPERT_ROLE = "annotator"
CLIP_KEY = re.compile(r"^Y(?P<youtube_id>.+)\.wav$")
# An external id that already names a file is exported as it is (a workbook's "34.wav"), not as "Y34.wav.wav".
FILE_NAME = re.compile(r"\.(wav|flac|mp3|ogg|oga|opus|m4a|aac|aif|aiff|wma|webm)$", re.IGNORECASE)
EVENT_SHAPE = 'expected {"source": [...], "attr": [...]}'
EVENT_KEYS = {"source", "attr", "relations", "spans", "onset", "offset"}
MAX_SPANS = 100
LABEL_LENGTH = SoundEvent._meta.get_field("label").max_length
SOURCE_LENGTH = EventSource._meta.get_field("text").max_length
ATTRIBUTE_LENGTH = EventAttribute._meta.get_field("text").max_length
EXTERNAL_ID_LENGTH = Clip._meta.get_field("external_id").max_length


@dataclass(frozen=True)
class EventSpec:
    label: str
    sources: tuple[str, ...]
    attributes: tuple[str, ...]
    # (other event label, kind): this event <kind> the other one
    relations: tuple[tuple[str, str], ...] = ()
    # sorted pairs of seconds: onset, offset
    spans: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class ClipAnnotationSpec:
    key: str
    #: <id> of a "Y<id>.wav" key, else None
    youtube_id: str | None
    events: tuple[EventSpec, ...]


IMPORT_STATUSES = (ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUBMITTED)


def audiocaps_f_import_from_path(
    *,
    path: Path | str,
    dataset_name: str,
    annotator_username: str | None = None,
    status: str | None = None,
    replace_gold: bool = False,
    conflicting_as: str = ExpertAnnotation.Status.GOLD,
    duplicates_as: str = DUPLICATES_AS[0],
) -> ImportSummary:
    data, source_name = json_file_load(path=path)
    return audiocaps_f_import(
        data=data,
        dataset_name=dataset_name,
        source_name=source_name,
        annotator_username=annotator_username,
        status=status,
        replace_gold=replace_gold,
        conflicting_as=conflicting_as,
        duplicates_as=duplicates_as,
    )


@logged_import("audiocaps_f")
def audiocaps_f_import(
    *,
    data: Any,
    dataset_name: str,
    source_name: str,
    annotator_username: str | None = None,
    status: str | None = None,
    replace_gold: bool = False,
    conflicting_as: str = ExpertAnnotation.Status.GOLD,
    duplicates_as: str = DUPLICATES_AS[0],
) -> ImportSummary:
    """Import the file as gold annotations of the expert account (default), or as `annotator_username`'s
    annotations with `status` (default submitted when an annotator is named). A new gold annotation
    supersedes the clip's previous gold one (one gold per clip) only with `replace_gold`: otherwise a clip
    whose gold another account (a reviewer) published is refused, naming it, and nothing is written.
    `conflicting_as`: the status, in a gold import, of clips whose attributes the tag library contradicts
    (flagged in the summary either way). `duplicates_as`: "refuse" stops a gold import at a clip holding two
    events of one sound; "submitted" imports such clips as submitted, flagged in the summary."""
    dataset_name_validate(name=dataset_name)
    if status is None:
        status = ExpertAnnotation.Status.SUBMITTED if annotator_username else ExpertAnnotation.Status.GOLD
    if status not in IMPORT_STATUSES:
        raise ImportDataError(f'status "{status}": imported annotations are {" or ".join(IMPORT_STATUSES)}')
    if conflicting_as not in CONFLICTING_AS:
        raise ImportDataError(
            f'conflicting_as "{conflicting_as}": clips with conflicting attributes are imported as '
            f"{' or '.join(CONFLICTING_AS)}"
        )
    if duplicates_as not in DUPLICATES_AS:
        raise ImportDataError(
            f'duplicates_as "{duplicates_as}": clips with duplicate events are either refused ("refuse") or '
            'imported as "submitted"'
        )
    annotator = _named_annotator(annotator_username) if annotator_username else None
    specs = audiocaps_f_parse(data=data, source_name=source_name)
    summary = ImportSummary(source_name=source_name)
    # One transaction, the embedding included: a refused file leaves nothing, not even the phrase vectors' cache.
    with transaction.atomic():
        dataset = dataset_get_or_create(name=dataset_name, summary=summary)
        if annotator is None:
            annotator = import_account_get_or_create(
                username=EXPERT_USERNAME, role=EXPERT_ROLE, summary=summary, kind="annotator accounts"
            )
        clips = _clips_ensure(dataset, specs, summary)
        library = attribute_vocabulary()
        held_back = _checks_before_writing(
            specs,
            clips,
            library,
            summary,
            annotator=annotator,
            source_name=source_name,
            status=status,
            replace_gold=replace_gold,
            conflicting_as=conflicting_as,
            duplicates_as=duplicates_as,
        )
        for part_status, part in (
            (status, [spec for spec in specs if spec.key not in held_back]),
            (ExpertAnnotation.Status.SUBMITTED, [spec for spec in specs if spec.key in held_back]),
        ):
            if part:
                _annotations_ensure(
                    part, {spec.key: clips[spec.key] for spec in part}, annotator, library, summary, part_status
                )
        _attribute_counts(specs, library, summary)
    return summary


def audiocaps_f_needs_embedding(*, data: Any, source_name: str) -> bool:
    """Whether a gold import of the file embeds phrases (some clip has two events or more, all with spans): on a
    cold cache loading Sentence-BERT and embedding take longer than a web request may last, so the API hands such
    files to the worker. Raises ImportDataError for a file that does not parse."""
    specs = audiocaps_f_parse(data=data, source_name=source_name)
    return bool(duplicates_checked(specs, status=ExpertAnnotation.Status.GOLD))


def _checks_before_writing(
    specs: list[ClipAnnotationSpec],
    clips: dict[str, Clip],
    library: AttributeVocabulary,
    summary: ImportSummary,
    *,
    annotator,
    source_name: str,
    status: str,
    replace_gold: bool,
    conflicting_as: str,
    duplicates_as: str,
) -> set[str]:
    """Refuse the file (ImportDataError) or return the keys of the clips a gold import holds back as submitted.

    The cheap checks come first, so a bad file is refused at once; only then are the events' phrases embedded
    for the duplicate check (seconds to a minute on a cold cache)."""
    _spans_within_clips_guard(specs, clips, source_name)
    conflicting = attribute_conflicts_flag(specs, library, summary, status=status)
    renamed = repeated_names_flag(specs, summary, source_name=source_name, status=status, duplicates_as=duplicates_as)
    held_back = renamed | (set(conflicting) if conflicting_as != status else set())
    guarded = status == ExpertAnnotation.Status.GOLD and not replace_gold
    # Clips the embedding may still hold back are guarded after it when they would be imported as submitted then.
    embedded = duplicates_checked(specs, status=status) if duplicates_as != "refuse" else set()
    if guarded:
        _others_gold_guard(
            [spec for spec in specs if spec.key not in held_back | embedded], clips, annotator, source_name
        )
    held_back |= gold_duplicates_flag(
        [spec for spec in specs if spec.key not in renamed],
        summary,
        source_name=source_name,
        status=status,
        duplicates_as=duplicates_as,
    )
    if guarded:
        _others_gold_guard(
            [spec for spec in specs if spec.key in embedded and spec.key not in held_back],
            clips,
            annotator,
            source_name,
        )
    attribute_conflicts_note(summary, conflicting, held_back)
    return held_back


def _spans_within_clips_guard(specs: list[ClipAnnotationSpec], clips: dict[str, Clip], source_name: str) -> None:
    """Refuse a span that ends after its clip (when the clip's duration is known), as the editor's checks do."""
    for spec in specs:
        duration = clips[spec.key].duration_seconds
        if not duration:
            continue
        for event in spec.events:
            for index, (_onset, offset) in enumerate(event.spans):
                if offset > duration + CLIP_END_SLACK_SECONDS:
                    raise ImportDataError(
                        f'{source_name}: key "{spec.key}" event "{event.label}" key "spans" index {index}: ends at '
                        f"{offset} s, after the clip's end ({duration:.2f} s)"
                    )


def _others_gold_guard(specs: list[ClipAnnotationSpec], clips: dict[str, Clip], annotator, source_name: str) -> None:
    """Refuse to supersede gold that another account published (a reviewer's work, or another import)."""
    key_of_clip = {clips[spec.key].pk: spec.key for spec in specs if clips[spec.key].pk is not None}
    others = (
        ExpertAnnotation.objects.filter(clip_id__in=list(key_of_clip), status=ExpertAnnotation.Status.GOLD)
        .exclude(annotator=annotator)
        .select_related("annotator")
        .order_by("clip_id")
    )
    for gold in others[:1]:
        raise ImportDataError(
            f'{source_name}: key "{key_of_clip[gold.clip_id]}": the clip has gold published by '
            f'"{gold.annotator.get_username()}"; importing gold would replace it. Import with status submitted, '
            "or choose to replace gold (--replace-gold)"
        )


def _named_annotator(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ImportDataError(f'user "{username}" does not exist (create the account first)')
    if not user.groups.filter(name=EXPERT_ROLE).exists():
        raise ImportDataError(f'user "{username}" is not an annotator (add the account to the annotator group)')
    return user


def audiocaps_f_parse(*, data: Any, source_name: str) -> list[ClipAnnotationSpec]:
    """Check the whole input; raises ImportDataError naming the file and key."""
    json_nul_check(data=data, source_name=source_name)
    if not isinstance(data, dict):
        raise ImportDataError(
            f'{source_name}: expected an object {{"Y<youtube_id>.wav": {{event: ...}}}}, got {json_type_name(data)}'
        )
    specs = []
    for key, raw_events in data.items():
        where = f'{source_name}: key "{key}"'
        if not key.strip() or key != key.strip():
            raise ImportDataError(f"{where}: a clip key is its file name or id, without spaces around it")
        if len(key) > EXTERNAL_ID_LENGTH:
            raise ImportDataError(f"{where}: longer than {EXTERNAL_ID_LENGTH} characters")
        match = CLIP_KEY.match(key)
        if not isinstance(raw_events, dict):
            raise ImportDataError(f"{where}: expected an object {{event: {{...}}}}, got {json_type_name(raw_events)}")
        events = tuple(
            _event_parse(label, raw_event, f'{where} event "{label}"') for label, raw_event in raw_events.items()
        )
        _relations_check(events, where)
        youtube_id = match.group("youtube_id") if match else None
        specs.append(ClipAnnotationSpec(key=key, youtube_id=youtube_id, events=events))
    return specs


def _event_parse(label: str, raw_event: Any, where: str) -> EventSpec:
    text_field_check(value=label, where=where, max_length=LABEL_LENGTH)
    if not isinstance(raw_event, dict):
        raise ImportDataError(f"{where}: {EVENT_SHAPE}, got {json_type_name(raw_event)}")
    unknown = sorted(set(raw_event) - EVENT_KEYS)
    if unknown:
        raise ImportDataError(f'{where}: unknown key "{unknown[0]}" ({EVENT_SHAPE})')
    lists = {}
    for name, max_length in (("source", SOURCE_LENGTH), ("attr", ATTRIBUTE_LENGTH)):
        values = raw_event.get(name)
        if values is None:
            values = []
        if not isinstance(values, list):
            raise ImportDataError(f'{where} key "{name}": expected a list of strings, got {json_type_name(values)}')
        lists[name] = tuple(
            text_field_check(value=value, where=f'{where} key "{name}" index {index}', max_length=max_length)
            for index, value in enumerate(values)
        )
    spans = _spans_parse(raw_event, where)
    relations = raw_event.get("relations") or {}
    if not isinstance(relations, dict):
        raise ImportDataError(
            f'{where} key "relations": expected an object {{event: kind}}, got {json_type_name(relations)}'
        )
    for other, kind in relations.items():
        if kind not in TemporalRelation.Kind.values:
            raise ImportDataError(
                f'{where} key "relations" event "{other}": expected one of {", ".join(TemporalRelation.Kind.values)}'
            )
    return EventSpec(
        label=label,
        sources=lists["source"],
        attributes=lists["attr"],
        relations=tuple(relations.items()),
        spans=spans,
    )


def _spans_parse(raw_event: dict, where: str) -> tuple[tuple[float, float], ...]:
    """The event's "spans": [[onset, offset], ...], or the earlier single "onset" and "offset" (one span)."""
    if "spans" in raw_event and ("onset" in raw_event or "offset" in raw_event):
        raise ImportDataError(f'{where} key "spans": give "spans" or "onset" / "offset", not both')
    if "spans" not in raw_event:
        onset, offset = (_seconds_parse(raw_event.get(key), f'{where} key "{key}"') for key in ("onset", "offset"))
        if onset is None and offset is None:
            return ()
        if onset is None or offset is None:
            missing = "onset" if onset is None else "offset"
            raise ImportDataError(f'{where} key "{missing}": missing (a span needs both onset and offset)')
        if offset < onset:
            raise ImportDataError(f'{where} key "offset": {offset} is before the onset {onset}')
        return ((onset, offset),)
    raw_spans = raw_event["spans"]
    if raw_spans is None:
        return ()
    if not isinstance(raw_spans, list):
        raise ImportDataError(
            f'{where} key "spans": expected a list of [onset, offset], got {json_type_name(raw_spans)}'
        )
    if len(raw_spans) > MAX_SPANS:
        raise ImportDataError(f'{where} key "spans": more than {MAX_SPANS} spans')
    spans = []
    for index, span in enumerate(raw_spans):
        place = f'{where} key "spans" index {index}'
        if not isinstance(span, list) or len(span) != 2:
            raise ImportDataError(f"{place}: expected [onset, offset] in seconds, got {json.dumps(span)[:60]}")
        onset, offset = _seconds_parse(span[0], f"{place} onset"), _seconds_parse(span[1], f"{place} offset")
        if onset is None or offset is None:
            raise ImportDataError(f"{place}: expected [onset, offset] in seconds, got {json.dumps(span)[:60]}")
        if offset < onset:
            raise ImportDataError(f"{place}: the offset {offset} is before the onset {onset}")
        spans.append((onset, offset))
    spans.sort()
    overlapping = overlapping_occurrences(spans)
    if overlapping:
        raise ImportDataError(f'{where} key "spans": {overlapping[0][1]}')
    return tuple(spans)


def _seconds_parse(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ImportDataError(f"{where}: expected a number of seconds >= 0, got {json.dumps(value)}")
    return float(value)


def _relations_check(events: tuple[EventSpec, ...], where: str) -> None:
    """Relations name events of the same clip, never the event itself, and contradict neither each other nor
    the events' spans (the editor's checks: a relation its spans contradict is refused, naming it)."""
    labels = {event.label for event in events}
    stated, pairs = [], set()
    for event in events:
        for other, kind in event.relations:
            if other not in labels or other == event.label:
                what = "the event itself" if other == event.label else "no event of this clip"
                raise ImportDataError(f'{where} event "{event.label}" key "relations": "{other}" is {what}')
            if frozenset((event.label, other)) in pairs:
                raise ImportDataError(f'{where}: events "{event.label}" and "{other}" are related twice')
            pairs.add(frozenset((event.label, other)))
            stated.append((event.label, other, kind))
    spans = {event.label: event.spans for event in events}
    for first, second, kind in stated:
        conflict = time_conflict(kind, spans[first], spans[second], (f'"{first}"', f'"{second}"'))
        if conflict is not None:
            raise ImportDataError(
                f'{where} event "{first}" key "relations" event "{second}": against the time spans: {conflict.message}'
            )
    report = relations_derive(stated, spans)
    if report.contradictions:
        raise ImportDataError(f"{where}: contradictory relations: {report.contradictions[0][1]}")


def _clips_ensure(dataset: Dataset, specs: list[ClipAnnotationSpec], summary: ImportSummary) -> dict[str, Clip]:
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


def _annotations_ensure(
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


def _attribute_counts(specs: list[ClipAnnotationSpec], library: AttributeVocabulary, summary: ImportSummary) -> None:
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


# --- Export -----------------------------------------------------------------------------------------


def audiocaps_f_clip_key(clip: Clip) -> str:
    """The key a clip is exported under: its file name as it came in, else its external id when that names a
    file ("34.wav"), else the AudioCaps-F key "Y<external id>.wav" of a YouTube id."""
    if clip.file_name:
        return clip.file_name
    if FILE_NAME.search(clip.external_id):
        return clip.external_id
    return f"Y{clip.external_id}.wav"


def audiocaps_f_export(*, dataset_name: str) -> dict[str, dict]:
    """GOLD annotations of the dataset in the AudioCaps-F format (one per clip), in import order.

    Two clips whose keys would be the same (a file name "Yab.wav" and a YouTube id "ab") are refused with an
    error naming both, rather than one silently overwriting the other."""
    dataset = dataset_get_existing(name=dataset_name)
    exported: dict[str, dict] = {}
    clip_of_key: dict[str, Clip] = {}
    for annotation in dataset_gold_annotations(dataset=dataset):
        key = audiocaps_f_clip_key(annotation.clip)
        if key in clip_of_key:
            raise ImportDataError(
                f'dataset {dataset.name}: clips "{clip_of_key[key].external_id}" and "{annotation.clip.external_id}" '
                f'would both be exported as "{key}"'
            )
        clip_of_key[key] = annotation.clip
        exported[key] = annotation_as_audiocaps_f(annotation)
    return exported


def audiocaps_f_export_notes(*, dataset_name: str) -> dict[str, str]:
    """{clip key: note} of the dataset's GOLD annotations that have a note. The notes travel beside the export,
    not in it: AudioCaps-F readers take every key of a clip as an event name."""
    dataset = dataset_get_existing(name=dataset_name)
    return {
        audiocaps_f_clip_key(annotation.clip): annotation.note
        for annotation in dataset_gold_annotations(dataset=dataset)
        if annotation.note
    }


def audiocaps_f_export_to_path(*, dataset_name: str, path: Path | str) -> int:
    """Write the export as JSON (all or nothing: a temporary file renamed into place); returns the clip count."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ImportDataError(f"{path}: folder {path.parent} does not exist")
    data = audiocaps_f_export(dataset_name=dataset_name)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as output:
            json.dump(data, output, indent=2, ensure_ascii=False)
            output.write("\n")
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the export is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return len(data)
