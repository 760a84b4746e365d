"""Read a filled THumBS workbook: the clips and captions it lists and the ratings typed in it.

Works on workbooks this app wrote and on the study's hand-made ones: the `Assessment` sheet is read
section by section (each section starts at a header row whose first cell is `No.`; columns are found
by their header text, so spacing variants and moved columns are fine). A caption row has `Caption n`
in the caption column and the caption text beside it; the record ID sits on a clip's first row.

Nothing is decided about the database here. Every unreadable or out-of-range value becomes an error
`Sheet!Cell: value — rule`; a caller must not save anything from a result that has errors.
"""

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import BinaryIO

import openpyxl
from openpyxl.utils import get_column_letter

from ratings.workbooks import layout
from ratings.workbooks.values import (
    CellError,
    is_blank,
    penalty_read,
    shown,
    text_read,
    whole_score_read,
    yes_no_read,
)

REQUIRED_COLUMNS = ("record_id", "caption_label", *layout.SCORE_FIELDS)
# A record ID names a clip (an app token or an outside file name such as "3.wav"). One that starts like a
# formula would run wherever an export writes it into a cell; control characters belong in no name. Both
# are refused rather than stored.
RECORD_ID_FORMULA_STARTS = ("=", "+", "-", "@")
RECORD_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


def record_id_problem(record_id: str) -> str:
    """Why `record_id` cannot be a record ID, or "" when it can."""
    if record_id.startswith(RECORD_ID_FORMULA_STARTS):
        return (
            f"record ID starts with {record_id[0]!r}, like a spreadsheet formula; a record ID is a clip's file "
            "name or code (e.g. 3.wav)"
        )
    if RECORD_ID_FORBIDDEN.search(record_id):
        return "record ID contains a control character (a tab, a line break or similar)"
    return ""


@dataclass
class WorkbookClip:
    record_id: str
    cell: str
    captions: list[str] = field(default_factory=list)
    synthesized: bool | None = None
    synthesized_cell: str = ""


@dataclass
class WorkbookRating:
    cell: str  # the caption cell of the row, e.g. "Assessment!D6"
    record_id: str
    caption: str
    precision: int
    recall: int
    fluency: Decimal
    conciseness: Decimal
    irrelevance: Decimal
    synthesized: bool | None
    comment: str


@dataclass
class ParsedWorkbook:
    clips: list[WorkbookClip] = field(default_factory=list)
    ratings: list[WorkbookRating] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Record ID -> answer version when the app exported the file (its hidden versions sheet); empty otherwise.
    export_versions: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rated_rows: int = 0
    unrated_rows: int = 0


def _assessment_sheet(book):
    for sheet in book.worksheets:
        if sheet.title.strip().lower() == layout.ASSESSMENT_SHEET.lower():
            return sheet
    return None


