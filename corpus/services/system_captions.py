"""Submit a captioning system's captions for a dataset's clips (DCASE CSV or JSON), all or nothing.

Input: a CSV with header `file_name,caption_predicted` (the DCASE submission format; `file_name` is a
clip's file name with or without its extension, or its external id) or a JSON object {clip: caption}.

Rules:
- Every problem is listed (unknown or ambiguous clip, empty caption, a clip given twice, however
  spelled) with its row number and value, and nothing is written.
- A clip's caption that is already the system's current caption is left as it is, so importing the
  same file twice changes nothing.
- A changed caption replaces the system's caption for that clip: the old caption is marked superseded
  (kept, with whatever ratings and pairs point at it, but no longer the system's caption on leaderboards
  and not scored again); an earlier caption with the same text is brought back rather than duplicated.
  Clips the file does not mention keep their captions.
"""

import csv
import hashlib
import io
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from common.structured_log import logged_import
from corpus.models import Caption, CaptioningSystem, Clip, Dataset, SystemSubmission
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_get_existing,
    file_stem,
    json_type_name,
    text_nul_check,
)

CSV_COLUMNS = ("file_name", "caption_predicted")
SYSTEM_NAME_LENGTH = CaptioningSystem._meta.get_field("name").max_length
SOURCE_LABEL_LENGTH = Caption._meta.get_field("source_label").max_length

logger = logging.getLogger("captioneval.imports")


@dataclass(frozen=True)
class SubmittedRow:
    where: str  # "row 7" (CSV line) or 'key "x.wav"' (JSON)
    clip_reference: str
    caption: str
    problem: str = ""  # a value of the wrong type, found while reading


