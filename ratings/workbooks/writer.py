"""Write a THumBS workbook in the layout of the study's P1_excel.xlsx.

Sheets `Example` (instructions and the study's two example rows) and `Assessment` (instructions, a
section line, the header row, then one row per caption). Record IDs are hyperlinks (a relative path or
a URL, as the caller decides). Score cells carry Excel data validation and are the only unlocked
cells of a protected sheet (no password: it guards against slips, not against people). Text that
starts like a formula is stored as text with Excel's quote prefix, so it is shown and imported back
exactly as written and never runs.
"""

import io
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, field
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, Cell
from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side
from openpyxl.styles.cell_style import StyleArray
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.merge import MergedCellRange

from ratings.workbooks import layout

FORMULA_STARTS = ("=", "+", "-", "@")

_FONT = Font(name="Times New Roman", size=20)
_BOLD = Font(name="Times New Roman", size=20, bold=True)
_LINK = Font(name="Times New Roman", size=20, color="FF0563C1", underline="single")
_THIN = Side(style="thin")
_BOX = Border(left=_THIN, right=_THIN, top=_THIN, bottom=_THIN)
_CENTER = Alignment(horizontal="center", vertical="center", wrap_text=True)
_LEFT = Alignment(horizontal="left", vertical="center", wrap_text=True)
# The study's fills: a light blue for the synthesized column, light gold for every second caption.
_SYNTHESIZED_FILL = PatternFill("solid", fgColor="FFDDEBF7")
_SECOND_CAPTION_FILL = PatternFill("solid", fgColor="FFFFE699")
_UNLOCKED = Protection(locked=False)

COLUMN_WIDTHS = {
    "A": 20.8,
    "B": 20.8,
    "C": 18.8,
    "D": 131.0,
    "E": 16.4,
    "F": 13.8,
    "G": 30.2,
    "H": 37.8,
    "I": 35.1,
    "J": 51.0,
    "K": 67.5,
}
INSTRUCTION_ROW_HEIGHT = 28.75
HEADER_ROW_HEIGHT = 61
CAPTION_ROW_HEIGHT = 135
LAST_COLUMN = layout.COLUMNS["comment"]


@dataclass
class SheetCaption:
    text: str
    # Values already known (e.g. rated on the web), written into the score cells; None leaves them blank.
    scores: dict | None = None
    comment: str = ""


@dataclass
class SheetClip:
    record_id: str
    link: str | None
    captions: list[SheetCaption] = field(default_factory=list)
    synthesized: bool | None = None


def _clean(text: str) -> str:
    # Control characters cannot be stored in xlsx at all.
    return ILLEGAL_CHARACTERS_RE.sub("", text)


def text_put(cell, text: str) -> None:
    """Write `text` as text; if it starts like a formula, keep it text (quote prefix) so it never runs."""
    text = _clean(text)
    cell.value = text
    if text.startswith(FORMULA_STARTS):
        cell.data_type = "s"
        cell.quotePrefix = True


def _number(value):
    return float(value) if isinstance(value, Decimal) else value


class _Styles:
    """Cell styles computed once per combination and copied onto cells.

    Setting font/fill/border one by one makes openpyxl hash style objects for every cell, which
    takes minutes for a 10,000-row sheet; copying a ready style array is instant.
    """

    def __init__(self, sheet):
        self.sheet = sheet
        self.cache: dict[tuple, StyleArray] = {}

    def apply(self, cell, *, font=_FONT, alignment=_CENTER, border=_BOX, fill=None, unlocked: bool = False) -> None:
        key = (id(font), id(alignment), id(border), id(fill), unlocked)
        style = self.cache.get(key)
        if style is None:
            probe = Cell(self.sheet)
            probe.font, probe.alignment, probe.border = font, alignment, border
            if fill is not None:
                probe.fill = fill
            if unlocked:
                probe.protection = _UNLOCKED
            style = self.cache[key] = copy(probe._style)
        cell._style = copy(style)


