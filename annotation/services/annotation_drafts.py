"""The editor's draft of an annotation graph: its JSON shape, validation, and versioned saving.

A draft is what the browser editor autosaves while an annotator (or a reviewer making gold) works:

    {"events": [{"id": "e1", "label": "barking", "sources": ["dog"], "attributes": ["loud"],
                 "spans": [[0.4, 2.1], [5.0, 6.25]]}],
     "relations": [{"first": "e1", "second": "e2", "kind": "before"}],
     "note": "free text for the reviewer"}

Event ids are the editor's own (relations survive renaming). "spans" are the event's occurrences in the
clip, [onset, offset] in seconds, kept sorted; a draft of the earlier form, with one "onset" / "offset" per
event (a tab opened before the change, a local copy), is read as one span. A draft may be unfinished (an empty
event name, a missing source): those are the automated checks' business at submit time
(annotation_checks.py). What no draft may hold is malformed data or a contradiction between
relations: `draft_validate` refuses them with a message naming the field.

Saving is versioned: each accepted save adds one to the row's `draft_version`, and a save must say
which version it was based on. A save based on an older version (a second tab, a device that was
offline) is refused with DraftConflictError, never silently overwriting newer work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from common.graph_rules import KINDS
from common.time_relations import relations_derive

MAX_EVENTS = 200
MAX_CHILDREN = 100
MAX_RELATIONS = 2000
MAX_TEXT = 255
MAX_ID = 40
MAX_NOTE = 5000
MAX_SECONDS = 24 * 3600.0
DRAFT_KEYS = {"events", "relations", "note"}
MAX_SPANS = 100
# A draft's JSON may weigh at most this: 60 events with 4 attributes each weigh about 12 KB, the limits above
# allow megabytes, and every autosave rewrites the whole draft, so a larger one is refused (413) with its size.
MAX_DRAFT_BYTES = 256 * 1024
EVENT_KEYS = {"id", "label", "sources", "attributes", "spans", "onset", "offset"}
RELATION_KEYS = {"first", "second", "kind"}


class DraftInvalidError(ValueError):
    """The draft is malformed; `field` names where (e.g. "events[2].onset")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class DraftTooLargeError(ValueError):
    """The draft's JSON weighs more than MAX_DRAFT_BYTES."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.max_bytes = MAX_DRAFT_BYTES
        super().__init__(
            f"this draft is {size / 1024:.0f} KB; a draft may weigh at most {MAX_DRAFT_BYTES // 1024} KB. "
            "Nothing was saved: shorten the note or remove events, then it saves again"
        )


def draft_size_check(size: int) -> None:
    """DraftTooLargeError when a draft of `size` bytes (its JSON as sent) is over the limit."""
    if size > MAX_DRAFT_BYTES:
        raise DraftTooLargeError(size)


class DraftConflictError(Exception):
    """The save was based on an older version than the stored one."""

    def __init__(self, *, current_version: int, base_version: int, current_draft: dict | None = None) -> None:
        super().__init__(
            f"this draft was saved elsewhere (another tab or device) as version {current_version}; "
            f"this save was based on version {base_version} and was not applied"
        )
        self.current_version = current_version
        self.base_version = base_version
        # The stored draft, so the refused tab can merge its edits into it (it keeps the version both started
        # from itself); None where only the version matters (submit, publish: the tab saves first anyway).
        self.current_draft = current_draft


def empty_draft() -> dict:
    return {"events": [], "relations": [], "note": ""}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(type(value), "a number")


def _text(value: Any, field: str, max_length: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        raise DraftInvalidError(field, f"expected a string, got {_type_name(value)}")
    if len(value) > max_length:
        raise DraftInvalidError(field, f"longer than {max_length} characters")
    if "\x00" in value:
        raise DraftInvalidError(field, "contains a NUL character")
    return value


def _text_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DraftInvalidError(field, f"expected a list of strings, got {_type_name(value)}")
    if len(value) > MAX_CHILDREN:
        raise DraftInvalidError(field, f"more than {MAX_CHILDREN} entries")
    return [_text(item, f"{field}[{index}]") for index, item in enumerate(value)]


def _seconds(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DraftInvalidError(field, f"expected a number of seconds or null, got {_type_name(value)}")
    if not 0 <= value <= MAX_SECONDS:
        raise DraftInvalidError(field, f"must be between 0 and {MAX_SECONDS:.0f} seconds")
    return round(float(value), 3)


def _spans(raw: dict, field: str) -> list[list[float]]:
    """The event's spans, sorted; the earlier single "onset" / "offset" is read as one span."""
    if "spans" in raw and ("onset" in raw or "offset" in raw):
        raise DraftInvalidError(f"{field}.spans", 'give "spans" or the earlier "onset" / "offset", not both')
    if "spans" not in raw:
        onset, offset = _seconds(raw.get("onset"), f"{field}.onset"), _seconds(raw.get("offset"), f"{field}.offset")
        if onset is None and offset is None:
            return []
        onset, offset = (offset, offset) if onset is None else (onset, onset if offset is None else offset)
        if offset < onset:
            raise DraftInvalidError(f"{field}.offset", f"ends ({offset} s) before it starts ({onset} s)")
        return [[onset, offset]]
    value = raw["spans"]
    if value is None:
        return []
    if not isinstance(value, list):
        raise DraftInvalidError(f"{field}.spans", f"expected a list of [onset, offset], got {_type_name(value)}")
    if len(value) > MAX_SPANS:
        raise DraftInvalidError(f"{field}.spans", f"more than {MAX_SPANS} spans")
    spans = []
    for index, span in enumerate(value):
        where = f"{field}.spans[{index}]"
        if not isinstance(span, list) or len(span) != 2:
            raise DraftInvalidError(where, f"expected [onset, offset] in seconds, got {_type_name(span)}")
        onset, offset = _seconds(span[0], f"{where}[0]"), _seconds(span[1], f"{where}[1]")
        if onset is None or offset is None:
            raise DraftInvalidError(where, "expected [onset, offset] in seconds, got null")
        if offset < onset:
            raise DraftInvalidError(where, f"ends ({offset} s) before it starts ({onset} s)")
        spans.append([onset, offset])
    return sorted(spans)


