"""Two events of one gold annotation that name the same sound (a reviewer pressed "+ gold" on each annotator's
event of it): flagged in the review and refused at publishing until the reviewer merges them or relates them
(a stated relation says they are two sounds). A gold AudioCaps-F import runs the same check on its clips
(audiocaps_f_checks.py).

Whether two events name the same sound is the review's matching rule, which embeds phrases with Sentence-BERT
(metrics_bridge). This app cannot import that layer, so metrics_bridge registers the finder when it loads
(MetricsBridgeConfig.ready); without one (the annotation app alone) no duplicate is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from annotation.services.annotation_checks import ERROR, Check
from annotation.vocabulary import library_key

#: AudioCaps-F documents [{label: {"source", "attr", "spans"}}] -> per document [{"first", "second" (labels),
#: "score", "needed", "parts"}]: the pairs of its events that the matching rule calls one sound. Documents come
#: together so that an import embeds the phrases of all its clips at once.
DuplicateFinder = Callable[[list[dict]], list[list[dict]]]
_finders: list[DuplicateFinder] = []


@dataclass(frozen=True)
class GoldDuplicate:
    """Two events of a draft (as validated: "id", "label", ...) that the matching rule calls one sound."""

    first: dict
    second: dict
    score: float
    needed: float

    def reason(self) -> str:
        return f"meaning {self.score:.2f}, {self.needed:.2f} needed at their time overlap"


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


def gold_duplicates_find(*, drafts: list[dict]) -> list[list[GoldDuplicate]]:
    """Per validated gold draft, the pairs of its events that name one sound and are not related (a stated
    relation says they are two sounds); events with the same name are left to the checks' "duplicate_event"."""
    if not _finders:
        return [[] for _ in drafts]
    wanted = [index for index, draft in enumerate(drafts) if len(draft["events"]) >= 2]
    found: list[list[GoldDuplicate]] = [[] for _ in drafts]
    pairs_per_draft = _finders[0]([_document(drafts[index]["events"]) for index in wanted]) if wanted else []
    for index, pairs in zip(wanted, pairs_per_draft, strict=True):
        draft = drafts[index]
        by_label: dict[str, dict] = {}
        for event in draft["events"]:
            by_label.setdefault(event["label"].strip(), event)
        related = {frozenset((relation["first"], relation["second"])) for relation in draft["relations"]}
        for pair in pairs:
            first, second = by_label[pair["first"]], by_label[pair["second"]]
            same_name = library_key(first["label"]) == library_key(second["label"])
            if same_name or frozenset((first["id"], second["id"])) in related:
                continue
            found[index].append(GoldDuplicate(first, second, pair["score"], pair["needed"]))
    return found


def gold_duplicate_checks(*, draft: dict) -> list[Check]:
    """An error per pair of events of a validated gold draft that name one sound and are not related."""
    [duplicates] = gold_duplicates_find(drafts=[draft])
    index = {event["id"]: position for position, event in enumerate(draft["events"])}
    checks = []
    for duplicate in duplicates:
        first, second = duplicate.first, duplicate.second
        message = (
            f"Events {first['label'].strip()!r} and {second['label'].strip()!r} may be one sound "
            f"({duplicate.reason()}): merge them, or relate them (b / a / s) if they are two sounds."
        )
        checks.append(
            Check(ERROR, "gold_duplicate", message, f"events[{index[second['id']]}]", second["id"], first["id"])
        )
    return checks
