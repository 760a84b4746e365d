"""Runs the shared workbook fill script (``python -m tests.ratings.fill_script_runner SCRIPT IN OUT SEED``) with
openpyxl's formatting of merged cells done once per distinct style instead of once per cell.

The untouched P1 workbook merges whole rows (A1:XFD1 and the like): opening it, openpyxl 3.1.5 gives each of the
million-odd cells under those merges a border and a protection, each time building the combined style and
looking it up among the workbook's styles by comparing objects field by field: minutes of the script's time, the
same few combinations over and over. The quicker version below does the real assignment for the first cell of a
range that starts from a given border and reuses the style index that assignment gave for the other cells that
start from the same border, so every cell ends with the index it would have had and the workbook's style list grows
in the same order: the files written are the same (tests/ratings/test_fill_script_runner.py compares them with the
plain run). On another openpyxl version the script runs with openpyxl as it is.
"""

import copy
import runpy
import sys

import openpyxl
from openpyxl.cell.cell import MergedCell
from openpyxl.styles.borders import Border
from openpyxl.worksheet.merge import MergedCellRange

CHECKED_VERSION = "3.1.5"  # the version whose MergedCellRange.format the function below reproduces


def _merged_cell(worksheet, coord):
    cell = worksheet._cells.get(coord)
    if cell is None:
        row, column = coord
        cell = MergedCell(worksheet, row=row, column=column)
        worksheet._cells[(cell.row, cell.column)] = cell
    return cell


def _format_once_per_style(self):
    """MergedCellRange.format of openpyxl 3.1.5, with each style combination built and looked up once."""
    for name in ("top", "left", "right", "bottom"):
        side = getattr(self.start_cell.border, name)
        if side and side.style is None:
            continue
        border = Border(**{name: side})
        combined: dict[int, int] = {}  # the cell's border index before -> after adding `border`
        for coord in getattr(self, name):
            cell = _merged_cell(self.ws, coord)
            if cell._style is None:  # a cell with no style yet: openpyxl's own path gives it one
                cell.border += border
                continue
            before = cell._style.borderId
            if before in combined:
                cell._style.borderId = combined[before]
            else:
                cell.border += border
                combined[before] = cell._style.borderId
    protected = self.start_cell.protection is not None
    if protected:
        protection = copy.copy(self.start_cell.protection)
    protection_index = None
    for coord in self.cells:
        cell = _merged_cell(self.ws, coord)
        if protected:
            if protection_index is None or cell._style is None:
                cell.protection = protection
                protection_index = cell._style.protectionId
            else:
                cell._style.protectionId = protection_index


def main(arguments: list[str]) -> None:
    script, *script_arguments = arguments
    if openpyxl.__version__ == CHECKED_VERSION:
        MergedCellRange.format = _format_once_per_style
    sys.argv = [script, *script_arguments]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
