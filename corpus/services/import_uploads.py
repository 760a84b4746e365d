"""Imports started from a page: a new dataset made from uploaded audio, and reading uploaded files for the importers.

A new dataset from audio (`dataset_from_audio_create`; the page stores the upload and a worker runs it,
annotation/services/dataset_uploads.py): several audio files and/or zip archives of them, in any format ffmpeg decodes,
plus an optional reference-captions file (the references importer's CSV layouts, or JSON
`{"file name": ["caption", ...]}`). Everything is checked before anything is written: every file decoded
(all failures listed, each naming its file), the captions file parsed (rows named) and matched to the audio
files. Then one transaction creates the dataset, its clips (external id = the file's name, as Clotho names
clips), their references and their stored audio; a failure rolls it back and deletes the files stored so far.

Audio for the clips of an existing dataset (`clip_audio_upload_attach`): the same files and zips, staged the same
way, then matched to the clips by name (services/audio_import.py).

Data files (judgements, annotations, references) are imported by a worker too (annotation/services/dataset_uploads.py),
within MAX_DATA_FILE_BYTES.
"""

import json
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.core.files import File
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from common.structured_log import logged_import
from common.zip_limits import zip_member_count
from corpus.models import Clip, Dataset
from corpus.services.audio import AudioDecodeError, AudioInfo, audio_inspect
from corpus.services.audio_import import AudioFile, clip_audio_attach
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_name_validate,
    file_stem,
    json_nul_check,
    json_type_name,
    text_field_check,
)
from corpus.services.rater_audio import rater_wav_from_path
from corpus.services.references_import import ClipReferences, references_parse, references_store

MEGABYTE = 1024 * 1024
# One upload is one worker task. Measured on a 2-core machine with both cores busy: about 0.75 s per short
# file that ffmpeg decodes and 0.5 s per MB of 24-bit WAV, so the largest upload takes minutes, not hours.
MAX_AUDIO_FILES = 1000
ZIP_MAX_ENTRIES = 4 * MAX_AUDIO_FILES  # each file, its folders and a macOS __MACOSX copy
MAX_AUDIO_BYTES = 1024 * MEGABYTE  # all audio files together, after unpacking zips
# Judgement, annotation and caption files, imported by a worker that holds the parsed file in memory: Clotho-Eval's
# 0.7 MB takes about 1 s, so the largest file takes about a minute and a few hundred MB of the worker's memory.
MAX_DATA_FILE_BYTES = 50 * MEGABYTE
COPY_CHUNK_BYTES = MEGABYTE
NAME_LENGTH = Clip._meta.get_field("external_id").max_length
CAPTION_LENGTH = 10_000


@dataclass
class _Budget:
    """Bytes the upload's audio may still take."""

    remaining: int

    def spend(self, number: int, where: str) -> None:
        self.remaining -= number
        if self.remaining < 0:
            raise self.exceeded(where)

    @staticmethod
    def exceeded(where: str) -> ImportDataError:
        return ImportDataError(f"{where}: the audio files exceed the limit of {MAX_AUDIO_BYTES // MEGABYTE} MB")


@dataclass(frozen=True)
class StagedAudio:
    """An uploaded audio file copied to a temporary folder."""

    name: str  # the file's own name: the clip's external id and file name
    where: str  # how messages name it: the upload, or "archive.zip: folder/name.wav"
    path: Path


def uploaded_content_read(*, upload: File) -> bytes:
    """The upload's bytes, refused (naming the file and the limit) past MAX_DATA_FILE_BYTES."""
    if upload.size is not None and upload.size > MAX_DATA_FILE_BYTES:
        raise ImportDataError(f"{upload.name}: larger than the limit of {MAX_DATA_FILE_BYTES / MEGABYTE:g} MB")
    upload.seek(0)
    return upload.read()


