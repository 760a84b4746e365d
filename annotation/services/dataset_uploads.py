"""A new dataset from uploaded audio, imported by a worker: the page stores the upload, a task imports it.

Decoding a thousand files takes minutes, longer than a web request may last, so the page only checks what
it can at once (the name, the number and size of the files), stores the files under a random folder of the
default storage (local or S3: wherever the worker runs, it reads them there) and records a DatasetUpload.
The task claims the record (a conditional update: a second delivery of the message does nothing), runs
`dataset_from_audio_create` (all or nothing, corpus/services/import_uploads.py) while counting decoded files for the
page's progress bar, records what it created or every problem, and deletes the stored upload either way.

The same record and task import audio for an existing dataset's clips (`clip_audio_upload_create`) and data files
(`data_file_upload_create`: judgements, annotations, references, whose importers parse the whole file before
writing anything in one transaction): so no import runs inside a web request, each has a page that follows it,
and the importer's named errors reach that page as they are.
"""

import logging
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from django.core.files import File
from django.core.files.storage import default_storage
from django.utils import timezone

from annotation.services.file_imports import file_import_kind_get
from corpus.models import Dataset, DatasetUpload
from corpus.services import import_uploads
from corpus.services.import_uploads import MEGABYTE, clip_audio_upload_attach, dataset_from_audio_create
from corpus.services.importing import ImportDataError, dataset_name_validate

logger = logging.getLogger("captioneval.imports")

UPLOAD_FOLDER = "dataset-uploads"
COPY_CHUNK_BYTES = MEGABYTE


def dataset_upload_create(
    *, dataset_name: str, description: str, audio_uploads: Sequence[File], captions_upload: File | None, uploaded_by
) -> DatasetUpload:
    """Check what can be checked at once, store the files and record the upload (PENDING). Raises ImportDataError;
    then nothing is stored."""
    dataset_name_validate(name=dataset_name)
    if Dataset.objects.filter(name=dataset_name).exists():
        raise ImportDataError(f'dataset name "{dataset_name}": a dataset of this name exists; choose another name')
    _audio_uploads_check(audio_uploads)
    if captions_upload is not None:
        _names_check([captions_upload])
        import_uploads.uploaded_content_read(upload=captions_upload)  # refuses a file past the size limit
    return _stored_record(
        [*audio_uploads, *([captions_upload] if captions_upload else [])],
        captions_last=captions_upload is not None,
        dataset_name=dataset_name,
        description=description,
        uploaded_by=uploaded_by,
    )


def clip_audio_upload_create(*, dataset: Dataset, audio_uploads: Sequence[File], uploaded_by) -> DatasetUpload:
    """Store audio files or zips for the clips of an existing dataset and record the upload (PENDING).
    Raises ImportDataError; then nothing is stored."""
    _audio_uploads_check(audio_uploads)
    return _stored_record(
        audio_uploads,
        kind=DatasetUpload.CLIP_AUDIO,
        dataset_name=dataset.name,
        dataset=dataset,
        uploaded_by=uploaded_by,
    )


def data_file_upload_create(
    *, kind: str, dataset_name: str, upload: File, uploaded_by, options: dict[str, str] | None = None
) -> DatasetUpload:
    """Store one data file of a registered kind for a dataset (new or existing) and record the upload (PENDING)
    with the kind's options as chosen (the defaults for those not given). Raises ImportDataError; then nothing is
    stored."""
    options = file_import_kind_get(kind).options_clean(options or {})
    dataset_name_validate(name=dataset_name)
    _names_check([upload])
    if upload.size is not None and upload.size > import_uploads.MAX_DATA_FILE_BYTES:
        raise ImportDataError(
            f"{upload.name}: larger than the limit of {import_uploads.MAX_DATA_FILE_BYTES / MEGABYTE:g} MB"
        )
    return _stored_record([upload], kind=kind, dataset_name=dataset_name, uploaded_by=uploaded_by, options=options)


def _audio_uploads_check(audio_uploads: Sequence[File]) -> None:
    if not audio_uploads:
        raise ImportDataError("audio: no audio file uploaded")
    # Zips are counted and measured by the worker when it unpacks them; plain files can be refused now.
    total = sum(upload.size or 0 for upload in audio_uploads)
    if total > import_uploads.MAX_AUDIO_BYTES:
        raise ImportDataError(
            f"audio: {total / MEGABYTE:.0f} MB uploaded; the limit is {import_uploads.MAX_AUDIO_BYTES // MEGABYTE} MB"
        )
    if len(audio_uploads) > import_uploads.MAX_AUDIO_FILES:
        raise ImportDataError(f"audio: {len(audio_uploads)} files; the limit is {import_uploads.MAX_AUDIO_FILES}")
    _names_check(audio_uploads)


