"""The quicker formatting of merged cells that the untouched-P1 workbook test runs the fill script with
(tests/ratings/fill_script_runner.py) writes the same workbook as openpyxl's own."""

import io
import zipfile

import openpyxl
import pytest
from openpyxl.styles import Border, Protection, Side
from openpyxl.worksheet.merge import MergedCellRange

from tests.ratings import fill_script_runner

pytestmark = pytest.mark.skipif(
    openpyxl.__version__ != fill_script_runner.CHECKED_VERSION, reason="the runner leaves other versions as they are"
)


def _workbook_with_merges() -> bytes:
    """Whole-row merges and a block merge, with borders on their corner cells and protection, as in P1."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Assessment"
    thick, thin = Side(style="thick"), Side(style="thin")
    for row, last_column in ((1, 16384), (3, 300), (6, 200)):  # A1:XFD1 as in P1; narrower ones keep it quick
        sheet.cell(row, 1, f"heading {row}").border = Border(top=thick, left=thin, bottom=thin)
        sheet.cell(row, last_column).border = Border(right=thick, bottom=thick)
        sheet.merge_cells(start_row=row, start_column=1, end_row=row, end_column=last_column)
    sheet.cell(4, 3, "block").border = Border(top=thin, left=thick)
    sheet.cell(4, 3).protection = Protection(locked=False)
    sheet.cell(5, 4).border = Border(bottom=thick, right=thin)
    sheet.merge_cells("C4:D5")
    sheet.cell(2, 2, "a plain cell")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _opened_and_saved(content: bytes) -> tuple[dict[str, bytes], openpyxl.Workbook]:
    book = openpyxl.load_workbook(io.BytesIO(content))
    buffer = io.BytesIO()
    book.save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        parts = {name: archive.read(name) for name in archive.namelist() if name != "docProps/core.xml"}
    return parts, book


def test_the_quicker_merge_formatting_writes_the_same_workbook(monkeypatch):
    content = _workbook_with_merges()
    plain, plain_book = _opened_and_saved(content)
    monkeypatch.setattr(MergedCellRange, "format", fill_script_runner._format_once_per_style)
    quick, quick_book = _opened_and_saved(content)

    assert quick == plain
    # The comparison covers styled merged cells: the merges' edges carry borders and the cells' protection.
    sheet = plain_book["Assessment"]
    assert sheet.cell(1, 9000).border.top.style == "thick" and sheet.cell(6, 150).border.bottom.style == "thin"
    assert sheet.cell(5, 3).border.left.style == "thick" and sheet.cell(5, 3).protection.locked is False
    assert len(plain_book._borders) > 3
    assert [cell._style for cell in quick_book["Assessment"]._cells.values()] == [
        cell._style for cell in sheet._cells.values()
    ]
