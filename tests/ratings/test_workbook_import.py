"""Importing workbooks in the study's hand-made layout (the shared P1 workbook), messy but valid cells,
invalid ones (every error listed, nothing written), re-imports and dry runs."""

import io
import json
import re
import subprocess
import sys
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, Clip, Dataset
from ratings.models import Assignment, Campaign, Source, ThumbsRating
from ratings.services.workbooks import WORKBOOK_CAPTION_LABEL, WorkbookImportError, workbook_import
from tests.ratings.workbook_helpers import (
    FILL_SCRIPT,
    P1_WORKBOOK,
    caption_rows,
    light_copy,
    overall,
    table_counts,
)

pytestmark = pytest.mark.django_db


def _fill(shared_dir: Path, source: Path, out: Path, seed: int) -> Path:
    # The runner saves the script minutes on whole-row merges and writes the same files (fill_script_runner.py).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.ratings.fill_script_runner",
            str(shared_dir / FILL_SCRIPT),
            str(source),
            str(out),
            str(seed),
        ],
        check=True,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return out


@pytest.fixture(scope="module")
def p1_light(shared_dir) -> bytes:
    """The real P1 workbook, full-row merges narrowed so openpyxl's editing mode opens it in a second."""
    return light_copy((shared_dir / P1_WORKBOOK).read_bytes())


@pytest.fixture(scope="module")
def filled_p1(shared_dir, p1_light, tmp_path_factory) -> Path:
    """valid.xlsx, invalid.xlsx and expected.json from the shared fill script, run on the P1 workbook."""
    out = tmp_path_factory.mktemp("filled")
    (out / "P1_excel.xlsx").write_bytes(p1_light)
    return _fill(shared_dir, out / "P1_excel.xlsx", out, 7)


