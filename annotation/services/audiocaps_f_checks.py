"""The checks gold publishing runs that a gold AudioCaps-F import runs too, on the whole file before it writes:
attributes the tag library calls opposites or different counts, and events that the review's matching rule
calls one sound.

Duplicate events are looked for only in clips whose events all carry spans. The released AudioCaps-F file has
none, and without time the rule needs only meaning, which flagged 156 of its 957 clips for distinct sounds
("running" / "horn"); with spans it weighs the seconds as the review does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.models import ExpertAnnotation
from annotation.selectors import stored_tag_facts
from annotation.services.annotation_checks import attribute_conflicts, event_name_checks
from annotation.services.gold_duplicates import GoldDuplicate, gold_duplicates_find
from annotation.vocabulary import AttributeVocabulary
from corpus.services.importing import ImportDataError, ImportSummary

if TYPE_CHECKING:
    from annotation.services.audiocaps_f_parsing import ClipAnnotationSpec

#: what a gold import makes of a clip whose attributes the tag library contradicts
CONFLICTING_AS = (ExpertAnnotation.Status.GOLD, ExpertAnnotation.Status.SUBMITTED)
#: what a gold import does with a clip holding two events of one sound: refuse the file, or import the clip as
#: submitted (not gold) for a reviewer
DUPLICATES_AS = ("refuse", ExpertAnnotation.Status.SUBMITTED)
#: problems named one by one in the summary; the rest are counted
NAMED_IN_SUMMARY = 5
NOT_CHECKED = "clips not checked for duplicate events (events without spans)"
#: how a refusal names the choice, in words every entry point (page, API, command) understands
SUBMITTED_CHOICE = 'choose "import as submitted" for duplicate events (command: --duplicate-events submitted)'


def attribute_conflicts_flag(
    specs: list[ClipAnnotationSpec], library: AttributeVocabulary, summary: ImportSummary, *, status
) -> dict[str, list[str]]:
    """{key: problems} of the clips (of a gold import) with attributes the tag library calls opposites or different
    counts, counted in the summary; attribute_conflicts_note names them once the clips' statuses are known."""
    if status != ExpertAnnotation.Status.GOLD:
        return {}  # submissions go to a reviewer, whose checks show the conflicts
    facts = stored_tag_facts()
    found: dict[str, list[str]] = {}
    for spec in specs:
        for index, event in enumerate(spec.events):
            as_draft = {"id": f"e{index + 1}", "label": event.label, "attributes": list(event.attributes)}
            for check in attribute_conflicts(event=as_draft, library=library, tag_facts=facts):
                found.setdefault(spec.key, []).append(f"clip {spec.key}: {check.message}")
    if found:
        summary.extra["clips with conflicting attributes"] = len(found)
    return found


def attribute_conflicts_note(summary: ImportSummary, conflicts: dict[str, list[str]], held_back: set[str]) -> None:
    """Name the clips with conflicting attributes in the summary, by what became of them: kept gold, or imported
    as submitted (for their attributes or because they also hold a duplicate)."""
    for what, keys in (
        ("kept gold as the file gives them", [key for key in conflicts if key not in held_back]),
        ("imported as submitted, not gold", [key for key in conflicts if key in held_back]),
    ):
        if keys:
            summary.notes.append(
                f"{len(keys)} clips hold attributes the tag library calls opposites or different counts, which gold "
                f"publishing refuses; {what}: " + _named([problem for key in keys for problem in conflicts[key]])
            )


def duplicates_checked(specs: list[ClipAnnotationSpec], *, status) -> set[str]:
    """Keys of the clips a gold import checks for events naming one sound: two events or more, all with spans."""
    if status != ExpertAnnotation.Status.GOLD:
        return set()
    return {spec.key for spec in specs if len(spec.events) >= 2 and all(event.spans for event in spec.events)}