class _SheetReader:
    """Walks the rows of one sheet, keeping the current section's columns and the current clip."""

    def __init__(self, sheet, result: ParsedWorkbook):
        self.title = sheet.title
        self.result = result
        self.columns: dict[str, int] | None = None  # field -> 0-based index into the row tuple
        self.stray_columns: range = range(0)
        self.clip: WorkbookClip | None = None
        self.clips_by_record: dict[str, WorkbookClip] = {}
        self.headers_seen = 0
        self.ratings_by_clip: dict[str, list[WorkbookRating]] = {}

    def cell(self, index: int, row_number: int) -> str:
        return f"{self.title}!{get_column_letter(index + 1)}{row_number}"

    def error(self, index: int, row_number: int, value, rule: str) -> None:
        self.result.errors.append(f"{self.cell(index, row_number)}: {shown(value)} — {rule}")

    def header(self, values: tuple, row_number: int) -> None:
        self.headers_seen += 1
        columns: dict[str, int] = {}
        for index, text in enumerate(values):
            name = layout.header_field(text)
            if name and name not in columns:
                columns[name] = index
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            labels = ", ".join(layout.HEADER_LABELS[name] for name in missing)
            self.result.errors.append(f"{self.title}!A{row_number}: header row — no column for {labels}")
            self.columns = None
            return
        columns["caption_text"] = columns["caption_label"] + 1
        self.columns = columns
        self.stray_columns = range(max(columns.values()) + 1, layout.MAX_READ_COLUMNS)
        self.clip = None

    def row(self, values: tuple, row_number: int) -> None:
        if values and layout.is_header_row(values[0]):
            self.header(values, row_number)
            return
        if self.columns is None:
            return
        columns = self.columns
        value = lambda name: values[columns[name]] if name in columns and columns[name] < len(values) else None  # noqa: E731
        label, text, record = value("caption_label"), value("caption_text"), value("record_id")
        is_caption_row = (isinstance(label, str) and layout.CAPTION_LABEL.match(label.strip())) or (
            not is_blank(record) and not is_blank(text)
        )
        if not is_caption_row:
            return
        scores = {name: value(name) for name in layout.SCORE_FIELDS}
        rated = any(not is_blank(raw) for raw in scores.values())
        if is_blank(text):
            if rated:
                self.error(columns["caption_text"], row_number, text, "a rated row needs its caption text")
            return
        if not is_blank(record):
            self.start_clip(text_read(record), columns["record_id"], row_number)
        elif self.clip is None:
            self.error(columns["caption_text"], row_number, text, "caption row has no record ID on or above it")
            return
        clip = self.clip
        caption = text if isinstance(text, str) else text_read(text)
        if caption in clip.captions:
            self.error(
                columns["caption_text"], row_number, caption[:60], f"same caption twice for clip {clip.record_id}"
            )
            return
        clip.captions.append(caption)
        self.synthesized(clip, value("synthesized"), row_number)
        comment = self.comment(values, row_number)
        if not rated:
            self.result.unrated_rows += 1
            if comment:
                self.result.warnings.append(
                    f"{self.cell(columns['caption_text'], row_number)}: comment on an unrated row ignored"
                )
            return
        self.result.rated_rows += 1
        self.rating(clip, caption, scores, comment, row_number)

    def start_clip(self, record_id: str, index: int, row_number: int) -> None:
        problem = record_id_problem(record_id)
        if problem:
            self.error(index, row_number, record_id, problem)
        earlier = self.clips_by_record.get(record_id)
        if earlier is not None:
            self.error(index, row_number, record_id, f"record ID already listed at {earlier.cell}")
            self.clip = earlier
            return
        self.clip = WorkbookClip(record_id=record_id, cell=self.cell(index, row_number))
        self.clips_by_record[record_id] = self.clip
        self.result.clips.append(self.clip)

    def synthesized(self, clip: WorkbookClip, raw, row_number: int) -> None:
        if is_blank(raw):
            return
        index = self.columns["synthesized"]
        try:
            answer = yes_no_read(raw)
        except CellError as error:
            self.error(index, row_number, raw, str(error))
            return
        if clip.synthesized is None:
            clip.synthesized, clip.synthesized_cell = answer, self.cell(index, row_number)
        elif clip.synthesized != answer:
            self.error(
                index, row_number, raw, f"conflicts with the answer at {clip.synthesized_cell} for the same clip"
            )

    def comment(self, values: tuple, row_number: int) -> str:
        indexes = ([self.columns["comment"]] if "comment" in self.columns else []) + list(self.stray_columns)
        parts = [text_read(values[index]) for index in indexes if index < len(values) and not is_blank(values[index])]
        return "\n".join(part for part in parts if part)

    def rating(self, clip: WorkbookClip, caption: str, scores: dict, comment: str, row_number: int) -> None:
        parsed: dict = {}
        for name in ("precision", "recall"):
            raw = scores[name]
            if is_blank(raw):
                self.error(self.columns[name], row_number, raw, f"{name} is required on a rated row")
                continue
            try:
                parsed[name] = whole_score_read(raw, field=name)
            except CellError as error:
                self.error(self.columns[name], row_number, raw, str(error))
        for name in layout.PENALTY_FIELDS:
            try:
                parsed[name] = penalty_read(scores[name], field=name)
            except CellError as error:
                self.error(self.columns[name], row_number, scores[name], str(error))
        if len(parsed) < len(layout.SCORE_FIELDS):
            return
        rating = WorkbookRating(
            cell=self.cell(self.columns["caption_text"], row_number),
            record_id=clip.record_id,
            caption=caption,
            synthesized=None,
            comment=comment,
            **parsed,
        )
        self.result.ratings.append(rating)
        self.ratings_by_clip.setdefault(clip.record_id, []).append(rating)

    def finish(self) -> None:
        # The synthesized answer is given once per clip (on its first row) and holds for all its captions.
        for clip in self.result.clips:
            for rating in self.ratings_by_clip.get(clip.record_id, []):
                rating.synthesized = clip.synthesized
            if clip.synthesized is not None and clip.record_id not in self.ratings_by_clip:
                self.result.warnings.append(f"{clip.synthesized_cell}: synthesized answer for an unrated clip ignored")


def _export_versions(sheet) -> dict[str, int]:
    versions = {}
    for row in sheet.iter_rows(min_row=2, max_col=2, values_only=True):
        record_id, version = row[0], row[1] if len(row) > 1 else None
        if record_id is not None and isinstance(version, int) and not isinstance(version, bool):
            versions[str(record_id)] = version
    return versions


def thumbs_workbook_parse(stream: BinaryIO, *, name: str = "workbook") -> ParsedWorkbook:
    """Parse the Assessment sheet of a THumBS workbook (call `safety.xlsx_check` on untrusted files first)."""
    result = ParsedWorkbook()
    try:
        book = openpyxl.load_workbook(stream, read_only=True, data_only=False)
    except Exception as error:  # openpyxl raises many types for damaged files
        result.errors.append(f"{name}: cannot be read as an Excel workbook ({type(error).__name__}: {error})")
        return result
    try:
        sheet = _assessment_sheet(book)
        if sheet is None:
            result.errors.append(
                f"{name}: no sheet named {layout.ASSESSMENT_SHEET} (sheets: {', '.join(book.sheetnames)})"
            )
            return result
        reader = _SheetReader(sheet, result)
        for row_number, values in enumerate(
            sheet.iter_rows(max_col=layout.MAX_READ_COLUMNS, values_only=True), start=1
        ):
            reader.row(values, row_number)
        reader.finish()
        if not reader.headers_seen:
            result.errors.append(
                f"{sheet.title}: no header row (a row starting with 'No.') — is this a THumBS workbook?"
            )
        elif not result.clips and not result.errors:
            result.errors.append(f"{sheet.title}: no caption rows ('Caption 1', 'Caption 2', ...) under the header")
        if layout.VERSIONS_SHEET in book.sheetnames:
            result.export_versions = _export_versions(book[layout.VERSIONS_SHEET])
    finally:
        book.close()
    return result
