"""Two events of one gold annotation that name the same sound (a reviewer pressed "+ gold" on each annotator's
event of it): flagged in the review and refused at publishing until the reviewer merges them or relates them
(a stated relation says they are two sounds).

Whether two events name the same sound is the review's matching rule, which embeds phrases with Sentence-BERT
(metrics_bridge). This app cannot import that layer, so metrics_bridge registers the finder when it loads
(MetricsBridgeConfig.ready); without one (the annotation app alone) no duplicate is reported.
"""

from __future__ import annotations

from collections.abc import Callable

from annotation.services.annotation_checks import ERROR, Check
from annotation.vocabulary import library_key

#: AudioCaps-F document {label: {"source", "attr", "spans"}} -> [{"first", "second" (labels), "score", "needed",
#: "parts"}]: the pairs of its events that the matching rule calls one sound
DuplicateFinder = Callable[[dict], list[dict]]
_finders: list[DuplicateFinder] = []


def duplicate_finder_register(finder: DuplicateFinder) -> None:
    """Set the function that finds events naming one sound (the last registered wins)."""
    _finders[:] = [finder]


def _document(events: list[dict]) -> dict:
    document = {}
    for event in events:
        label = event["label"].strip()
        if label and label not in document:  # a repeated name is the checks' own "duplicate_event" error
            document[label] = {"source": event["sources"], "attr": event["attributes"], "spans": event["spans"]}
    return document


def gold_duplicate_checks(*, draft: dict) -> list[Check]:
    """An error per pair of events of a validated gold draft that name one sound and are not related."""
    if not _finders or len(draft["events"]) < 2:
        return []
    by_label: dict[str, dict] = {}
    for event in draft["events"]:
        by_label.setdefault(event["label"].strip(), event)
    related = {frozenset((relation["first"], relation["second"])) for relation in draft["relations"]}
    index = {event["id"]: position for position, event in enumerate(draft["events"])}
    checks = []
    for pair in _finders[0](_document(draft["events"])):
        first, second = by_label[pair["first"]], by_label[pair["second"]]
        same_name = library_key(first["label"]) == library_key(second["label"])
        if same_name or frozenset((first["id"], second["id"])) in related:
            continue
        message = (
            f"Events {first['label'].strip()!r} and {second['label'].strip()!r} may be one sound (meaning "
            f"{pair['score']:.2f}, {pair['needed']:.2f} needed at their time overlap): merge them, or relate them "
            "(b / a / s) if they are two sounds."
        )
        checks.append(
            Check(ERROR, "gold_duplicate", message, f"events[{index[second['id']]}]", second["id"], first["id"])
        )
    return checks
