"""Reading an AudioCaps-F file: the whole input is checked and turned into one spec per clip before anything is
written (annotation/services/audiocaps_f.py imports them).

Format: {"Y<youtube_id>.wav": {event: {"source": [...], "attr": [...]}, ...}, ...}. Events, sources
and attributes keep their order (position) and their exact text, so import -> export reproduces
the input. This product's annotations may also carry, per event, optional keys that readers of the
plain format ignore: "relations": {other event: "before" | "after" | "simultaneous"} (this event
<kind> the other one) and "spans": [[onset, offset], ...] in seconds (the event's occurrences; the
earlier single "onset" / "offset" pair still imports, as one span); they are written only when present,
so an annotation without them exports exactly as the released file.

The editor's checks that need no database run here: overlapping occurrences and relations the spans contradict
are refused, naming file, key and event.
"""

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from annotation.models import EventAttribute, EventSource, SoundEvent, TemporalRelation
from annotation.services.annotation_checks import overlapping_occurrences
from common.time_relations import relations_derive, time_conflict
from corpus.models import Clip
from corpus.services.importing import ImportDataError, json_nul_check, json_type_name, text_field_check

CLIP_KEY = re.compile(r"^Y(?P<youtube_id>.+)\.wav$")
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
