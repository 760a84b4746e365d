"""Attach audio files to the clips of an existing dataset: a folder (the `import_audio` command) or uploaded files
(the dataset's audio page, through annotation/services/dataset_uploads.py).

A file matches a clip when its name, with or without extension, equals the clip's file_name or
external_id (also without extension); an AudioCaps file `Y<id>.wav` also matches external id `<id>`.
Every matched file is decoded before anything is stored, so an undecodable file fails the whole
import (each is named) and nothing is attached. Files that match no clip are reported, not decoded.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from common.structured_log import logged_import
from corpus.models import Clip
from corpus.services.audio import (
    AudioAttachment,
    AudioDecodeError,
    audio_inspect,
    clip_audio_is_current,
    clips_store_audio,
    file_sha256,
)
from corpus.services.importing import ImportDataError, ImportSummary, dataset_get_existing

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
    files = [
        AudioFile(name=path.name, path=path)
        for path in sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    ]
    return clip_audio_attach(files=files, dataset_name=dataset_name, source_name=str(directory))


@dataclass(frozen=True)
class AudioFile:
    """A local audio file and the name it was given (an upload's name; its copy may be named otherwise)."""

    name: str
    path: Path


def clip_audio_attach(
    *,
    files: Sequence[AudioFile],
    dataset_name: str,
    source_name: str,
    progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Attach the files to the existing dataset's clips they match; all or nothing. Every matched file is decoded
    before anything is stored (each undecodable file is named); `progress(done, total)` is told after each."""
    summary = ImportSummary(source_name=source_name)
    dataset = dataset_get_existing(name=dataset_name)
    lookup = clip_lookup_build(Clip.objects.filter(dataset=dataset).select_related("dataset"))

    matched: dict[int, AudioFile] = {}
    unmatched: list[str] = []
    for file in files:
        clip = clip_for_file_name(lookup, file.name)
        if clip is None:
            unmatched.append(file.name)
            continue
        if clip.pk in matched:
            raise ImportDataError(f"{file.name}: clip {clip.external_id} already matched by {matched[clip.pk].name}")
        matched[clip.pk] = file

    clips_by_pk = {clip.pk: clip for clip in lookup.values()}
    attachments, unchanged, problems = [], 0, []
    for done, (pk, file) in enumerate(matched.items(), start=1):
        clip = clips_by_pk[pk]
        # Hashing is cheap next to decoding: a file the clip already holds is not decoded again.
        if clip_audio_is_current(clip=clip, sha256=file_sha256(file.path)):
            unchanged += 1
        else:
            try:
                info = audio_inspect(path=file.path, file_name=file.name)
            except AudioDecodeError as error:
                problems.append(str(error))
            else:
                attachments.append(AudioAttachment(clip=clip, path=file.path, file_name=file.name, info=info))
        if progress is not None:
            progress(done, len(matched))
    if problems:
        raise ImportDataError("\n".join(problems))
    replacing = sum(bool(attachment.clip.audio) for attachment in attachments)
    changed = clips_store_audio(attachments=attachments)
    summary.add("clip audio", "created", changed - replacing)
    summary.add("clip audio", "updated", replacing)
    summary.add("clip audio", "unchanged", unchanged)
    summary.extra["files without a matching clip"] = len(unmatched)
    summary.notes.extend(f"no clip matches {name}" for name in unmatched)
    return summary