def _sheet_setup(sheet) -> None:
    for letter, width in COLUMN_WIDTHS.items():
        sheet.column_dimensions[letter].width = width
    sheet.sheet_view.zoomScale = 50
    # Printed, a page holds the full width of the table.
    sheet.page_setup.orientation = "landscape"
    sheet.page_setup.fitToWidth = 1
    sheet.page_setup.fitToHeight = 0
    sheet.sheet_properties.pageSetUpPr.fitToPage = True


def _protect(sheet) -> None:
    # Raters may still resize rows and columns; structure cells stay locked.
    sheet.protection.sheet = True
    sheet.protection.formatColumns = False
    sheet.protection.formatRows = False


class _SheetWriter:
    """Writes the rows of one sheet; merges are collected and set at the end (openpyxl's merge_cells
    checks every earlier merge, which is quadratic in the number of clips)."""

    def __init__(self, sheet):
        self.sheet = sheet
        self.styles = _Styles(sheet)
        self.merges: list[str] = []
        _sheet_setup(sheet)

    def merge(self, first_row: int, first_column: int, last_row: int, last_column: int) -> None:
        if (last_row, last_column) != (first_row, first_column):
            self.merges.append(
                f"{get_column_letter(first_column)}{first_row}:{get_column_letter(last_column)}{last_row}"
            )

    def banner(self, row: int, text: str, *, bold: bool = True) -> None:
        cell = self.sheet.cell(row, 1)
        self.styles.apply(cell, font=_BOLD if bold else _FONT, alignment=_LEFT)
        text_put(cell, text)
        self.merge(row, 1, row, LAST_COLUMN)
        self.sheet.row_dimensions[row].height = INSTRUCTION_ROW_HEIGHT

    def header(self, row: int) -> None:
        for name, column in layout.COLUMNS.items():
            cell = self.sheet.cell(row, column)
            self.styles.apply(cell, fill=_SYNTHESIZED_FILL if name == "synthesized" else None)
            if layout.HEADER_LABELS[name]:
                cell.value = layout.HEADER_LABELS[name]
        self.sheet.row_dimensions[row].height = HEADER_ROW_HEIGHT

    def clip_rows(self, clip: SheetClip, number: int, first_row: int, *, editable: bool = True) -> int:
        """Write one clip's rows starting at `first_row`; returns the next free row."""
        sheet, apply, columns = self.sheet, self.styles.apply, layout.COLUMNS
        last_row = first_row + len(clip.captions) - 1
        for offset, caption in enumerate(clip.captions):
            row = first_row + offset
            caption_fill = _SECOND_CAPTION_FILL if offset % 2 == 1 else None
            sheet.row_dimensions[row].height = CAPTION_ROW_HEIGHT
            apply(sheet.cell(row, columns["number"]))
            apply(sheet.cell(row, columns["record_id"]), font=_LINK if clip.link else _FONT)
            label_cell, text_cell = sheet.cell(row, columns["caption_label"]), sheet.cell(row, columns["caption_text"])
            apply(label_cell, fill=caption_fill)
            apply(text_cell, fill=caption_fill)
            label_cell.value = layout.caption_label(offset + 1)
            text_put(text_cell, caption.text)
            for name in (*layout.SCORE_FIELDS, "comment"):
                apply(sheet.cell(row, columns[name]), unlocked=editable)
            apply(sheet.cell(row, columns["synthesized"]), fill=_SYNTHESIZED_FILL, unlocked=editable)
            for name, value in (caption.scores or {}).items():
                if value is not None:
                    sheet.cell(row, columns[name]).value = _number(value)
            if caption.comment:
                text_put(sheet.cell(row, columns["comment"]), caption.comment)
        sheet.cell(first_row, columns["number"]).value = number
        record_cell = sheet.cell(first_row, columns["record_id"])
        text_put(record_cell, clip.record_id)
        if clip.link:
            record_cell.hyperlink = clip.link
        if clip.synthesized is not None:
            sheet.cell(first_row, columns["synthesized"]).value = "Yes" if clip.synthesized else "No"
        for name in ("number", "record_id", "synthesized"):
            self.merge(first_row, columns[name], last_row, columns[name])
        return last_row + 1

    def finish(self) -> None:
        self.sheet.merged_cells = MultiCellRange(
            [MergedCellRange(self.sheet, coordinate) for coordinate in self.merges]
        )
        _protect(self.sheet)


