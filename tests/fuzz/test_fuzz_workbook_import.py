"""Property-based fuzzing of the THumBS workbook reader and import service.

Inputs are the app's own export of a small campaign (3 clips x 2 captions) with random edits made through
openpyxl (any cell of the sheet set to numbers, text, formulas, blanks; rows deleted or inserted; the sheet
renamed) and, separately, its bytes damaged (truncated, bytes overwritten). Every input must either import
or be refused with WorkbookImportError whose every message starts with its place: the file name, or
`Sheet!Cell` / `Sheet:` of a sheet in the file; never another exception, and a refused import leaves every
table row unchanged. The edits start from the export as sent (no answers) or filled in (every caption with its
own precision, recall and penalties, precision never equal to recall). An accepted import must store what the
edited sheet says, read back with openpyxl: each caption row whose record ID, caption and score columns are
unambiguous and whose precision and recall are whole numbers has a rating with exactly that row's five values.
"""

import io
import re
from decimal import Decimal, InvalidOperation

import openpyxl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratings.models import ThumbsRating
from ratings.services.workbooks import WorkbookImportError, rater_workbook_export, workbook_import
from ratings.workbooks.layout import HEADER_LABELS, SCORE_FIELDS
from tests.fuzz.fuzz_helpers import database_fingerprint, rolled_back
from tests.ratings.workbook_helpers import caption_rows, thumbs_campaign, workbook_fill

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


# Typed per caption row, in the sheet's order: precision, recall (never equal, so a swap shows), the penalties.
TYPED = (
    (5, 2, None, -0.5, 0),
    (1, 4, -0.1, None, "-1"),
    (" 3 ", "5", "-2", 0, None),
    (4, 1, 0, "-0.3", -1.5),
    (2, 3, None, None, None),
    ("4", 2, -1, -2, "-0.2"),
)


@pytest.fixture
def exported(make_user, settings, tmp_path) -> dict:
    """A rater, their campaign, the workbook the app exports for them (with no answers yet) and that workbook
    filled in (`filled`: TYPED row by row, every clip answered "no" to synthesized)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    rater = make_user("fuzz-rater", "rater")
    campaign = thumbs_campaign(name="fuzz", raters=[rater])
    export = rater_workbook_export(campaign=campaign, rater=rater)
    content = next(iter(export.workbooks.values()))
    rows = caption_rows(openpyxl.load_workbook(io.BytesIO(content))["Assessment"])
    assert len(rows) == len(TYPED)
    typed = {
        (record_id, text): dict(zip("EFGHI", values, strict=True))
        for (_, record_id, text, _), values in zip(rows, TYPED, strict=True)
    }
    filled = workbook_fill(content, typed, synthesized={record_id: "no" for _, record_id, _, _ in rows})
    return {"rater": rater, "campaign": campaign, "content": content, "filled": filled}


def _number(value) -> Decimal | None:
    """A cell's number as a person reads it ("3", " 4 ", 5.0, "-0,5"); None when it is not one."""
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip().replace(",", "."))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _sheet_scores(content: bytes) -> list[tuple[str, str, dict[str, Decimal]]] | None:
    """(record ID, caption text, {score field: value}) of each caption row whose precision and recall are whole
    numbers, read with openpyxl from the export's layout: the one header row (`No.` in column A) names the score
    columns with the export's own header texts, the caption text is right of the `Caption` column. None when the
    edits made that reading ambiguous (no or several header rows or score columns): then there is no claim."""
    book = openpyxl.load_workbook(io.BytesIO(content))
    if "Assessment" not in book.sheetnames:
        return None
    sheet = book["Assessment"]
    grid = [list(row) for row in sheet.iter_rows(values_only=True)]
    headers = [index for index, row in enumerate(grid) if row and isinstance(row[0], str) and row[0].strip() == "No."]
    if len(headers) != 1:
        return None
    header = grid[headers[0]]
    columns = {}
    for field in ("record_id", "caption_label", *SCORE_FIELDS):
        found = [index for index, text in enumerate(header) if text == HEADER_LABELS[field]]
        if len(found) != 1:
            return None
        columns[field] = found[0]
    rows, record = [], None
    for row in grid[headers[0] + 1 :]:
        row = row + [None] * (len(header) + 2 - len(row))
        if isinstance(row[columns["record_id"]], str) and row[columns["record_id"]].strip():
            record = row[columns["record_id"]].strip()
        label, text = row[columns["caption_label"]], row[columns["caption_label"] + 1]
        if not (isinstance(label, str) and re.fullmatch(r"caption\s*\d*", label.strip(), re.IGNORECASE)):
            continue
        scores = {field: _number(row[columns[field]]) for field in SCORE_FIELDS}
        for penalty in ("fluency", "conciseness", "irrelevance"):
            if row[columns[penalty]] is None or (
                isinstance(row[columns[penalty]], str) and not row[columns[penalty]].strip()
            ):
                scores[penalty] = Decimal(0)  # blank means no penalty
        whole = all(
            scores[field] is not None and scores[field] == scores[field].to_integral_value()
            for field in ("precision", "recall")
        )
        if record and isinstance(text, str) and whole:
            rows.append((record, text, scores))
    return rows


def stored_as_the_sheet_says(exported: dict, content: bytes) -> None:
    """The oracle of an accepted import (see the module docstring)."""
    from ratings.models import AssignmentItem

    sheet_rows = _sheet_scores(content)
    if sheet_rows is None:
        return
    tokens = dict(
        AssignmentItem.objects.filter(assignment__rater=exported["rater"]).values_list("token", "clip__external_id")
    )
    keys = [(record, text) for record, text, _ in sheet_rows]
    for record, text, scores in sheet_rows:
        if keys.count((record, text)) != 1 or record not in tokens:
            continue  # the same caption row twice, or a record the rater does not have: no single expected value
        rating = ThumbsRating.objects.filter(
            rater=exported["rater"], caption__text=text, caption__clip__external_id=tokens[record]
        ).first()
        assert rating is not None, f"accepted with {record} / {text!r} scored, but no rating is stored for it"
        stored = {field: Decimal(getattr(rating, field)) for field in SCORE_FIELDS}
        assert stored == scores, f"{text!r}: stored {stored}, the sheet says {scores}"


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
        else:
            stored_as_the_sheet_says(exported, content)


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


def test_the_filled_export_imports_as_typed(exported):
    """The filled base imports, and the oracle finds every caption row with the values TYPED holds."""
    with rolled_back():
        summary = workbook_import(
            content=exported["filled"],
            file_name=FILE_NAME,
            campaign_name=exported["campaign"].name,
            rater=exported["rater"],
        )
        assert summary["rated_rows"] == len(TYPED) and ThumbsRating.objects.count() == len(TYPED), summary
        sheet_rows = _sheet_scores(exported["filled"])
        assert [(int(s["precision"]), int(s["recall"])) for _, _, s in sheet_rows] == [
            (int(str(p).strip()), int(str(r).strip())) for p, r, *_ in TYPED
        ]
        stored_as_the_sheet_says(exported, exported["filled"])


@given(data=st.data())
def test_edited_workbooks_import_or_are_refused_with_their_place(exported, data):
    base = exported["filled"] if data.draw(st.booleans()) else exported["content"]
    content, sheet_names = edited_workbook(data, base)
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
