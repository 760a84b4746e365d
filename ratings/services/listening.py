"""Listening proven by what the server served, not by a timer, on one clock per rater.

An item counts as heard ("listened", which submitting needs) only when all hold, as the server itself
observed them:
- it sent this item's rater audio (the clip's metadata-free copy, under the item's own URL) covering at
  least LISTENED_COVERAGE of the file, in one response or in any number of byte ranges;
- the listening time (the clip's duration, or MUST_LISTEN_SECONDS when that is set and shorter) fits on
  the rater's one listening clock: a stretch of wall-clock time that starts no earlier than the item's
  first audio byte, has ended by now, and overlaps no stretch already credited to another of the same
  rater's items (in any campaign or study). A person hears one clip at a time, so clips streamed at once,
  in several tabs or by a script fetching a whole share in parallel, are credited one after another: the
  items of a share are heard, at the earliest, after the sum of their listening times, not the longest.

So opening items and posting "listened" after a pause is refused when no audio was fetched, fetching the
file and posting at once is refused until the clip could have been played, and fetching every clip at
once is refused for all but one until as much real time has passed as playing them in turn would take.
The record is kept per assignment item (`AssignmentItem.audio_served`: the file, its size and the merged
byte ranges sent; `audio_first_served_at`; the credited stretch `listening_from`..`listening_until`).
Ranges are recorded when a response's body is done, counting only the chunks the server handed on (a
client that stops reading early gets only what it read counted).
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from common.compiled_reads import CompiledRead
from ratings.models import AssignmentItem
from ratings.services.judgements import JudgementError

logger = logging.getLogger(__name__)

LISTENED_COVERAGE = 0.95


def listening_seconds_required(*, item: AssignmentItem) -> float:
    """Seconds that must pass after the first audio byte: the whole clip, or MUST_LISTEN_SECONDS if shorter."""
    return listening_seconds_for(item.clip.duration_seconds)


def listening_seconds_for(duration: float | None) -> float:
    """The listening time of a sound of `duration` seconds (also a crowd study's practice sound)."""
    must_listen = settings.MUST_LISTEN_SECONDS
    if duration is None:
        return float(must_listen)
    if must_listen > 0:
        return float(min(must_listen, duration))
    return float(duration)


def ranges_merge(ranges: list[list[int]], first: int, end: int) -> list[list[int]]:
    """Half-open byte ranges [first, end) merged into a sorted list of disjoint ones."""
    merged: list[list[int]] = []
    for start, stop in sorted([*ranges, [first, end]]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    return merged


def served_coverage(record: dict) -> float:
    """The share of the file (0..1) the ranges in a served-audio record cover."""
    size = record.get("size") or 0
    if size <= 0:
        return 0.0
    return min(1.0, sum(stop - start for start, stop in record.get("ranges", [])) / size)


def audio_served_record(*, item: AssignmentItem, file_name: str, size: int, first: int, count: int, started_at) -> None:
    """Add bytes [first, first + count) of `file_name` (of `size` bytes) to what the item's rater was sent.

    A different file than the one recorded (the clip got new audio) starts the record afresh. `item` is the row as
    the request read it: the new record is written with one UPDATE on condition that the row still holds that
    record, which is the usual case (one response at a time per item) and needs neither a lock nor a transaction.
    When another response changed it meanwhile, the row is locked, read again and merged, so ranges of
    simultaneous responses all count.
    """
    try:
        record, first_served_at = _record_added(
            item.audio_served, item.audio_first_served_at, file_name, size, first, count, started_at
        )
        unchanged = AssignmentItem.objects.filter(
            pk=item.pk, audio_served=item.audio_served, audio_first_served_at=item.audio_first_served_at
        )
        if not unchanged.update(audio_served=record, audio_first_served_at=first_served_at):
            with transaction.atomic():
                locked = (
                    AssignmentItem.objects.select_for_update()
                    .only("audio_served", "audio_first_served_at")
                    .get(pk=item.pk)
                )
                record, first_served_at = _record_added(
                    locked.audio_served, locked.audio_first_served_at, file_name, size, first, count, started_at
                )
                locked.audio_served, locked.audio_first_served_at = record, first_served_at
                locked.save(update_fields=["audio_served", "audio_first_served_at"])
        item.audio_served, item.audio_first_served_at = record, first_served_at
    except Exception:  # the audio went out anyway; the rater can play it again to be counted
        logger.exception("could not record the audio served for assignment item %s", item.pk)


def _record_added(record: dict, first_served_at, file_name: str, size: int, first: int, count: int, started_at):
    """The served-audio record and first-byte time after bytes [first, first + count) were sent at `started_at`."""
    if record.get("file") != file_name or record.get("size") != size:
        record, first_served_at = {"file": file_name, "size": size, "ranges": []}, None
    record = {**record, "ranges": ranges_merge(record["ranges"], first, first + count)}
    if first_served_at is None or started_at < first_served_at:
        first_served_at = started_at
    return record, first_served_at


def listening_proof_check(*, item: AssignmentItem, rater_audio_name: str) -> None:
    """Raise JudgementError, saying what is missing, unless the item's whole audio was served."""
    record = item.audio_served or {}
    if not rater_audio_name:
        raise JudgementError("this clip has no audio to listen to")
    if record.get("file") != rater_audio_name or item.audio_first_served_at is None:
        raise JudgementError("the clip's audio has not been played yet: play the clip to its end")
    coverage = served_coverage(record)
    if coverage < LISTENED_COVERAGE:
        raise JudgementError(
            f"only {coverage:.0%} of the clip's audio has been received so far: play the clip to its end"
        )


def listening_slot(*, earliest: datetime, seconds: float, taken: list[tuple[datetime, datetime]]) -> datetime:
    """The earliest start >= `earliest` of a stretch of `seconds` overlapping none of the `taken` stretches."""
    start, length = earliest, timedelta(seconds=seconds)
    for taken_from, taken_until in sorted(taken):
        if taken_until <= start:
            continue
        if start + length <= taken_from:
            break
        start = max(start, taken_until)
    return start


def _proof_and_taken_read(item_id, rater_id):
    """The statement of _proof_and_taken (its values as keywords, so that it compiles once with markers)."""
    first_served = AssignmentItem.objects.filter(pk=item_id).values("audio_first_served_at")
    return (
        AssignmentItem.objects.filter(assignment__rater_id=rater_id)
        .filter(Q(pk=item_id) | Q(listening_from__isnull=False, listening_until__gt=Subquery(first_served)))
        .values(
            "pk",
            "listened_at",
            "audio_served",
            "audio_first_served_at",
            "clip__rater_audio",
            "clip__duration_seconds",
            "listening_from",
            "listening_until",
        )
    )


# Every "listened" report runs these two; compiling them was most of their CPU.
_PROOF_AND_TAKEN = CompiledRead(_proof_and_taken_read, item_id=-2_100_000_031, rater_id=-2_100_000_032)
_RATER_LOCK = CompiledRead(
    lambda user_id: get_user_model()._default_manager.select_for_update().filter(pk=user_id).values("pk"),
    user_id=-2_100_000_033,
)


def _proof_and_taken(*, item: AssignmentItem, rater_id: int) -> tuple[dict, list[tuple[datetime, datetime]]]:
    """The item's listening proof as stored now, and the stretches credited to the rater's other items that end
    after its first audio byte (the only ones its own stretch can collide with), read in one query: the item's
    row and those rows together (each was a query of its own on every "listened" report)."""
    own, taken = None, []
    for row in _PROOF_AND_TAKEN.rows(item_id=item.pk, rater_id=rater_id):
        if row["pk"] == item.pk:
            own = row
        else:
            taken.append((row["listening_from"], row["listening_until"]))
    if own is None:
        raise AssignmentItem.DoesNotExist(f"assignment item {item.pk}")
    return own, taken


def item_mark_listened(*, item: AssignmentItem) -> AssignmentItem:
    """Record that the rater heard the clip, if the served audio and the rater's listening clock prove it
    (else JudgementError, nothing stored).

    The rater's user row is locked, so two reports at once (two tabs, a script) are placed on the clock
    one after the other; a repeated report changes nothing.
    """
    with transaction.atomic():
        # An item never changes hands (its assignment is the rater's): the rater is the one it was loaded with.
        rater_id = item.assignment.rater_id
        _RATER_LOCK.rows(user_id=rater_id)
        row, taken = _proof_and_taken(item=item, rater_id=rater_id)
        item.listened_at = row["listened_at"]
        if item.listened_at is not None:
            return item
        item.audio_served, item.audio_first_served_at = row["audio_served"], row["audio_first_served_at"]
        listening_proof_check(item=item, rater_audio_name=row["clip__rater_audio"] or "")
        now = timezone.now()
        required = listening_seconds_for(row["clip__duration_seconds"])
        start = listening_slot(earliest=item.audio_first_served_at, seconds=required, taken=taken)
        until = start + timedelta(seconds=required)
        if until > now:
            if start == item.audio_first_served_at:
                raise JudgementError(
                    f"the clip needs {required:.1f} s of listening; its audio started "
                    f"{(now - start).total_seconds():.1f} s ago"
                )
            raise JudgementError(
                f"the clip needs {required:.1f} s of listening, counted on one clock across all your clips "
                f"(one is heard at a time): it can be marked heard in {(until - now).total_seconds():.1f} s"
            )
        AssignmentItem.objects.filter(pk=item.pk).update(listened_at=now, listening_from=start, listening_until=until)
        item.listened_at, item.listening_from, item.listening_until = now, start, until
    return item