def _validations(sheet, first_row: int, last_row: int) -> None:
    if last_row < first_row:
        return
    rules = (
        (
            ("precision", "recall"),
            DataValidation(type="whole", operator="between", formula1="1", formula2="5"),
            "A whole number from 1 to 5.",
        ),
        (
            layout.PENALTY_FIELDS,
            DataValidation(type="decimal", operator="between", formula1="-2", formula2="0"),
            "A number from -2 to 0 (one decimal, e.g. -0.1); blank means no penalty.",
        ),
        (("synthesized",), DataValidation(type="list", formula1='"Yes,No"'), "Yes or No, once per clip."),
    )
    for names, validation, message in rules:
        validation.allow_blank = True
        validation.showErrorMessage = True
        validation.errorTitle = "THumBS score"
        validation.error = message
        validation.showInputMessage = True
        validation.prompt = message
        columns = [layout.COLUMNS[name] for name in names]
        validation.add(f"{get_column_letter(min(columns))}{first_row}:{get_column_letter(max(columns))}{last_row}")
        sheet.add_data_validation(validation)


def _example_sheet(book: Workbook) -> None:
    writer = _SheetWriter(book.create_sheet(layout.EXAMPLE_SHEET))
    for row, text in enumerate(layout.EXAMPLE_INSTRUCTIONS, start=1):
        writer.banner(row, text)
    writer.header(4)
    writer.merge(4, layout.COLUMNS["caption_label"], 4, layout.COLUMNS["caption_text"])
    example = SheetClip(
        record_id=layout.EXAMPLE_RECORD_ID,
        link=None,
        captions=[
            SheetCaption(text=text, scores=dict(zip(layout.SCORE_FIELDS, scores, strict=True)))
            for text, scores in layout.EXAMPLE_ROWS
        ],
        synthesized=layout.EXAMPLE_SYNTHESIZED == "Yes",
    )
    next_row = writer.clip_rows(example, 1, 5, editable=False)
    for offset, text in enumerate(layout.EXAMPLE_NOTES):
        writer.banner(next_row + 1 + offset, text, bold=False)
    writer.finish()


def _versions_sheet(book: Workbook, versions: dict[str, int]) -> None:
    """A very hidden sheet: the answer version of each record at export time (see layout.VERSIONS_SHEET)."""
    sheet = book.create_sheet(layout.VERSIONS_SHEET)
    sheet.sheet_state = "veryHidden"
    sheet.append(["record_id", "version"])
    for row, (record_id, version) in enumerate(versions.items(), start=2):
        text_put(sheet.cell(row, 1), record_id)  # hidden is not safe: a formula-like ID must stay text here too
        sheet.cell(row, 2).value = version


def thumbs_workbook_build(*, clips: Sequence[SheetClip], versions: dict[str, int] | None = None) -> bytes:
    """The workbook for one rater: the clips in their order, each with its captions in their order.

    `versions` (record ID -> the item's answer version now) lets an import notice answers changed
    elsewhere after this export instead of overwriting them.
    """
    book = Workbook()
    book.remove(book.active)
    _example_sheet(book)
    sheet = book.create_sheet(layout.ASSESSMENT_SHEET)
    writer = _SheetWriter(sheet)
    for row, text in enumerate(layout.ASSESSMENT_INSTRUCTIONS, start=1):
        writer.banner(row, text)
    sheet.row_dimensions[3].height = INSTRUCTION_ROW_HEIGHT
    writer.banner(4, layout.section_title(len(clips)))
    header_row = 5
    writer.header(header_row)
    first_row = next_row = header_row + 1
    for number, clip in enumerate(clips, start=1):
        next_row = writer.clip_rows(clip, number, next_row)
    _validations(sheet, first_row, next_row - 1)
    for offset, text in enumerate(layout.closing_lines(len(clips))):
        writer.banner(next_row + 1 + offset, text)
    sheet.freeze_panes = sheet.cell(first_row, 1)
    writer.finish()
    if versions is not None:
        _versions_sheet(book, versions)
    book.active = book.sheetnames.index(layout.ASSESSMENT_SHEET)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()
