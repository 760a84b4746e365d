"""Automated checks of an annotation draft before it is submitted (the AudioCaps-F paper's "automated program").

Errors block submitting; warnings need the annotator's confirmation. The browser editor shows the
same list before submitting (it asks the server: POST .../checks/), so there is one rule book.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass

from common.graph_rules import relations_analyse

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Check:
    level: str  # ERROR or WARNING
    code: str
    message: str
    field: str = ""
    event: str | None = None  # the editor's event id

    def as_dict(self) -> dict:
        return asdict(self)


def library_key(text: str) -> str:
    """How attributes are compared with the tag library: trimmed, case-folded, single spaces."""
    return " ".join(text.split()).casefold()


def _event_name(event: dict) -> str:
    return repr(event["label"].strip()) if event["label"].strip() else f"#{event['id']}"


def draft_checks(*, draft: dict, library: Collection[str], clip_duration: float | None = None) -> list[Check]:
    """Every problem of a validated draft (see annotation_drafts.draft_validate), errors first.

    `library`: the tag library's texts as library_key() gives them.
    """
    checks: list[Check] = []
    events = draft["events"]
    if not events:
        checks.append(Check(ERROR, "no_events", "Add at least one sound event.", "events"))
    seen_labels: dict[str, int] = {}
    for index, event in enumerate(events):
        field = f"events[{index}]"
        label = " ".join(event["label"].split()).casefold()
        if not label:
            checks.append(Check(ERROR, "empty_event", f"Event {index + 1} has no name.", f"{field}.label", event["id"]))
        elif label in seen_labels:
            checks.append(
                Check(
                    ERROR,
                    "duplicate_event",
                    f"Event {index + 1} {_event_name(event)} repeats event {seen_labels[label] + 1}; "
                    "merge them or tell them apart.",
                    f"{field}.label",
                    event["id"],
                )
            )
        else:
            seen_labels[label] = index
        checks.extend(_children_checks(event, field, library))
        if clip_duration and event["offset"] is not None and event["offset"] > clip_duration + 0.05:
            checks.append(
                Check(
                    ERROR,
                    "time_outside_clip",
                    f"Event {_event_name(event)} ends at {event['offset']} s, "
                    f"after the clip's end ({clip_duration:.2f} s).",
                    f"{field}.offset",
                    event["id"],
                )
            )
    names = {event["id"]: _event_name(event) for event in events}
    report = relations_analyse(((r["first"], r["second"], r["kind"]) for r in draft["relations"]), names=names)
    for index, message in report.contradictions:
        checks.append(Check(ERROR, "contradiction", f"Contradictory relations: {message}.", f"relations[{index}]"))
    return sorted(checks, key=lambda check: check.level != ERROR)


def _children_checks(event: dict, field: str, library: Collection[str]) -> list[Check]:
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
            if kind == "attribute" and key not in library:
                message = f"Event {name}: the attribute {text.strip()!r} is not in the tag library."
                checks.append(Check(WARNING, "free_attribute", message, where, event["id"]))
    return checks


def has_errors(checks: list[Check]) -> bool:
    return any(check.level == ERROR for check in checks)
