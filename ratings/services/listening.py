"""Listening proven by what the server served, not by a timer.

An item counts as heard ("listened", which submitting needs) only when both hold, as the server itself
observed them:
- it sent this item's rater audio (the clip's metadata-free copy, under the item's own URL) covering at
  least LISTENED_COVERAGE of the file, in one response or in any number of byte ranges;
- since the first of those bytes went out, at least the listening time has passed: the clip's duration,
  or MUST_LISTEN_SECONDS when that is set and shorter.

So opening items and posting "listened" after a pause is refused when no audio was fetched, and
fetching the file and posting at once is refused until the clip could have been played. The record is
kept per assignment item (`AssignmentItem.audio_served`: the file, its size and the merged byte ranges
sent; `audio_first_served_at`), so it is per rater, and per crowd participant alike. Ranges are
recorded when a response's body is done, counting only the chunks the server handed on (a client that
stops reading early gets only what it read counted).
"""

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

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


def audio_served_record(*, item_id: int, file_name: str, size: int, first: int, count: int, started_at) -> None:
    """Add bytes [first, first + count) of `file_name` (of `size` bytes) to what the item's rater was sent.

    A different file than the one recorded (the clip got new audio) starts the record afresh. The row is
    locked, so ranges of simultaneous responses all count.
    """
    try:
        with transaction.atomic():
            item = (
                AssignmentItem.objects.select_for_update().only("audio_served", "audio_first_served_at").get(pk=item_id)
            )
            record = item.audio_served
            if record.get("file") != file_name or record.get("size") != size:
                record = {"file": file_name, "size": size, "ranges": []}
                item.audio_first_served_at = None
            record["ranges"] = ranges_merge(record["ranges"], first, first + count)
            item.audio_served = record
            if item.audio_first_served_at is None or started_at < item.audio_first_served_at:
                item.audio_first_served_at = started_at
            item.save(update_fields=["audio_served", "audio_first_served_at"])
    except Exception:  # the audio went out anyway; the rater can play it again to be counted
        logger.exception("could not record the audio served for assignment item %s", item_id)


def listening_proof_check(*, item: AssignmentItem, rater_audio_name: str, now=None) -> None:
    """Raise JudgementError, saying what is missing, unless the served audio proves the clip could be heard."""
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
    required = listening_seconds_required(item=item)
    elapsed = ((now or timezone.now()) - item.audio_first_served_at).total_seconds()
    if elapsed < required:
        raise JudgementError(f"the clip needs {required:.1f} s of listening; its audio started {elapsed:.1f} s ago")


def item_mark_listened(*, item: AssignmentItem) -> AssignmentItem:
    """Record that the rater heard the clip, if the served audio proves it (else JudgementError, nothing stored).

    Read from the row (the object may be older), without a lock: the served-audio record only grows, and
    the write is a conditional UPDATE (the first report wins, a repeated one changes nothing).
    """
    row = (
        AssignmentItem.objects.filter(pk=item.pk)
        .values("listened_at", "audio_served", "audio_first_served_at", "clip__rater_audio")
        .get()
    )
    item.listened_at = row["listened_at"]
    if item.listened_at is not None:
        return item
    item.audio_served, item.audio_first_served_at = row["audio_served"], row["audio_first_served_at"]
    now = timezone.now()
    listening_proof_check(item=item, rater_audio_name=row["clip__rater_audio"] or "", now=now)
    if AssignmentItem.objects.filter(pk=item.pk, listened_at__isnull=True).update(listened_at=now):
        item.listened_at = now
    else:
        item.refresh_from_db(fields=["listened_at"])
    return item
