"""Property-based fuzzing of the THumBS workbook reader and import service.

Inputs are the app's own export of a small campaign (3 clips x 2 captions) with random edits made through
openpyxl (any cell of the sheet set to numbers, text, formulas, blanks; rows deleted or inserted; the sheet
renamed) and, separately, its bytes damaged (truncated, bytes overwritten). Every input must either import
or be refused with WorkbookImportError whose every message starts with its place: the file name, or
`Sheet!Cell` / `Sheet:` of a sheet in the file; never another exception, and a refused import leaves every
table row unchanged.
"""

import io
import re

import openpyxl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratings.models import ThumbsRating
from ratings.services.workbooks import WorkbookImportError, rater_workbook_export, workbook_import
from tests.fuzz.fuzz_helpers import database_fingerprint, rolled_back
from tests.ratings.workbook_helpers import thumbs_campaign

pytestmark = pytest.mark.django_db

FILE_NAME = "fuzzed.xlsx"
LAST_COLUMN = 12  # the layout uses A..K; one more for stray text

cell_values = st.one_of(
    st.none(),
    st.integers(min_value=-10, max_value=10),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    # Text a cell can hold (openpyxl, like Excel, refuses control characters).
    st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=40),
    st.sampled_from(
        ["yes", "No", " Y ", "n", "3", " 4 ", "5.0", "-0.5", "-2.5", "0,5", "=1/0", "=A1", "#N/A", "Caption 1", "No."]
    ),
    st.booleans(),
)


@pytest.fixture
def exported(make_user, settings, tmp_path) -> dict:
    """A rater, their campaign and the workbook the app exports for them (with no answers yet)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    rater = make_user("fuzz-rater", "rater")
    campaign = thumbs_campaign(name="fuzz", raters=[rater])
    export = rater_workbook_export(campaign=campaign, rater=rater)
    return {"rater": rater, "campaign": campaign, "content": next(iter(export.workbooks.values()))}


def _place_pattern(sheet_names: list[str]) -> re.Pattern:
    sheets = "|".join(re.escape(name) for name in sheet_names)
    return re.compile(rf"^(?:{re.escape(FILE_NAME)}[: ]|(?:{sheets})(?:![A-Z]{{1,3}}\d+)?:)")


def _import_or_refusal(exported: dict, content: bytes, sheet_names: list[str]) -> None:
    with rolled_back():
        before = database_fingerprint()
        try:
            workbook_import(
                content=content,
                file_name=FILE_NAME,
                campaign_name=exported["campaign"].name,
                rater=exported["rater"],
            )
        except WorkbookImportError as error:
            assert error.errors, "a refusal without a message"
            pattern = _place_pattern(sheet_names)
            unplaced = [message for message in error.errors if not pattern.match(message)]
            assert not unplaced, f"errors that do not name their place: {unplaced[:3]}"
            assert database_fingerprint() == before, f"a refused import changed the database ({error})"


def edited_workbook(data, content: bytes) -> tuple[bytes, list[str]]:
    """`content` with 1..6 random edits drawn from `data`; returns the file and its sheet names."""
    draw = data.draw
    book = openpyxl.load_workbook(io.BytesIO(content))
    sheet = book["Assessment"]
    for _ in range(draw(st.integers(1, 6))):
        operation = draw(st.sampled_from(["cell", "cell", "cell", "cell", "delete_row", "insert_row", "rename"]))
        row = draw(st.integers(1, sheet.max_row + 2))
        if operation == "cell":
            column = draw(st.integers(1, LAST_COLUMN))
            cell = sheet.cell(row=row, column=column)
            if type(cell).__name__ == "MergedCell":
                continue  # only a merged range's first cell holds a value (as in Excel)
            cell.value = draw(cell_values)
        elif operation == "delete_row":
            sheet.delete_rows(row)
        elif operation == "insert_row":
            sheet.insert_rows(row)
        else:
            sheet.title = draw(st.sampled_from(["assessment", "Sheet1", "Assessment ", "Bewertung"]))
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue(), list(book.sheetnames)


def test_the_unedited_export_imports(exported):
    """The fuzz starts from a valid file: an untouched export imports (with no ratings in it)."""
    with rolled_back():
        summary = workbook_import(
            content=exported["content"],
            file_name=FILE_NAME,
            campaign_name=exported["campaign"].name,
            rater=exported["rater"],
        )
        # nothing typed yet: every caption row is skipped as unrated, nothing is stored
        assert summary["rated_rows"] == 0 and summary["unrated_rows_skipped"] == 6, summary
        assert not ThumbsRating.objects.exists()


@given(data=st.data())
def test_edited_workbooks_import_or_are_refused_with_their_place(exported, data):
    content, sheet_names = edited_workbook(data, exported["content"])
    _import_or_refusal(exported, content, sheet_names)


@given(data=st.data())
def test_damaged_files_are_refused_with_the_file_name(exported, data):
    content = bytearray(exported["content"])
    if data.draw(st.booleans()):
        content = content[: data.draw(st.integers(0, len(content) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 8))):
            position = data.draw(st.integers(0, len(content) - 1))
            content[position] = data.draw(st.integers(0, 255))
    _import_or_refusal(exported, bytes(content), ["Assessment"])