def _unknown_key(data: dict, allowed: set[str], field: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise DraftInvalidError(f"{field}.{unknown[0]}" if field else unknown[0], "unknown field")


def _objects(value: Any, field: str, max_items: int, keys: set[str]):
    """(index, field, object) of a list of objects with known keys, or DraftInvalidError naming the place."""
    if not isinstance(value, list):
        raise DraftInvalidError(field, f"expected a list, got {_type_name(value)}")
    if len(value) > max_items:
        raise DraftInvalidError(field, f"more than {max_items} {field}")
    for index, raw in enumerate(value):
        item_field = f"{field}[{index}]"
        if not isinstance(raw, dict):
            raise DraftInvalidError(item_field, f"expected an object, got {_type_name(raw)}")
        _unknown_key(raw, keys, item_field)
        yield index, item_field, raw


def draft_validate(data: Any) -> dict:
    """The draft in its normal form (texts as typed, times rounded to ms), or DraftInvalidError naming the field."""
    if not isinstance(data, dict):
        raise DraftInvalidError("draft", f"expected an object, got {_type_name(data)}")
    _unknown_key(data, DRAFT_KEYS, "")
    events, ids = [], {}
    for index, field, raw in _objects(data.get("events", []), "events", MAX_EVENTS, EVENT_KEYS):
        event_id = _text(raw.get("id"), f"{field}.id", MAX_ID)
        if not event_id.strip():
            raise DraftInvalidError(f"{field}.id", "must not be empty")
        if event_id in ids:
            raise DraftInvalidError(f"{field}.id", f"{event_id!r} is also the id of events[{ids[event_id]}]")
        ids[event_id] = index
        events.append(
            {
                "id": event_id,
                "label": _text(raw.get("label", ""), f"{field}.label"),
                "sources": _text_list(raw.get("sources"), f"{field}.sources"),
                "attributes": _text_list(raw.get("attributes"), f"{field}.attributes"),
                "spans": _spans(raw, field),
            }
        )
    relations = _relations_validate(data.get("relations", []), ids, events)
    return {"events": events, "relations": relations, "note": _text(data.get("note", ""), "note", MAX_NOTE)}


def _relations_validate(raw_relations: Any, ids: dict[str, int], events: list[dict]) -> list[dict]:
    relations, pairs = [], {}
    for index, field, raw in _objects(raw_relations, "relations", MAX_RELATIONS, RELATION_KEYS):
        for key in ("first", "second"):
            value = raw.get(key)
            if not isinstance(value, str) or value not in ids:
                raise DraftInvalidError(f"{field}.{key}", f"no event has the id {value!r}")
        if raw["first"] == raw["second"]:
            raise DraftInvalidError(field, "an event cannot be related to itself")
        if raw.get("kind") not in KINDS:
            raise DraftInvalidError(f"{field}.kind", f"expected one of {', '.join(KINDS)}, got {raw.get('kind')!r}")
        pair = frozenset((raw["first"], raw["second"]))
        if pair in pairs:
            raise DraftInvalidError(field, f"these two events are already related in relations[{pairs[pair]}]")
        pairs[pair] = index
        relations.append({"first": raw["first"], "second": raw["second"], "kind": raw["kind"]})
    names = {event["id"]: repr(event["label"].strip() or event["id"]) for event in events}
    spans = {event["id"]: event["spans"] for event in events}
    report = relations_derive(((r["first"], r["second"], r["kind"]) for r in relations), spans, names)
    if report.contradictions:
        index, message = report.contradictions[0]
        raise DraftInvalidError(f"relations[{index}]", f"contradiction: {message}")
    return relations


# --- Versioned saving ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavedDraft:
    version: int
    saved_at: Any


def draft_save_versioned(
    *, model: type[models.Model], pk: int, base_version: int, draft: dict, guard=None
) -> SavedDraft:
    """Store `draft` on row `pk` of `model` (fields draft / draft_version / draft_saved_at) if it is still at
    `base_version`; the row is locked meanwhile, so two saves based on the same version cannot both win.

    `guard(row)` may raise to refuse the save (e.g. the task was submitted meanwhile).
    """
    with transaction.atomic():
        row = model.objects.select_for_update().get(pk=pk)
        if guard is not None:
            guard(row)
        if row.draft_version != base_version:
            if row.draft == draft:  # the same save arriving twice (a retry, a page leaving): nothing to refuse
                return SavedDraft(version=row.draft_version, saved_at=row.draft_saved_at)
            raise DraftConflictError(
                current_version=row.draft_version, base_version=base_version, current_draft=row.draft
            )
        row.draft = draft
        row.draft_version += 1
        row.draft_saved_at = timezone.now()
        row.save(update_fields=["draft", "draft_version", "draft_saved_at", "updated_at"])
    return SavedDraft(version=row.draft_version, saved_at=row.draft_saved_at)


# --- Drafts <-> stored graphs ------------------------------------------------------------------------


def draft_to_graph(draft: dict) -> tuple[list[dict], list[dict]]:
    """(events, relations) as expert_annotation_save takes them: trimmed labels, blank children dropped,
    relations by label. Call it on a draft that passed the submit checks (labels unique and non-empty)."""
    labels = {event["id"]: event["label"].strip() for event in draft["events"]}
    events = [
        {
            "label": labels[event["id"]],
            "sources": [text.strip() for text in event["sources"] if text.strip()],
            "attributes": [text.strip() for text in event["attributes"] if text.strip()],
            "spans": [list(span) for span in event.get("spans", [])],
        }
        for event in draft["events"]
    ]
    relations = [
        {"first_event": labels[r["first"]], "second_event": labels[r["second"]], "kind": r["kind"]}
        for r in draft["relations"]
    ]
    return events, relations


def draft_from_annotation(annotation) -> dict:
    """A stored ExpertAnnotation as an editor draft (event ids e1, e2, ... in order)."""
    events = list(annotation.events.order_by("position").prefetch_related("sources", "attributes", "spans"))
    ids = {event.pk: f"e{index + 1}" for index, event in enumerate(events)}
    return {
        "events": [
            {
                "id": ids[event.pk],
                "label": event.label,
                "sources": [source.text for source in sorted(event.sources.all(), key=lambda s: s.position)],
                "attributes": [a.text for a in sorted(event.attributes.all(), key=lambda a: a.position)],
                "spans": [
                    [s.onset_seconds, s.offset_seconds] for s in sorted(event.spans.all(), key=lambda s: s.position)
                ],
            }
            for event in events
        ],
        "relations": [
            {"first": ids[r.first_event_id], "second": ids[r.second_event_id], "kind": r.kind}
            for r in annotation.relations.order_by("pk")
        ],
        "note": annotation.note,
    }