def json_content_load(*, content: bytes, source_name: str):
    """Parse JSON bytes; ImportDataError names the file and where the JSON breaks."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportDataError(f"{source_name}: not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ImportDataError(
            f"{source_name}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        ) from None


@logged_import("dataset_from_audio")
def dataset_from_audio_create(
    *,
    dataset_name: str,
    description: str = "",
    audio_uploads: Sequence[File],
    captions_upload: File | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Create dataset `dataset_name` from the uploads; all or nothing. Raises ImportDataError naming each problem.

    `progress(done, total)` is told after each step (decoding a file, then storing it and its rater copy: two steps
    per file), for the page's progress bar."""
    dataset_name_validate(name=dataset_name)
    existing = Dataset.objects.filter(name__iexact=dataset_name).values_list("name", flat=True).first()
    if existing is not None:  # names are compared without case: "DEMO" beside "demo" reads as one dataset
        raise ImportDataError(
            f'dataset name "{dataset_name}": a dataset of this name exists ("{existing}", case ignored); '
            "choose another name"
        )
    if not audio_uploads:
        raise ImportDataError("audio: no audio file uploaded")
    summary = ImportSummary(source_name=f"{len(audio_uploads)} uploaded file{'s' if len(audio_uploads) != 1 else ''}")
    with tempfile.TemporaryDirectory(prefix="dataset-upload-") as folder:
        staged = _audio_stage(audio_uploads, Path(folder))
        references, captions_name = [], ""
        if captions_upload is not None:
            captions_name = captions_upload.name
            references = captions_parse(
                content=uploaded_content_read(upload=captions_upload), source_name=captions_name
            )
            _references_match(references, staged, captions_name)
        steps = _Steps(total=2 * len(staged), progress=progress)
        decoded = _audio_decode(staged, steps)
        _dataset_write(
            dataset_name=dataset_name,
            description=description,
            decoded=decoded,
            references=references,
            captions_name=captions_name,
            summary=summary,
            steps=steps,
        )
    summary.extra["clips without reference captions"] = len(staged) - len(references)
    return summary


def clip_audio_upload_attach(
    *, dataset_name: str, audio_uploads: Sequence[File], progress: Callable[[int, int], None] | None = None
) -> ImportSummary:
    """Attach uploaded audio files and zips to the existing dataset's clips they name; all or nothing."""
    if not audio_uploads:
        raise ImportDataError("audio: no audio file uploaded")
    source_name = f"{len(audio_uploads)} uploaded file{'s' if len(audio_uploads) != 1 else ''}"
    with tempfile.TemporaryDirectory(prefix="clip-audio-upload-") as folder:
        staged = _audio_stage(audio_uploads, Path(folder))
        return clip_audio_attach(
            files=[AudioFile(name=item.name, path=item.path) for item in staged],
            dataset_name=dataset_name,
            source_name=source_name,
            progress=progress,
        )


# --- Audio ------------------------------------------------------------------------------------------


def _audio_stage(uploads: Sequence[File], folder: Path) -> list[StagedAudio]:
    """Copy every upload (and every member of an uploaded zip) to `folder`, within the count and size limits."""
    staged: list[StagedAudio] = []
    budget = _Budget(remaining=MAX_AUDIO_BYTES)
    for upload in uploads:
        if _is_zip(upload):
            _zip_stage(upload, folder, staged, budget)
            continue
        name = _own_name(upload.name)
        if not name:
            continue  # a hidden file such as .DS_Store
        upload.seek(0)
        _staged_add(staged, folder, name=name, where=upload.name, source=upload, size=upload.size, budget=budget)
    first_of: dict[str, str] = {}
    problems = []
    for item in staged:
        if item.name in first_of:
            problems.append(f'{item.where}: another file has the same name "{item.name}" ({first_of[item.name]})')
        first_of.setdefault(item.name, item.where)
    if not staged:
        problems.append("audio: the upload holds no audio file")
    if problems:
        raise ImportDataError("\n".join(problems))
    return staged


def _is_zip(upload: File) -> bool:
    if upload.name.lower().endswith(".zip"):
        return True
    upload.seek(0)
    return upload.read(4) == b"PK\x03\x04"


