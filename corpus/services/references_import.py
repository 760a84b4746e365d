"""Import reference captions from CSV, so a dataset can be set up without the pairwise format.

Two layouts, told apart by the header:
- Clotho: `file_name,caption_1,...,caption_5` (one row per clip; any number of caption_N columns);
- AudioCaps: `audiocap_id,youtube_id,start_time,caption` (one row per caption; a clip's references in
  file order).

Clips are matched by external id or file name (with or without extension; AudioCaps also `Y<id>.wav`),
else created (Clotho: external id = file name; AudioCaps: external id = YouTube id, file name
`Y<id>.wav`, as the other importers do). A clip's reference list becomes the file's: a changed text at a
position is updated in place, new positions are added, and positions the file no longer has are removed
unless a pair or a rating points at them (then the import stops and says so). Every problem is listed
with its row number; nothing is written unless the whole file is good. A second run changes nothing.
"""

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.structured_log import logged_import
from corpus.models import Caption, Clip, Dataset
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_get_or_create,
    dataset_name_validate,
    file_stem,
    text_nul_check,
)

CLOTHO_CAPTION_COLUMN = re.compile(r"^caption_(\d+)$")
AUDIOCAPS_COLUMNS = ("audiocap_id", "youtube_id", "start_time", "caption")
EXTERNAL_ID_LENGTH = Clip._meta.get_field("external_id").max_length


@dataclass
class ClipReferences:
    external_id: str
    file_name: str
    first_row: int
    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def references_import_from_path(*, path: Path | str, dataset_name: str) -> ImportSummary:
    path = Path(path)
    if not path.is_file():
        raise ImportDataError(f"{path}: no such file")
    return references_import(content=path.read_bytes(), source_name=path.name, dataset_name=dataset_name)


@logged_import("references")
def references_import(*, content: bytes, source_name: str, dataset_name: str) -> ImportSummary:
    dataset_name_validate(name=dataset_name)
    clips = references_parse(content=content, source_name=source_name)
    summary = ImportSummary(source_name=source_name)
    with transaction.atomic():
        dataset = dataset_get_or_create(name=dataset_name, summary=summary)
        references_store(dataset=dataset, clips=clips, source_name=source_name, summary=summary)
    return summary


def references_store(
    *, dataset: Dataset, clips: list[ClipReferences], source_name: str, summary: ImportSummary
) -> None:
    """Write parsed reference lists into `dataset`, inside the caller's transaction (the upload page creates a
    dataset, its clips and their references in one). Raises ImportDataError listing every problem; the
    exception rolls the caller's transaction back."""
    stored = _clips_ensure(dataset, clips, summary)
    problems = _references_write(clips, stored, source_name, summary)
    if problems:
        raise ImportDataError("\n".join(problems))


# --- Reading ----------------------------------------------------------------------------------------


def references_parse(*, content: bytes, source_name: str) -> list[ClipReferences]:
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportDataError(f"{source_name}: not UTF-8 text (byte {error.start})") from None
    text_nul_check(text=text, source_name=source_name)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [column.strip().lower() for column in next(reader, [])]
        rows = [(reader.line_num, cells) for cells in reader if any(cell.strip() for cell in cells)]
    except csv.Error as error:
        raise ImportDataError(f"{source_name}: row {reader.line_num}: not CSV ({error})") from None
    if "file_name" in header and any(CLOTHO_CAPTION_COLUMN.match(column) for column in header):
        clips, problems = _clotho_clips(header, rows, source_name)
    elif all(column in header for column in AUDIOCAPS_COLUMNS):
        clips, problems = _audiocaps_clips(header, rows, source_name)
    else:
        raise ImportDataError(
            f"{source_name}: row 1: expected a Clotho header (file_name,caption_1,...,caption_5) or an AudioCaps "
            f"header ({','.join(AUDIOCAPS_COLUMNS)}), got {','.join(header) or 'nothing'}"
        )
    if not clips and not problems:
        problems.append(f"{source_name}: no reference captions in the file")
    if problems:
        raise ImportDataError("\n".join(problems))
    return clips


def _cell(cells: list[str], index: int) -> str:
    return cells[index].strip() if index < len(cells) else ""


def _clotho_clips(header, rows, source_name) -> tuple[list[ClipReferences], list[str]]:
    name_column = header.index("file_name")
    caption_columns = sorted(
        (int(match.group(1)), index)
        for index, column in enumerate(header)
        if (match := CLOTHO_CAPTION_COLUMN.match(column))
    )
    clips: dict[str, ClipReferences] = {}
    problems = []
    for line, cells in rows:
        where = f"{source_name}: row {line}"
        name = _cell(cells, name_column)
        if not name:
            problems.append(f"{where}: file_name is empty")
            continue
        if len(name) > EXTERNAL_ID_LENGTH:
            problems.append(f'{where}: file_name "{name[:40]}…" is longer than {EXTERNAL_ID_LENGTH} characters')
            continue
        if name in clips:
            problems.append(f'{where}: file_name "{name}" already given in row {clips[name].first_row}')
            continue
        clip = clips[name] = ClipReferences(external_id=name, file_name=name, first_row=line)
        for number, index in caption_columns:
            text = _cell(cells, index)
            if not text:
                problems.append(f'{where}: caption_{number} of "{name}" is empty')
            clip.texts.append(text)
            clip.labels.append(f"caption_{number}")
    return list(clips.values()), problems