def submission_rows_parse(*, content: bytes, source_name: str) -> list[SubmittedRow]:
    """The file's rows; the format follows the content (a JSON object, else CSV)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportDataError(f"{source_name}: not UTF-8 text (byte {error.start})") from None
    text_nul_check(text=text, source_name=source_name)
    if text.lstrip().startswith("{"):
        return _json_rows(text, source_name)
    return _csv_rows(text, source_name)


def _json_rows(text: str, source_name: str) -> list[SubmittedRow]:
    def keep_duplicates(pairs):
        return pairs  # json.loads would keep only the last of two equal keys

    try:
        pairs = json.loads(text, object_pairs_hook=keep_duplicates)
    except json.JSONDecodeError as error:
        raise ImportDataError(
            f"{source_name}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        ) from None
    if not isinstance(pairs, list) or any(not isinstance(pair, tuple) for pair in pairs):
        raise ImportDataError(f"{source_name}: expected a JSON object {{clip: caption}}")
    rows = []
    for number, (key, value) in enumerate(pairs, start=1):
        is_text = isinstance(value, str)
        rows.append(
            SubmittedRow(
                where=f"entry {number}",
                clip_reference=key,
                caption=value if is_text else "",
                problem="" if is_text else f'caption for "{key}" must be a string, got {json_type_name(value)}',
            )
        )
    return rows


def _csv_rows(text: str, source_name: str) -> list[SubmittedRow]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise ImportDataError(f"{source_name}: row 1: not CSV ({error})") from None
    columns = [column.strip().lower() for column in header or []]
    missing = [column for column in CSV_COLUMNS if column not in columns]
    if missing:
        raise ImportDataError(
            f"{source_name}: row 1: header must have columns {', '.join(CSV_COLUMNS)} (missing {', '.join(missing)}; "
            f"got {', '.join(header or []) or 'nothing'})"
        )
    name_column, caption_column = (columns.index(column) for column in CSV_COLUMNS)
    rows = []
    try:
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue  # blank line
            row = f"row {reader.line_num}"
            name = cells[name_column].strip() if len(cells) > name_column else ""
            caption = cells[caption_column] if len(cells) > caption_column else ""
            rows.append(SubmittedRow(where=row, clip_reference=name, caption=caption))
    except csv.Error as error:
        raise ImportDataError(f"{source_name}: row {reader.line_num}: not CSV ({error})") from None
    return rows


def clip_lookup(*, dataset: Dataset) -> dict[str, list[int]]:
    """Names a submission may use for each clip: external id, file name, both without extension."""
    names: dict[str, list[int]] = {}
    for clip_id, external_id, file_name in Clip.objects.filter(dataset=dataset).values_list(
        "pk", "external_id", "file_name"
    ):
        for name in {external_id, file_name, file_stem(external_id), file_stem(file_name)} - {""}:
            names.setdefault(name, []).append(clip_id)
    return names


def _resolve(rows: list[SubmittedRow], names: dict[str, list[int]], source_name: str) -> list[tuple[int, str, str]]:
    """(clip id, caption text, clip reference) per row, or ImportDataError listing every problem."""
    problems, resolved, first_row = [], [], {}
    for row in rows:
        reference = row.clip_reference
        where = f"{source_name}: {row.where}"
        clip_ids = names.get(reference) or names.get(file_stem(reference)) if reference else None
        if not reference:
            problems.append(f"{where}: file_name is empty")
        elif not clip_ids:
            problems.append(f'{where}: file_name "{reference}": no clip of this dataset has that file name or id')
        elif len(set(clip_ids)) > 1:
            problems.append(
                f'{where}: file_name "{reference}": matches {len(set(clip_ids))} clips; use the full file name'
            )
        caption = row.caption.strip()
        if row.problem:
            problems.append(f"{where}: {row.problem}")
        elif not caption:
            problems.append(f'{where}: caption for "{reference}" is empty')
        if clip_ids and len(set(clip_ids)) == 1:
            clip_id = clip_ids[0]
            if clip_id in first_row:
                problems.append(f'{where}: file_name "{reference}": the same clip as {first_row[clip_id]}')
            else:
                first_row[clip_id] = row.where
                if caption:
                    resolved.append((clip_id, caption, reference))
    if not rows:
        problems.append(f"{source_name}: no captions in the file")
    if problems:
        raise ImportDataError("\n".join(problems))
    return resolved


def system_captions_import_from_path(*, path: Path | str, dataset_name: str, system_name: str) -> ImportSummary:
    path = Path(path)
    if not path.is_file():
        raise ImportDataError(f"{path}: no such file")
    return system_captions_import(
        content=path.read_bytes(), source_name=path.name, dataset_name=dataset_name, system_name=system_name
    )


def system_name_validate(*, name: str) -> str:
    name = name.strip()
    if not name:
        raise ImportDataError("the system name must not be empty")
    if len(name) > SYSTEM_NAME_LENGTH:
        raise ImportDataError(f'system name "{name[:40]}…" is longer than {SYSTEM_NAME_LENGTH} characters')
    return name


@logged_import("system_captions")
def system_captions_import(*, content: bytes, source_name: str, dataset_name: str, system_name: str) -> ImportSummary:
    """Validate every row, then write in one transaction. Raises ImportDataError (every problem) before any write."""
    system_name = system_name_validate(name=system_name)
    dataset = dataset_get_existing(name=dataset_name)
    rows = submission_rows_parse(content=content, source_name=source_name)
    resolved = _resolve(rows, clip_lookup(dataset=dataset), source_name)
    summary = ImportSummary(source_name=source_name)
    with transaction.atomic():
        system, created = CaptioningSystem.objects.get_or_create(name=system_name)
        summary.add("captioning systems", "created" if created else "unchanged")
        _captions_replace(system=system, resolved=resolved, summary=summary)
    return summary


def system_captions_file(
    *, dataset: Dataset, system_name: str, captions: dict[int, tuple[str, str]], source_label: str
) -> tuple[CaptioningSystem, ImportSummary]:
    """File captions made elsewhere in the app (a model's answers) as a system's captions of the dataset's clips,
    in one transaction, with the same rules as an import. `captions`: {clip id: (text, note)}; the note says what
    a reader should know about the caption (e.g. the model heard only part of the clip)."""
    system_name = system_name_validate(name=system_name)
    known = Clip.objects.filter(dataset=dataset, pk__in=list(captions)).values_list("pk", flat=True)
    foreign = set(captions) - set(known)
    if foreign:
        raise ImportDataError(f"clip id(s) {sorted(foreign)[:5]} are not clips of dataset {dataset.name}")
    empty = [clip_id for clip_id, (text, _) in captions.items() if not text.strip()]
    if empty:
        raise ImportDataError(f"the caption of clip id(s) {sorted(empty)[:5]} is empty")
    resolved = [(clip_id, text.strip(), source_label) for clip_id, (text, _) in sorted(captions.items())]
    notes = {clip_id: note for clip_id, (_, note) in captions.items()}
    summary = ImportSummary(source_name=source_label)
    with transaction.atomic():
        system, created = CaptioningSystem.objects.get_or_create(name=system_name)
        summary.add("captioning systems", "created" if created else "unchanged")
        _captions_replace(system=system, resolved=resolved, summary=summary, notes=notes)
    return system, summary


def _captions_replace(
    *,
    system: CaptioningSystem,
    resolved: list[tuple[int, str, str]],
    summary: ImportSummary,
    notes: dict[int, str] | None = None,
) -> None:
    notes = notes or {}
    clip_ids = [clip_id for clip_id, _, _ in resolved]
    mine = (
        Caption.objects.corpus().filter(system=system, clip_id__in=clip_ids, role=Caption.Role.CANDIDATE).order_by("pk")
    )
    current: dict[int, list[Caption]] = {}
    earlier: dict[tuple[int, str], Caption] = {}
    for caption in mine:
        if caption.superseded_at is None:
            current.setdefault(caption.clip_id, []).append(caption)
        else:
            earlier.setdefault((caption.clip_id, caption.text), caption)
    now = timezone.now()
    superseded, revived, created = [], [], []
    for clip_id, text, reference in resolved:
        captions = current.get(clip_id, [])
        if [caption.text for caption in captions] == [text]:
            summary.add("system captions", "unchanged")
            continue
        for caption in captions:
            if caption.text != text:
                caption.superseded_at = now
                superseded.append(caption)
        if any(caption.text == text for caption in captions):
            summary.add("system captions", "updated")  # other current captions of the clip were superseded
            continue
        if (clip_id, text) in earlier:
            caption = earlier[(clip_id, text)]
            caption.superseded_at = None
            caption.note = notes.get(clip_id, caption.note)
            revived.append(caption)
            summary.add("system captions", "updated")
        else:
            created.append(
                Caption(
                    clip_id=clip_id,
                    text=text,
                    role=Caption.Role.CANDIDATE,
                    author_kind=Caption.AuthorKind.MACHINE,
                    system=system,
                    source_label=reference[:SOURCE_LABEL_LENGTH],
                    note=notes.get(clip_id, ""),
                )
            )
            summary.add("system captions", "created")
    changed = superseded + revived
    for caption in changed:
        caption.updated_at = now
    Caption.objects.bulk_update(changed, ["superseded_at", "updated_at", "note"])
    Caption.objects.bulk_create(created)
    summary.extra["captions superseded"] = len(superseded)


# --- Uploads through the page -----------------------------------------------------------------------


def system_submission_create(
    *, uploaded_file: UploadedFile, dataset: Dataset, system_name: str, uploaded_by
) -> SystemSubmission:
    """Keep the uploaded file (whatever happens next) and record who sent it for which system."""
    digest = hashlib.sha256()
    for chunk in uploaded_file.chunks():
        digest.update(chunk)
    uploaded_file.seek(0)
    submission = SystemSubmission(
        dataset=dataset,
        system_name=system_name.strip()[:SYSTEM_NAME_LENGTH],
        original_name=Path(uploaded_file.name).name[:255],
        sha256=digest.hexdigest(),
        uploaded_by=uploaded_by,
    )
    submission.file.save(Path(uploaded_file.name).name, uploaded_file, save=False)
    submission.save()
    return submission


def system_submission_import(*, submission: SystemSubmission) -> SystemSubmission:
    """Import a kept upload; its status, errors (one per problem) and summary record the outcome."""
    with submission.file.open("rb") as handle:
        content = handle.read()
    try:
        summary = system_captions_import(
            content=content,
            source_name=submission.original_name,
            dataset_name=submission.dataset.name,
            system_name=submission.system_name,
        )
    except ImportDataError as error:
        submission.status = SystemSubmission.Status.FAILED
        submission.errors = str(error).splitlines()
        submission.summary = {}
    else:
        submission.status = SystemSubmission.Status.IMPORTED
        submission.errors = []
        submission.summary = summary.as_dict()
    submission.save(update_fields=["status", "errors", "summary", "updated_at"])
    return submission


def system_submission_import_pending(*, submission_id: int) -> str:
    """The worker's task: import a submission still PENDING once. Returns its status, or "skipped" when another
    delivery of the message has imported it (the importer changes nothing the second time besides)."""
    submission = (
        SystemSubmission.objects.select_related("dataset")
        .filter(pk=submission_id, status=SystemSubmission.Status.PENDING)
        .first()
    )
    if submission is None:
        return "skipped"
    try:
        return system_submission_import(submission=submission).status
    except Exception as error:  # a fault of ours, not of the file: the page says so instead of waiting forever
        logger.exception("system submission %s failed", submission_id)
        submission.status = SystemSubmission.Status.FAILED
        submission.errors = [f"internal error: {type(error).__name__}: {error}"]
        submission.save(update_fields=["status", "errors", "updated_at"])
        return submission.status