def repeated_names_flag(
    specs: list[ClipAnnotationSpec], summary: ImportSummary, *, source_name: str, status, duplicates_as
) -> set[str]:
    """Keys of the clips (of a gold import) naming one event twice up to case or spacing ("Dog" / "dog"), by the
    rule publishing applies (event_name_checks): refused, or imported as submitted as duplicates are. Needs no
    time, so every clip is checked (the released file has no such clip)."""
    if status != ExpertAnnotation.Status.GOLD:
        return set()
    found = []
    for spec in specs:
        events = [{"id": f"e{index + 1}", "label": event.label} for index, event in enumerate(spec.events)]
        found.extend(
            (spec.key, check.message) for check in event_name_checks(events) if check.code == "duplicate_event"
        )
    return _refused_or_held_back(
        [(key, message.rstrip(".")) for key, message in found],
        summary,
        source_name=source_name,
        duplicates_as=duplicates_as,
        remedy="rename or merge them in the file",
        counted_as="clips with events named twice",
        what="name one event twice (up to case or spacing)",
    )


def gold_duplicates_flag(
    specs: list[ClipAnnotationSpec], summary: ImportSummary, *, source_name: str, status, duplicates_as
) -> set[str]:
    """Keys of the clips (of a gold import) holding two events that the review's matching rule calls one sound,
    flagged in the summary; with `duplicates_as="refuse"` the first such clip stops the import instead. Clips
    whose events do not all have spans are counted in the summary as not checked."""
    if status != ExpertAnnotation.Status.GOLD:
        return set()  # submissions go to a reviewer, whose gold is checked when published
    several = [spec for spec in specs if len(spec.events) >= 2]
    checked = duplicates_checked(several, status=status)
    timed = [spec for spec in several if spec.key in checked]
    summary.extra[NOT_CHECKED] = len(several) - len(timed)
    found = [
        (spec.key, duplicate)
        for spec, duplicates in zip(timed, gold_duplicates_find(drafts=[_draft(spec) for spec in timed]), strict=True)
        for duplicate in duplicates
    ]
    return _refused_or_held_back(
        [(key, _described(duplicate)) for key, duplicate in found],
        summary,
        source_name=source_name,
        duplicates_as=duplicates_as,
        remedy="merge them or relate them in the file",
        counted_as="clips with duplicate events",
        what="hold events that may be one sound",
    )


def _refused_or_held_back(
    found: list[tuple[str, str]], summary: ImportSummary, *, source_name: str, duplicates_as, remedy, counted_as, what
) -> set[str]:
    """Keys of the clips with a problem gold publishing refuses (`found`: (key, problem) pairs), to import as
    submitted and named in the summary; with `duplicates_as="refuse"` the first problem stops the import instead."""
    if not found:
        return set()
    keys = {key for key, _problem in found}
    if duplicates_as == "refuse":
        key, problem = found[0]
        more = f" (and {len(keys) - 1} more clips)" if len(keys) > 1 else ""
        raise ImportDataError(
            f'{source_name}: key "{key}": {problem}, which gold publishing refuses: {remedy}, or {SUBMITTED_CHOICE}'
            f"{more}"
        )
    summary.extra[counted_as] = len(keys)
    summary.notes.append(
        f"{len(keys)} clips {what}, which gold publishing refuses; imported as submitted, not gold: "
        + _named([f"clip {key}: {problem}" for key, problem in found])
    )
    return keys


def _draft(spec: ClipAnnotationSpec) -> dict:
    """The clip's events as a validated draft, the shape gold publishing checks."""
    ids = {event.label: f"e{index + 1}" for index, event in enumerate(spec.events)}
    return {
        "events": [
            {
                "id": ids[event.label],
                "label": event.label,
                "sources": list(event.sources),
                "attributes": list(event.attributes),
                "spans": [list(span) for span in event.spans],
            }
            for event in spec.events
        ],
        "relations": [
            {"first": ids[event.label], "second": ids[other], "kind": kind}
            for event in spec.events
            for other, kind in event.relations
        ],
    }


def _described(duplicate: GoldDuplicate) -> str:
    return (
        f'events "{duplicate.first["label"]}" and "{duplicate.second["label"]}" may be one sound ({duplicate.reason()})'
    )


def _named(found: list[str]) -> str:
    more = f" (and {len(found) - NAMED_IN_SUMMARY} more)" if len(found) > NAMED_IN_SUMMARY else ""
    return "; ".join(found[:NAMED_IN_SUMMARY]) + more