def _audiocaps_clips(header, rows, source_name) -> tuple[list[ClipReferences], list[str]]:
    column = {name: header.index(name) for name in AUDIOCAPS_COLUMNS}
    clips: dict[str, ClipReferences] = {}
    seen_ids: dict[str, int] = {}
    problems = []
    for line, cells in rows:
        where = f"{source_name}: row {line}"
        caption_id, youtube_id = _cell(cells, column["audiocap_id"]), _cell(cells, column["youtube_id"])
        text = _cell(cells, column["caption"])
        if not youtube_id:
            problems.append(f"{where}: youtube_id is empty")
        if not text:
            problems.append(f'{where}: caption of "{youtube_id}" is empty')
        if not caption_id:
            problems.append(f"{where}: audiocap_id is empty")
        elif caption_id in seen_ids:
            problems.append(f'{where}: audiocap_id "{caption_id}" already given in row {seen_ids[caption_id]}')
        else:
            seen_ids[caption_id] = line
        if youtube_id and len(youtube_id) <= EXTERNAL_ID_LENGTH:
            clip = clips.setdefault(
                youtube_id, ClipReferences(external_id=youtube_id, file_name=f"Y{youtube_id}.wav", first_row=line)
            )
            clip.texts.append(text)
            clip.labels.append(f"audiocap_{caption_id}")
    return list(clips.values()), problems


# --- Writing ----------------------------------------------------------------------------------------


def _clips_ensure(dataset, clips: list[ClipReferences], summary: ImportSummary) -> dict[str, Clip]:
    existing = list(Clip.objects.filter(dataset=dataset))
    by_name: dict[str, Clip] = {}
    for clip in existing:
        for name in (clip.file_name, file_stem(clip.file_name)):
            if name:
                by_name.setdefault(name, clip)
    for clip in existing:  # external ids win over file names
        by_name[clip.external_id] = clip
    result, created = {}, []
    for spec in clips:
        clip = by_name.get(spec.external_id) or by_name.get(spec.file_name) or by_name.get(file_stem(spec.file_name))
        if clip is None:
            clip = Clip(dataset=dataset, external_id=spec.external_id, file_name=spec.file_name)
            created.append(clip)
            by_name[spec.external_id] = clip
        result[spec.external_id] = clip
    Clip.objects.bulk_create(created)
    summary.add("clips", "created", len(created))
    summary.add("clips", "unchanged", len(clips) - len(created))
    return result


def _references_write(clips: list[ClipReferences], stored: dict[str, Clip], source_name: str, summary) -> list[str]:
    clip_ids = [clip.pk for clip in stored.values()]
    current: dict[int, dict[int, Caption]] = {}
    for caption in Caption.objects.filter(clip_id__in=clip_ids, role=Caption.Role.REFERENCE):
        current.setdefault(caption.clip_id, {})[caption.position] = caption
    now = timezone.now()
    created, changed, removed, problems = [], [], [], []
    for spec in clips:
        clip = stored[spec.external_id]
        have = current.get(clip.pk, {})
        for position, (text, label) in enumerate(zip(spec.texts, spec.labels, strict=True)):
            caption = have.get(position)
            if caption is None:
                created.append(
                    Caption(
                        clip=clip,
                        text=text,
                        role=Caption.Role.REFERENCE,
                        author_kind=Caption.AuthorKind.HUMAN,
                        position=position,
                        source_label=label,
                    )
                )
            elif (caption.text, caption.source_label) != (text, label):
                caption.text, caption.source_label, caption.updated_at = text, label, now
                changed.append(caption)
            else:
                summary.add("reference captions", "unchanged")
        removed.extend(caption for position, caption in have.items() if position >= len(spec.texts))
    in_use = _captions_in_use([caption.pk for caption in removed])
    for caption in removed:
        if caption.pk in in_use:
            problems.append(
                f'{source_name}: clip "{caption.clip.external_id}" would lose reference {caption.position + 1} '
                f'("{caption.text}"), which judged pairs or ratings use'
            )
    if problems:
        return problems
    Caption.objects.bulk_create(created)
    Caption.objects.bulk_update(changed, ["text", "source_label", "updated_at"])
    Caption.objects.filter(pk__in=[caption.pk for caption in removed]).delete()
    summary.add("reference captions", "created", len(created))
    summary.add("reference captions", "updated", len(changed) + len(removed))
    return []


def _captions_in_use(caption_ids: list[int]) -> set[int]:
    """Captions that a judgement points at (reached through reverse relations: annotation knows no ratings)."""
    if not caption_ids:
        return set()
    used = Caption.objects.filter(pk__in=caption_ids).filter(
        Q(pairs_as_a__isnull=False) | Q(pairs_as_b__isnull=False) | Q(thumbs_ratings__isnull=False)
    )
    return set(used.values_list("pk", flat=True))