def _names_check(uploads: Sequence[File]) -> None:
    for upload in uploads:
        if "\x00" in upload.name:  # the record keeps the name, and PostgreSQL cannot hold a NUL character
            raise ImportDataError(f"{upload.name!r}: a file name must not contain a NUL character")


def _stored_record(uploads: Sequence[File], *, captions_last: bool = False, **fields) -> DatasetUpload:
    """Store the uploads under a folder of their own and record them; a failure deletes what was stored."""
    folder = f"{UPLOAD_FOLDER}/{secrets.token_hex(16)}"
    stored: list[str] = []
    try:
        files = [_store(upload, folder, index, stored) for index, upload in enumerate(uploads)]
        captions = files.pop() if captions_last else {}
        return DatasetUpload.objects.create(files=files, captions=captions, **fields)
    except BaseException:
        for name in stored:
            default_storage.delete(name)
        raise


def _store(upload: File, folder: str, index: int, stored: list[str]) -> dict:
    # Our own object name (the original may hold characters a storage refuses); the suffix keeps the format.
    suffix = "".join(char for char in PurePosixPath(upload.name).suffix.lower() if char.isalnum() or char == ".")
    upload.seek(0)
    name = default_storage.save(f"{folder}/{index:05d}{suffix[:10]}", upload)
    stored.append(name)
    return {"name": upload.name, "stored": name, "size": upload.size}


def dataset_upload_import(*, upload_id: int) -> str:
    """The task's work: import a PENDING upload once. Returns its final status (or "skipped" when another
    delivery of the message has claimed it)."""
    claimed = DatasetUpload.objects.filter(pk=upload_id, status=DatasetUpload.Status.PENDING).update(
        status=DatasetUpload.Status.RUNNING, started_at=timezone.now(), updated_at=timezone.now()
    )
    if claimed != 1:
        return "skipped"
    upload = DatasetUpload.objects.get(pk=upload_id)
    try:
        summary = _import_stored(upload)
    except ImportDataError as error:
        _finish(upload, status=DatasetUpload.Status.FAILED, errors=str(error).splitlines())
    except Exception as error:  # a fault of ours, not of the upload: say so on the page, keep the traceback in the log
        logger.exception("dataset upload %s failed", upload_id)
        _finish(upload, status=DatasetUpload.Status.FAILED, errors=[f"internal error: {type(error).__name__}: {error}"])
    else:
        dataset = Dataset.objects.filter(name=upload.dataset_name).first()
        _finish(upload, status=DatasetUpload.Status.IMPORTED, summary=summary.as_dict(), dataset=dataset)
    finally:
        for entry in [*upload.files, upload.captions]:
            if entry:
                default_storage.delete(entry["stored"])
    return upload.status


def _import_stored(upload: DatasetUpload):
    """Copy the stored files to a local folder (the importers and ffmpeg read local files) and import them."""
    with tempfile.TemporaryDirectory(prefix="dataset-upload-") as folder:
        opened = []
        try:
            files = [_local_copy(entry, Path(folder), opened) for entry in upload.files]
            captions = _local_copy(upload.captions, Path(folder), opened) if upload.captions else None

            def progress(done: int, total: int) -> None:
                DatasetUpload.objects.filter(pk=upload.pk).update(
                    audio_done=done, audio_total=total, updated_at=timezone.now()
                )

            if upload.kind == DatasetUpload.NEW_DATASET:
                return dataset_from_audio_create(
                    dataset_name=upload.dataset_name,
                    description=upload.description,
                    audio_uploads=files,
                    captions_upload=captions,
                    progress=progress,
                )
            if upload.kind == DatasetUpload.CLIP_AUDIO:
                return clip_audio_upload_attach(
                    dataset_name=upload.dataset_name, audio_uploads=files, progress=progress
                )
            importer = file_import_kind_get(upload.kind).importer
            (data_file,) = files
            data_file.seek(0)
            return importer(data_file.read(), data_file.name, upload.dataset_name, **upload.options)
        finally:
            for handle in opened:
                handle.close()


def _local_copy(entry: dict, folder: Path, opened: list) -> File:
    path = folder / PurePosixPath(entry["stored"]).name
    try:
        with default_storage.open(entry["stored"], "rb") as source, open(path, "wb") as target:
            shutil.copyfileobj(source, target, COPY_CHUNK_BYTES)
    except FileNotFoundError:
        raise ImportDataError(f"{entry['name']}: the uploaded file is missing from storage; upload it again") from None
    handle = File(open(path, "rb"), name=entry["name"])
    opened.append(handle)
    return handle


def _finish(upload: DatasetUpload, *, status: str, errors=None, summary=None, dataset=None) -> None:
    upload.status = status
    upload.errors = errors or []
    upload.summary = summary or {}
    upload.dataset = dataset or upload.dataset  # audio for an existing dataset keeps it when refused
    upload.finished_at = timezone.now()
    upload.save(update_fields=["status", "errors", "summary", "dataset", "finished_at", "updated_at"])