def _google_variant(source: Path, target: Path) -> Path:
    """The `_google` twin: the same workbook with record IDs linking to cloud-drive URLs (rewritten in
    the sheet relationships, as the twin differs only in link targets)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as twin:
        for info in original.infolist():
            data = original.read(info.filename)
            if info.filename.startswith("xl/worksheets/_rels/"):
                data = re.sub(
                    rb'Target="[^"]*?([^"/\\]+)" TargetMode="External"',
                    rb'Target="https://drive.google.com/file/d/\1/view" TargetMode="External"',
                    data,
                )
            twin.writestr(info, data)
    return target


def _ratings_by_key(rater) -> dict:
    return {
        (rating.caption.clip.external_id, rating.caption.text): rating
        for rating in ThumbsRating.objects.filter(rater=rater).select_related("caption__clip")
    }


def _assert_matches_expected(rater, expected: list[dict]) -> None:
    got = _ratings_by_key(rater)
    assert len(got) == len(expected)
    for entry in expected:
        rating = got[(entry["record_id"], entry["caption"])]
        assert (rating.precision, rating.recall) == (entry["precision"], entry["recall"])
        for name in ("fluency", "conciseness", "irrelevance"):
            assert getattr(rating, name) == Decimal(str(entry[name]))
        assert rating.synthesized == ("yes" if entry["synthesized"] else "no")
        assert rating.comment == (entry["comment"] or "")
        assert float(rating.overall) == pytest.approx(entry["overall"], abs=1e-9)


@pytest.mark.parametrize("variant", ["excel", "google"])
def test_filled_p1_workbook_imports_into_a_new_campaign(variant, filled_p1, make_user, tmp_path, shared_dir):
    rater = make_user("p1", "rater")
    filled = filled_p1
    path = filled / "valid.xlsx"
    if variant == "google":
        google_twin = shared_dir / "datasets/thumbs/P1_google.xlsx"
        if google_twin.exists():
            (tmp_path / "P1_google.xlsx").write_bytes(light_copy(google_twin.read_bytes()))
            filled = path = _fill(shared_dir, tmp_path / "P1_google.xlsx", tmp_path, 8)
            path = filled / "valid.xlsx"
        else:  # only the _excel workbook is shared: make the twin of the filled one
            path = _google_variant(path, tmp_path / "P1_google.xlsx")
        links = [
            cell.hyperlink.target
            for row in openpyxl.load_workbook(path)["Assessment"].iter_rows(max_col=2)
            for cell in row
            if cell.hyperlink
        ]
        assert len(links) == 60 and all(link.startswith("https://drive.google.com/") for link in links)
    expected = json.loads((filled / "expected.json").read_text())

    call_command("import_thumbs_workbook", str(path), campaign="study-p1", rater="p1")

    campaign = Campaign.objects.get(name="study-p1")
    assert campaign.task_type == "thumbs" and campaign.dataset == Dataset.objects.get(name="study-p1")
    assert Clip.objects.filter(dataset=campaign.dataset).count() == 60
    assert campaign.captions.count() == 120
    assert set(Caption.objects.values_list("role", "author_kind", "source_label", "system")) == {
        ("candidate", "human", WORKBOOK_CAPTION_LABEL, None)
    }
    _assert_matches_expected(rater, expected["ratings"])
    assert all(rating.source == Source.WORKBOOK for rating in ThumbsRating.objects.all())
    # The assignment follows the workbook: its clips in its order, captions in its order.
    sheet = openpyxl.load_workbook(path, read_only=True)["Assessment"]
    workbook_order = [(record_id, text) for _, record_id, text, _ in caption_rows(sheet)]
    items = Assignment.objects.get(campaign=campaign, rater=rater).items.order_by("position").select_related("clip")
    captions = dict(Caption.objects.values_list("pk", "text"))
    assert [(item.clip.external_id, captions[pk]) for item in items for pk in item.caption_order] == workbook_order
    assert items.filter(completed_at__isnull=False).count() == 60 - len(expected["blank_clips"])


def test_invalid_p1_workbook_lists_every_error_and_writes_nothing(filled_p1, make_user):
    make_user("p1", "rater")
    expected = json.loads((filled_p1 / "expected.json").read_text())
    before = table_counts()
    with pytest.raises(CommandError, match="3 error"):
        call_command(
            "import_thumbs_workbook",
            str(filled_p1 / "invalid.xlsx"),
            campaign="broken",
            rater="p1",
            stderr=io.StringIO(),
        )
    assert table_counts() == before
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(
            content=(filled_p1 / "invalid.xlsx").read_bytes(),
            file_name="invalid.xlsx",
            campaign_name="broken",
            rater=make_user("p2"),
        )
    cells = sorted(error.split(":")[0] for error in refused.value.errors)
    assert cells == sorted(f"Assessment!{cell}" for cell in expected["expected_errors"])
    assert any(
        error.startswith("Assessment!") and " 7 — precision must be a whole number 1–5" in error
        for error in refused.value.errors
    )


def test_reimport_updates_in_place(filled_p1, make_user):
    rater = make_user("p1", "rater")
    content = (filled_p1 / "valid.xlsx").read_bytes()
    first = workbook_import(
        content=content, file_name="valid.xlsx", campaign_name="again", rater=rater, create_campaign=True
    )
    counts = table_counts()
    second = workbook_import(content=content, file_name="valid.xlsx", campaign_name="again", rater=rater)
    assert table_counts() == counts
    assert (second["ratings_created"], second["ratings_updated"], second["ratings_unchanged"]) == (
        0,
        0,
        first["ratings_created"],
    )
    assert (second["clips_created"], second["captions_created"], second["assignment_items_added"]) == (0, 0, 0)

    book = openpyxl.load_workbook(io.BytesIO(content))
    sheet = book["Assessment"]
    row, record_id, text, _ = next(entry for entry in caption_rows(sheet) if sheet.cell(entry[0], 5).value is not None)
    sheet.cell(row, 5).value = 1 if str(sheet.cell(row, 5).value).strip() != "1" else 2
    buffer = io.BytesIO()
    book.save(buffer)
    third = workbook_import(content=buffer.getvalue(), file_name="edited.xlsx", campaign_name="again", rater=rater)
    # only the edited rating is written; the rows the file repeats stay as the first import left them
    assert (third["ratings_created"], third["ratings_updated"]) == (0, 1)
    assert third["ratings_unchanged"] == first["ratings_created"] - 1
    rating = ThumbsRating.objects.get(rater=rater, caption__text=text, caption__clip__external_id=record_id)
    assert rating.precision == sheet.cell(row, 5).value
    assert ThumbsRating.objects.filter(rater=rater).count() == first["ratings_created"]


def test_dry_run_writes_nothing(filled_p1, make_user):
    make_user("p1", "rater")
    before = table_counts()
    output = io.StringIO()
    call_command(
        "import_thumbs_workbook", str(filled_p1 / "valid.xlsx"), campaign="dry", rater="p1", dry_run=True, stdout=output
    )
    assert table_counts() == before
    assert "dry run" in output.getvalue() and "ratings created: " in output.getvalue()


def _messy_p1(p1_light: bytes, edits: dict[str, object]) -> bytes:
    """The P1 workbook with cells typed in: edits[cell] = value (J6:J7 unmerged, to answer twice)."""
    book = openpyxl.load_workbook(io.BytesIO(p1_light))
    sheet = book["Assessment"]
    sheet.unmerge_cells("J6:J7")
    for cell, value in edits.items():
        sheet[cell] = value
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_messy_but_valid_cells(p1_light, make_user):
    rater = make_user("p1", "rater")
    # Rows 6/7: clip 3.wav; rows 8/9: 42.wav; rows 76/77: 5.flac (second section). Header spacing varied too.
    edits = {
        "E5": "Precision([1,5])",
        "F5": "  recall ( [1, 5] ) ",
        "J5": "Is this audio synthesised?",
        "E6": " 4 ",
        "F6": "3",
        "G6": "-0,5",
        "H6": "\u22120.1",
        "I6": None,
        "J6": "Yes ",
        "K6": "clear",
        "L6": "also: wind",
        "E7": 5.0,
        "F7": 5,
        "G7": 0,
        "H7": "",
        "I7": -2,
        "E8": 2,
        "F8": "2",
        "G8": "-1",
        "J8": "n",
        "M8": "stray note",
        "E76": 1,
        "F76": 1,
        "J76": "y",
        "E77": 3,
        "F77": "4 ",
        "I77": "-0.3",
        "K77": "=not a formula",
    }
    summary = workbook_import(
        content=_messy_p1(p1_light, edits),
        file_name="messy.xlsx",
        campaign_name="messy",
        rater=rater,
        create_campaign=True,
    )

    assert summary["rated_rows"] == 5 and summary["unrated_rows_skipped"] == 115
    got = {key: rating for key, rating in _ratings_by_key(rater).items()}
    by_row = {}
    sheet = openpyxl.load_workbook(io.BytesIO(p1_light), read_only=True)["Assessment"]
    for row, record_id, text, _ in caption_rows(sheet):
        by_row[row] = got.get((record_id, text))
    assert (by_row[6].precision, by_row[6].recall, by_row[6].fluency, by_row[6].conciseness, by_row[6].irrelevance) == (
        4,
        3,
        Decimal("-0.5"),
        Decimal("-0.1"),
        Decimal("0"),
    )
    assert by_row[6].comment == "clear\nalso: wind" and by_row[6].synthesized == "yes"
    assert by_row[7].synthesized == "yes" and by_row[7].overall == overall(5, 5, 0, 0, -2)
    assert by_row[8].synthesized == "no" and by_row[8].comment == "stray note" and by_row[9] is None
    assert by_row[76].synthesized == by_row[77].synthesized == "yes"
    assert by_row[77].comment == "=not a formula" and by_row[77].irrelevance == Decimal("-0.3")


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        ({"E6": 0, "F6": 3}, ["Assessment!E6: 0 — precision must be a whole number 1–5"]),
        ({"E6": 4.5, "F6": 3}, ["Assessment!E6: 4.5 — precision must be a whole number 1–5"]),
        (
            {"E6": 4, "F6": 3, "G6": -0.25},
            ["Assessment!G6: -0.25 — fluency must have at most one decimal (e.g. -0.1, -0.5, -1)"],
        ),
        (
            {"E6": 4, "F6": 3, "H6": 0.5},
            ["Assessment!H6: 0.5 — conciseness must be a number from -2 to 0 (blank means 0)"],
        ),
        (
            {"E6": 4, "F6": 3, "I6": "-2.5"},
            ["Assessment!I6: -2.5 — irrelevance must be a number from -2 to 0 (blank means 0)"],
        ),
        ({"E6": 4, "G6": -1}, ["Assessment!F6: (blank) — recall is required on a rated row"]),
        (
            {"G6": -1},
            [
                "Assessment!E6: (blank) — precision is required on a rated row",
                "Assessment!F6: (blank) — recall is required on a rated row",
            ],
        ),
        ({"E6": 4, "F6": 3, "J6": "maybe"}, ["Assessment!J6: maybe — synthesized must be yes or no"]),
        (
            {"E6": 4, "F6": 3, "J6": "yes", "E7": 4, "F7": 4, "J7": "no"},
            ["Assessment!J7: no — conflicts with the answer at Assessment!J6 for the same clip"],
        ),
        (
            {"E6": "four", "F6": "=1+2", "E8": 9, "F8": 1, "G8": "x"},
            [
                "Assessment!E6: four — precision must be a whole number 1–5",
                "Assessment!F6: =1+2 — recall must be a whole number 1–5",
                "Assessment!E8: 9 — precision must be a whole number 1–5",
                "Assessment!G8: x — fluency must be a number from -2 to 0 (blank means 0)",
            ],
        ),
    ],
)
def test_meaningless_values_are_refused_cell_by_cell(p1_light, make_user, edits, expected):
    rater = make_user("p1", "rater")
    before = table_counts()
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(content=_messy_p1(p1_light, edits), file_name="bad.xlsx", campaign_name="bad", rater=rater)
    assert refused.value.errors == expected
    assert table_counts() == before


def test_unknown_rater_and_pairwise_campaign_are_refused(filled_p1, make_user):
    make_user("p1")
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("import_thumbs_workbook", str(filled_p1 / "valid.xlsx"), campaign="x", rater="ghost")
    Campaign.objects.create(name="pairs", dataset=Dataset.objects.create(name="pairs"), task_type="pairwise")
    with pytest.raises(CommandError, match="pairwise campaign, not THumBS"):
        call_command(
            "import_thumbs_workbook", str(filled_p1 / "valid.xlsx"), campaign="pairs", rater="p1", stderr=io.StringIO()
        )
    assert not ThumbsRating.objects.exists()


@pytest.mark.slow
def test_the_untouched_shared_p1_workbook_filled_by_the_fill_script_imports(shared_dir, make_user, tmp_path):
    """The real file as shared, full-row merges and all (the fill script needs about half a minute to open it)."""
    rater = make_user("p1", "rater")
    filled = _fill(shared_dir, shared_dir / P1_WORKBOOK, tmp_path, 11)
    call_command(
        "import_thumbs_workbook", str(filled / "valid.xlsx"), campaign="real-p1", rater="p1", stdout=io.StringIO()
    )
    _assert_matches_expected(rater, json.loads((filled / "expected.json").read_text())["ratings"])
