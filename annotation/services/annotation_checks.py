"""Automated checks of an annotation draft before it is submitted (the AudioCaps-F paper's "automated program").

Errors block submitting; warnings need the annotator's confirmation. The browser editor shows the
same list before submitting (it asks the server: POST .../checks/), so there is one rule book.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from annotation.tag_library import TagFacts, tag_conflict
from annotation.vocabulary import AttributeVocabulary, library_key, source_is_listed
from common.time_relations import relations_derive, time_conflict

ERROR, WARNING = "error", "warning"
# A span may end this much after the clip's stored duration: decoders disagree on a clip's length by a frame.
CLIP_END_SLACK_SECONDS = 0.05


@dataclass(frozen=True)
class Check:
    level: str  # ERROR or WARNING
    code: str
    message: str
    field: str = ""
    event: str | None = None  # the editor's event id
    other_event: str | None = None  # the other event a check about two events names (gold duplicates)

    def as_dict(self) -> dict:
        return asdict(self)


def _event_name(event: dict) -> str:
    return repr(event["label"].strip()) if event["label"].strip() else f"#{event['id']}"


def draft_checks(
    *,
    draft: dict,
    library: AttributeVocabulary,
    clip_duration: float | None = None,
    tag_facts: Mapping[object, TagFacts] | None = None,
    gold: bool = False,
) -> list[Check]:
    """Every problem of a validated draft (see annotation_drafts.draft_validate), errors first.

    `library`: the attribute tag library (its tags and templates); `tag_facts`: tag id -> TagFacts, for
    attributes of one event the library calls opposites or different counts. Those are a warning for an
    annotator and an error for a gold annotation (`gold`): the reviewer chooses one before publishing.
    """
    checks: list[Check] = []
    events = draft["events"]
    if not events:
        checks.append(Check(ERROR, "no_events", "Add at least one sound event.", "events"))
    seen_labels: dict[str, int] = {}
    for index, event in enumerate(events):
        field = f"events[{index}]"
        checks.extend(_name_checks(index, event, seen_labels))
        checks.extend(_children_checks(event, field, library))
        checks.extend(_attribute_conflicts(event, field, library, tag_facts or {}, ERROR if gold else WARNING))
        checks.extend(_span_checks(event, field, clip_duration))
    names = {event["id"]: _event_name(event) for event in events}
    spans = {event["id"]: event["spans"] for event in events}
    stated = ((r["first"], r["second"], r["kind"]) for r in draft["relations"])
    report = relations_derive(stated, spans, names)
    for index, message in report.contradictions:
        checks.append(Check(ERROR, "contradiction", f"Contradictory relations: {message}.", f"relations[{index}]"))
    checks.extend(_time_checks(draft, names))
    return sorted(checks, key=lambda check: check.level != ERROR)


def event_name_checks(events: list[dict]) -> list[Check]:
    """Events without a name, and events whose names differ only in case or spacing ("Dog" / "dog"): one sound
    named twice. Publishing gold runs them (draft_checks) and a gold AudioCaps-F import runs them too."""
    seen_labels: dict[str, int] = {}
    return [check for index, event in enumerate(events) for check in _name_checks(index, event, seen_labels)]


def _name_checks(index: int, event: dict, seen_labels: dict[str, int]) -> list[Check]:
    """The name checks of one event; `seen_labels` (normalized name -> index) collects the names seen so far."""
    field = f"events[{index}]"
    label = " ".join(event["label"].split()).casefold()
    if not label:
        return [Check(ERROR, "empty_event", f"Event {index + 1} has no name.", f"{field}.label", event["id"])]
    if label in seen_labels:
        message = (
            f"Event {index + 1} {_event_name(event)} repeats event {seen_labels[label] + 1}; "
            "merge them or tell them apart."
        )
        return [Check(ERROR, "duplicate_event", message, f"{field}.label", event["id"])]
    seen_labels[label] = index
    return []


def _children_checks(event: dict, field: str, library: AttributeVocabulary) -> list[Check]:
    checks = []
    sources = [text for text in event["sources"] if text.strip()]
    attributes = [text for text in event["attributes"] if text.strip()]
    name = _event_name(event)
    if not sources and not attributes:
        message = f"Event {name} has neither a source nor an attribute."
        checks.append(Check(WARNING, "no_source_no_attribute", message, field, event["id"]))
    elif not sources:
        checks.append(Check(WARNING, "no_source", f"Event {name} has no source.", f"{field}.sources", event["id"]))
    elif not attributes:
        checks.append(
            Check(WARNING, "no_attribute", f"Event {name} has no attribute.", f"{field}.attributes", event["id"])
        )
    for kind, texts in (("source", event["sources"]), ("attribute", event["attributes"])):
        seen: set[str] = set()
        for position, text in enumerate(texts):
            key = library_key(text)
            if not key:
                continue
            where = f"{field}.{kind}s[{position}]"
            if key in seen:
                message = f"Event {name} lists the {kind} {text.strip()!r} twice."
                checks.append(Check(WARNING, f"duplicate_{kind}", message, where, event["id"]))
            seen.add(key)
            if kind == "attribute" and library.tag_of(text) is None:
                message = f"Event {name}: the attribute {text.strip()!r} is not in the tag library."
                checks.append(Check(WARNING, "free_attribute", message, where, event["id"]))
            if kind == "source" and not source_is_listed(text):
                message = f"Event {name}: the source {text.strip()!r} is not in the list of sound sources."
                checks.append(Check(WARNING, "free_source", message, where, event["id"]))
    return checks


def attribute_conflicts(
    *, event: dict, library: AttributeVocabulary, tag_facts: Mapping[object, TagFacts]
) -> list[Check]:
    """Attributes of one event (a dict with "id", "label", "attributes") that the tag library calls opposites or
    different counts, as errors: what gold publishing refuses."""
    return _attribute_conflicts(event, "attributes", library, tag_facts, ERROR)


def _attribute_conflicts(
    event: dict, field: str, library: AttributeVocabulary, facts: Mapping[object, TagFacts], level: str
) -> list[Check]:
    """Two attributes of the event that the tag library calls opposites, or two different counts."""
    tagged = []
    for position, text in enumerate(event["attributes"]):
        tag = facts.get(library.tag_of(text)) if text.strip() else None
        if tag is not None:
            tagged.append((position, text.strip(), tag))
    checks = []
    for index, (_first_position, first_text, first) in enumerate(tagged):
        for position, text, tag in tagged[index + 1 :]:
            kind = tag_conflict(first, tag)
            if kind is None:
                continue
            what = "are opposites" if kind == "antonym" else "give different counts"
            message = (
                f"Event {_event_name(event)}: the attributes {first_text!r} and {text!r} {what} "
                "(tag library); keep the one that is right."
            )
            checks.append(Check(level, f"attribute_{kind}", message, f"{field}.attributes[{position}]", event["id"]))
    return checks


def _span_checks(event: dict, field: str, clip_duration: float | None) -> list[Check]:
    checks = []
    name = _event_name(event)
    spans = event["spans"]
    for index, (_onset, offset) in enumerate(spans):
        if clip_duration and offset > clip_duration + CLIP_END_SLACK_SECONDS:
            message = f"Event {name} ends at {offset} s, after the clip's end ({clip_duration:.2f} s)."
            checks.append(Check(ERROR, "time_outside_clip", message, f"{field}.spans[{index}]", event["id"]))
    for index, text in overlapping_occurrences(spans):
        message = f"Event {name}: {text}"
        checks.append(Check(ERROR, "overlapping_spans", message, f"{field}.spans[{index}]", event["id"]))
    return checks


def overlapping_occurrences(spans: list) -> list[tuple[int, str]]:
    """(index, what is wrong) for each occurrence that overlaps or touches the one before it (spans sorted).

    Two occurrences of one event that share a moment are one occurrence to every rule that reads spans
    (common.time_relations.merged_spans joins them), so an annotation that keeps them apart says something
    its own relations and agreement never see. Submitting, publishing gold and importing refuse them alike,
    naming the event and both seconds ranges; a draft may hold them while its spans are being moved."""
    problems = []
    for index in range(1, len(spans)):
        (first_onset, first_offset), (onset, offset) = spans[index - 1], spans[index]
        if onset <= first_offset:
            problems.append(
                (
                    index,
                    f"occurrences {first_onset:.2f}–{first_offset:.2f} s and {onset:.2f}–{offset:.2f} s overlap "
                    f"or touch, so they are one occurrence: join them into "
                    f"{first_onset:.2f}–{max(first_offset, offset):.2f} s or move them apart.",
                )
            )
    return problems


def _time_checks(draft: dict, names: dict) -> list[Check]:
    """A stated relation the spans contradict is an error (the editor offers the fix). What the chain rule
    implies against the spans is never derived (common.time_relations.relations_derive), so it needs no check."""
    checks = []
    spans = {event["id"]: event["spans"] for event in draft["events"]}
    for index, relation in enumerate(draft["relations"]):
        first, second = relation["first"], relation["second"]
        conflict = time_conflict(relation["kind"], spans[first], spans[second], (names[first], names[second]))
        if conflict is not None:
            checks.append(
                Check(
                    ERROR,
                    "time_contradiction",
                    f"Relation against the time spans: {conflict.message}.",
                    f"relations[{index}]",
                    first,
                )
            )
    return checks


def has_errors(checks: list[Check]) -> bool:
    return any(check.level == ERROR for check in checks)
