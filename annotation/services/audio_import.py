"""Attach a folder of audio files to the clips of a dataset (the `import_audio` command).

A file matches a clip when its name, with or without extension, equals the clip's file_name or
external_id (also without extension); an AudioCaps file `Y<id>.wav` also matches external id `<id>`.
Every matched file is decoded before anything is stored, so one undecodable file fails the whole
import (naming it) and nothing is attached. Files that match no clip are reported, not decoded.
"""

import re
from pathlib import Path

from annotation.models import Clip
from annotation.services.audio import (
    AudioAttachment,
    audio_inspect,
    clip_audio_is_current,
    clips_store_audio,
    file_sha256,
)
from annotation.services.importing import ImportDataError, ImportSummary, dataset_get_existing
from common.structured_log import logged_import

AUDIOCAPS_FILE_NAME = re.compile(r"^Y(?P<youtube_id>.+)\.[^.]+$")


def clip_lookup_build(clips) -> dict[str, Clip]:
    """Every name a file may carry for a clip -> the clip; exact names win over names without extension."""
    exact: dict[str, Clip] = {}
    without_extension: dict[str, Clip] = {}
    for clip in clips:
        for name in (clip.file_name, clip.external_id):
            if name:
                exact.setdefault(name, clip)
                without_extension.setdefault(Path(name).stem, clip)
    return {**without_extension, **exact}


def clip_for_file_name(lookup: dict[str, Clip], file_name: str) -> Clip | None:
    candidates = [file_name, Path(file_name).stem]
    audiocaps = AUDIOCAPS_FILE_NAME.match(file_name)
    if audiocaps:
        candidates.append(audiocaps.group("youtube_id"))
    for candidate in candidates:
        if candidate in lookup:
            return lookup[candidate]
    return None


@logged_import("audio_directory")
def audio_directory_import(*, directory: Path | str, dataset_name: str) -> ImportSummary:
    directory = Path(directory)
    if not directory.is_dir():
        raise ImportDataError(f"{directory}: no such folder")
    summary = ImportSummary(source_name=str(directory))
    dataset = dataset_get_existing(name=dataset_name)
    lookup = clip_lookup_build(Clip.objects.filter(dataset=dataset).select_related("dataset"))

    matched: dict[int, Path] = {}
    unmatched: list[str] = []
    for path in sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")):
        clip = clip_for_file_name(lookup, path.name)
        if clip is None:
            unmatched.append(path.name)
            continue
        if clip.pk in matched:
            raise ImportDataError(f"{path.name}: clip {clip.external_id} already matched by {matched[clip.pk].name}")
        matched[clip.pk] = path

    clips_by_pk = {clip.pk: clip for clip in lookup.values()}
    attachments, unchanged = [], 0
    for pk, path in matched.items():
        clip = clips_by_pk[pk]
        # Hashing is cheap next to decoding: a file the clip already holds is not decoded again.
        if clip_audio_is_current(clip=clip, sha256=file_sha256(path)):
            unchanged += 1
            continue
        attachments.append(
            AudioAttachment(
                clip=clip, path=path, file_name=path.name, info=audio_inspect(path=path, file_name=path.name)
            )
        )
    replacing = sum(bool(attachment.clip.audio) for attachment in attachments)
    changed = clips_store_audio(attachments=attachments)
    summary.add("clip audio", "created", changed - replacing)
    summary.add("clip audio", "updated", replacing)
    summary.add("clip audio", "unchanged", unchanged)
    summary.extra["files without a matching clip"] = len(unmatched)
    summary.notes.extend(f"no clip matches {name}" for name in unmatched)
    return summary
