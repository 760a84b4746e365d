"""A record ID names a clip's file in a rater's audio folder: one holding a path separator is refused at import,
naming its cell, and nothing is written."""

import io

import openpyxl
import pytest

from corpus.models import Clip
from ratings.services.workbooks import WorkbookImportError, workbook_import
from tests.ratings.workbook_helpers import outside_workbook_make, table_counts

pytestmark = pytest.mark.django_db


def _with_record_renamed(content: bytes, new_id: str) -> tuple[bytes, str]:
    """The workbook with its first record ID (every cell holding it) replaced; returns the first cell's name."""
    book = openpyxl.load_workbook(io.BytesIO(content))
    sheet = book["Assessment"]
    first_id = next(cell.value for row in sheet.iter_rows() for cell in row if str(cell.value).startswith("study-"))
    cells = [cell for row in sheet.iter_rows() for cell in row if cell.value == first_id]
    for cell in cells:
        cell.value = new_id
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue(), cells[0].coordinate


@pytest.mark.parametrize("record_id", ["../../etc/passwd", "sub/clip.wav", r"..\outside.wav"])
def test_a_record_id_with_a_path_separator_is_refused_naming_its_cell(make_user, record_id):
    content, cell = _with_record_renamed(outside_workbook_make(helper=make_user("helper", "rater")), record_id)
    rater = make_user("p1")
    counts = table_counts()
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(
            content=content, file_name="P1.xlsx", campaign_name="outside", rater=rater, create_campaign=True
        )
    assert any(error.startswith(f"Assessment!{cell}") or error.startswith(cell) for error in refused.value.errors), (
        refused.value.errors
    )
    assert any(
        "must not contain a path separator" in error and repr(record_id) in error for error in refused.value.errors
    )
    assert table_counts() == counts and not Clip.objects.filter(external_id=record_id).exists()


def test_the_same_workbook_with_plain_record_ids_imports(make_user):
    content, _ = _with_record_renamed(outside_workbook_make(helper=make_user("helper", "rater")), "plain-name.wav")
    result = workbook_import(
        content=content, file_name="P1.xlsx", campaign_name="outside", rater=make_user("p1"), create_campaign=True
    )
    assert result is not None and Clip.objects.filter(external_id="plain-name.wav").exists()