def _zip_stage(upload: File, folder: Path, staged: list[StagedAudio], budget: _Budget) -> None:
    upload.seek(0)
    # Counted from the end record before zipfile reads the whole directory into memory.
    entries = zip_member_count(upload)
    if entries is not None and entries > ZIP_MAX_ENTRIES:
        raise ImportDataError(
            f"{upload.name}: holds {entries} entries; an upload takes at most {MAX_AUDIO_FILES} audio files "
            f"({ZIP_MAX_ENTRIES} entries with folders and __MACOSX copies): refused without unpacking it"
        )
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError):
        raise ImportDataError(f"{upload.name}: not a readable zip archive") from None
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir() and _own_name(info.filename)]
        members = [info for info in members if not info.filename.startswith("__MACOSX/")]
        declared = sum(info.file_size for info in members)
        if declared > budget.remaining:
            raise ImportDataError(
                f"{upload.name}: unpacks to {declared / MEGABYTE:.0f} MB of files; the limit is "
                f"{MAX_AUDIO_BYTES // MEGABYTE} MB of audio per upload"
            )
        for info in members:
            where = f"{upload.name}: {info.filename}"
            if info.flag_bits & 0x1:
                raise ImportDataError(f"{where}: encrypted members cannot be read")
            try:
                with archive.open(info) as member:
                    _staged_add(
                        staged,
                        folder,
                        name=_own_name(info.filename),
                        where=where,
                        source=member,
                        size=None,
                        budget=budget,
                    )
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
                raise ImportDataError(f"{where}: cannot be unpacked ({error})") from None


def _staged_add(staged, folder: Path, *, name: str, where: str, source, size: int | None, budget: _Budget) -> None:
    """Copy `source` into the folder, counting its bytes against the upload's budget as they are read (a zip
    member's declared size may lie)."""
    if len(staged) >= MAX_AUDIO_FILES:
        raise ImportDataError(f"{where}: more than {MAX_AUDIO_FILES} audio files in one upload (the limit)")
    if "\x00" in name or len(name) > NAME_LENGTH:
        raise ImportDataError(f"{where}: the file name must be at most {NAME_LENGTH} characters without NUL")
    if size is not None and size > budget.remaining:
        raise budget.exceeded(where)
    # A stored name of our own: the original may hold characters a file system refuses; the suffix tells
    # ffmpeg the format.
    suffix = "".join(char for char in PurePosixPath(name).suffix.lower() if char.isalnum() or char == ".")[:10]
    path = folder / f"{len(staged):05d}{suffix}"
    with open(path, "wb") as handle:
        chunks = (
            source.chunks(COPY_CHUNK_BYTES)
            if hasattr(source, "chunks")
            else iter(lambda: source.read(COPY_CHUNK_BYTES), b"")
        )
        for chunk in chunks:
            budget.spend(len(chunk), where)
            handle.write(chunk)
    staged.append(StagedAudio(name=name, where=where, path=path))


def _own_name(name: str) -> str:
    """The file's own name without folders (either slash); empty for hidden files, which are not audio."""
    own = PurePosixPath(name.replace("\\", "/")).name.strip()
    return "" if own.startswith(".") else own


@dataclass
class _Steps:
    """Counts the import's steps for `progress(done, total)`, when someone follows them."""

    total: int
    progress: Callable[[int, int], None] | None
    done: int = 0

    def step(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)


def _audio_decode(staged: list[StagedAudio], steps: _Steps) -> list[tuple[StagedAudio, AudioInfo]]:
    """Decode every file; lists every file that is not audio."""
    decoded, problems = [], []
    for item in staged:
        try:
            decoded.append((item, audio_inspect(path=item.path, file_name=item.where)))
        except AudioDecodeError as error:
            problems.append(str(error))
        steps.step()
    if problems:
        raise ImportDataError("\n".join(problems))
    return decoded


# --- Reference captions ----------------------------------------------------------------------------


def captions_parse(*, content: bytes, source_name: str) -> list[ClipReferences]:
    """Reference lists of a CSV (the references importer's Clotho or AudioCaps layout) or a JSON object
    {"file name": ["caption", ...]} (a single string is one caption)."""
    if content.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return _captions_json(json_content_load(content=content, source_name=source_name), source_name)
    return references_parse(content=content, source_name=source_name)


