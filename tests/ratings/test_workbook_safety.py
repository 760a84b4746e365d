"""Files that are not xlsx, and zip bombs, are refused quickly and clearly, before openpyxl parses anything."""

import io
import zipfile

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from ratings.services.workbooks import WorkbookImportError, workbook_import
from ratings.workbooks.safety import WorkbookRejectedError, xlsx_check
from tests.ratings.workbook_helpers import table_counts

pytestmark = pytest.mark.django_db

LIMIT = 10 * 1024 * 1024


@pytest.fixture
def openpyxl_forbidden(monkeypatch):
    """Fail loudly if anything hands the file to openpyxl."""

    def refuse(*args, **kwargs):
        raise AssertionError("openpyxl was asked to parse a file that should have been refused")

    monkeypatch.setattr(openpyxl, "load_workbook", refuse)  # the reader calls openpyxl.load_workbook


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _xlsx_like(extra: dict[str, bytes]) -> bytes:
    return _zip({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>", **extra})


def _refusal(content: bytes, *, limit: int = LIMIT) -> str:
    with pytest.raises(WorkbookRejectedError) as refused:
        xlsx_check(io.BytesIO(content), max_uncompressed_bytes=limit, name="upload.xlsx")
    return str(refused.value)


def test_csv_and_pdf_renamed_xlsx_are_refused(openpyxl_forbidden):
    assert "not an Excel .xlsx workbook (it is not a zip archive" in _refusal(b"No.,Record ID,Caption\n1,3.wav,x\n")
    assert "not a zip archive" in _refusal(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    assert "not a zip archive" in _refusal(b"")


def test_a_zip_that_is_not_a_workbook_is_refused(openpyxl_forbidden):
    assert "no [Content_Types].xml" in _refusal(_zip({"notes.txt": b"hello"}))
    assert "broken zip archive" in _refusal(b"PK\x03\x04" + b"\x00" * 200)


def test_zip_bomb_over_the_size_limit_is_refused_from_the_directory(openpyxl_forbidden):
    bomb = _xlsx_like({"xl/worksheets/sheet1.xml": b"\x00" * (12 * 1024 * 1024)})
    assert len(bomb) < 100_000
    message = _refusal(bomb)
    assert "would unpack to 12.0 MB, more than the 10.0 MB allowed" in message and "refused without opening" in message


def test_zip_bomb_under_the_limit_is_refused_by_its_compression_ratio(openpyxl_forbidden):
    bomb = _xlsx_like({"xl/sharedStrings.xml": b"A" * (8 * 1024 * 1024)})
    assert "looks like a zip bomb" in _refusal(bomb, limit=LIMIT)


def test_the_import_command_refuses_them_and_writes_nothing(openpyxl_forbidden, make_user, tmp_path, settings):
    settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES = LIMIT
    make_user("p1", "rater")
    fake = tmp_path / "scores.xlsx"
    fake.write_bytes(b"a,b\n1,2\n")
    bomb = tmp_path / "bomb.xlsx"
    bomb.write_bytes(_xlsx_like({"xl/worksheets/sheet1.xml": b"\x00" * (50 * 1024 * 1024)}))
    before = table_counts()
    with pytest.raises(CommandError, match="scores.xlsx is not an Excel .xlsx workbook"):
        call_command("import_thumbs_workbook", str(fake), campaign="c", rater="p1", stderr=io.StringIO())
    with pytest.raises(CommandError, match="bomb.xlsx would unpack to 50.0 MB"):
        call_command("import_thumbs_workbook", str(bomb), campaign="c", rater="p1", stderr=io.StringIO())
    assert table_counts() == before


def test_a_real_small_workbook_passes_the_checks(make_user):
    book = openpyxl.Workbook()
    book.active.title = "Assessment"
    buffer = io.BytesIO()
    book.save(buffer)
    xlsx_check(io.BytesIO(buffer.getvalue()), max_uncompressed_bytes=LIMIT)  # no exception
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(content=buffer.getvalue(), file_name="empty.xlsx", campaign_name="c", rater=make_user("p1"))
    assert refused.value.errors == [
        "Assessment: no header row (a row starting with 'No.') — is this a THumBS workbook?"
    ]