def _captions_json(data, source_name: str) -> list[ClipReferences]:
    if not isinstance(data, dict):
        raise ImportDataError(f'{source_name}: expected a JSON object {{"file name": ["caption", ...]}}')
    json_nul_check(data=data, source_name=source_name)
    clips, problems = [], []
    for number, (key, value) in enumerate(data.items(), start=1):
        where = f'{source_name}: entry {number} ("{key}")'
        texts = [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not texts:
            problems.append(f"{where}: expected a list of captions, got {json_type_name(value)}")
            continue
        try:
            name = text_field_check(value=key, where=f"{source_name}: entry {number}", max_length=NAME_LENGTH)
            checked = [
                text_field_check(value=text, where=f"{where} caption {index}", max_length=CAPTION_LENGTH).strip()
                for index, text in enumerate(texts, start=1)
            ]
        except ImportDataError as error:
            problems.append(str(error))
            continue
        clips.append(
            ClipReferences(
                external_id=name,
                file_name=name,
                first_row=number,
                texts=checked,
                labels=[f"caption_{index}" for index in range(1, len(checked) + 1)],
            )
        )
    if not clips and not problems:
        problems.append(f"{source_name}: no reference captions in the file")
    if problems:
        raise ImportDataError("\n".join(problems))
    return clips


def _references_match(references: list[ClipReferences], staged: list[StagedAudio], source_name: str) -> None:
    """Every reference list must name an uploaded file, as the references importer matches clips (the name,
    with or without extension; AudioCaps rows also `Y<id>.wav`)."""
    names = {name for item in staged for name in (item.name, file_stem(item.name))}
    row_word = "entry" if source_name.lower().endswith(".json") else "row"
    problems = [
        f'{source_name}: {row_word} {spec.first_row}: "{spec.external_id}" names no uploaded audio file'
        for spec in references
        if not {spec.external_id, spec.file_name, file_stem(spec.file_name)} & names
    ]
    if problems:
        raise ImportDataError("\n".join(problems))


# --- Writing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StoredAudio:
    name: str  # the clip's external id
    info: AudioInfo
    audio: str  # storage names
    rater_audio: str


def _dataset_write(*, dataset_name, description, decoded, references, captions_name, summary, steps) -> None:
    """Store every file and its rater copy first, then create the rows in one short transaction.

    clips_store_audio (services/audio.py) makes the rater copies inside its transaction; for a thousand files
    that would hold SQLite's write lock for minutes (every other write in the app waiting, then failing). Here
    the slow part runs before the transaction, and the files are deleted again if anything fails.
    """
    audio_field, rater_field = Clip._meta.get_field("audio"), Clip._meta.get_field("rater_audio")
    storage = audio_field.storage
    stored: list[_StoredAudio] = []
    saved: list[str] = []
    try:
        for item, info in decoded:
            with open(item.path, "rb") as handle:
                audio_name = storage.save(audio_field.generate_filename(None, item.name), File(handle))
            saved.append(audio_name)
            rater_content = ContentFile(rater_wav_from_path(item.path))
            rater_name = rater_field.storage.save(rater_field.generate_filename(None, "rater.wav"), rater_content)
            saved.append(rater_name)
            stored.append(_StoredAudio(name=item.name, info=info, audio=audio_name, rater_audio=rater_name))
            steps.step()
        with transaction.atomic():
            try:
                with transaction.atomic():
                    dataset = Dataset.objects.create(name=dataset_name, description=description)
            except IntegrityError:  # created by someone else since the check
                raise ImportDataError(f'dataset name "{dataset_name}": a dataset of this name exists') from None
            summary.add("datasets", "created")
            Clip.objects.bulk_create(
                Clip(
                    dataset=dataset,
                    external_id=entry.name,
                    file_name=entry.name,
                    audio=entry.audio,
                    rater_audio=entry.rater_audio,
                    sha256=entry.info.sha256,
                    duration_seconds=entry.info.duration_seconds,
                    sample_rate=entry.info.sample_rate,
                    channels=entry.info.channels,
                    waveform_peaks=entry.info.waveform_peaks,
                )
                for entry in stored
            )
            summary.add("clips", "created", len(stored))
            summary.add("clip audio", "created", len(stored))
            if references:
                # The references importer's own counts of clips would say "unchanged" of the clips made above.
                references_summary = ImportSummary(source_name=captions_name)
                references_store(
                    dataset=dataset, clips=references, source_name=captions_name, summary=references_summary
                )
                summary.counts["reference captions"] = references_summary.counts["reference captions"]
    except BaseException:
        # The rows are rolled back (or were never written); the files stored for them would be orphans.
        for name in saved:
            storage.delete(name)
        raise
