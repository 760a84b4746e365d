"""Export a rater's workbook, fill it like a person, import it: the values come back exactly."""

import io
import json
import zipfile
from decimal import Decimal

import openpyxl
import pytest
from django.core.management import call_command

from corpus.models import Caption
from ratings.models import Assignment, Source, ThumbsRating, campaign_rater_code
from ratings.services.workbooks import rater_workbook_export, workbook_import
from tests.ratings.workbook_helpers import caption_rows, clip_of_record, thumbs_campaign, workbook_fill

pytestmark = pytest.mark.django_db

INJECTIONS = ['=HYPERLINK("http://evil.example","click")', "+1 dog barks", "-loud engine @ night", "@SUM(A1:A2)"]


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _export_bytes(campaign, rater, **options) -> bytes:
    export = rater_workbook_export(campaign=campaign, rater=rater, **options)
    return next(iter(export.workbooks.values()))


def test_export_fill_import_gives_back_every_value(make_user, media_root):
    rater = make_user("ana", "rater")
    campaign = thumbs_campaign(name="round", raters=[rater])
    content = _export_bytes(campaign, rater)
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    rows = caption_rows(sheet)
    # The rater's order: clips by assignment position, captions by the item's caption order.
    # Record IDs are the rater's own item tokens, never the clips' names.
    items = Assignment.objects.get(campaign=campaign, rater=rater).items.order_by("position")
    expected_order = [(item.token, Caption.objects.get(pk=pk).text) for item in items for pk in item.caption_order]
    assert [(record_id, text) for _, record_id, text, _ in rows] == expected_order
    clips = clip_of_record(campaign, rater)
    records = {external_id: record_id for record_id, external_id in clips.items()}
    typed = {}
    for index, (_, record_id, text, _) in enumerate(rows):
        typed[(record_id, text)] = {
            "E": [" 4 ", 5, "3", 1, 2, 4][index],
            "F": [2, "5", 4, 3, "1 ", 5][index],
            "G": [None, -0.1, "-0.5", -2, 0, "-1.5"][index],
            "H": [-0.3, None, 0, "-1", None, -0.2][index],
            "I": ["", -1.2, None, -0.1, "-2", 0][index],
            "K": ["muffled start", None, "two birds?", None, "=2+3", None][index],
        }
    filled = workbook_fill(
        content, typed, synthesized={records["1.wav"]: "Yes", records["2.wav"]: "no ", records["3.wav"]: "N"}
    )

    summary = workbook_import(content=filled, file_name="P1_excel.xlsx", campaign_name=campaign.name, rater=rater)

    assert summary["ratings_created"] == 6 and summary["clips_created"] == 0 and summary["captions_created"] == 0
    assert summary["workbook_kind"] == "exported by this app" and summary["items_with_changed_answers"] == 3
    synthesized = {"1.wav": "yes", "2.wav": "no", "3.wav": "no"}
    for (record_id, text), cells in typed.items():
        external_id = clips[record_id]
        rating = ThumbsRating.objects.get(rater=rater, caption__text=text, caption__clip__external_id=external_id)
        assert rating.precision == int(str(cells["E"]).strip())
        assert rating.recall == int(str(cells["F"]).strip())
        for letter, name in (("G", "fluency"), ("H", "conciseness"), ("I", "irrelevance")):
            typed_value = cells[letter]
            want = Decimal(str(typed_value).strip()) if typed_value not in (None, "") else Decimal(0)
            assert getattr(rating, name) == want, (record_id, name)
        assert rating.comment == (cells["K"] or "")
        assert rating.synthesized == synthesized[external_id]
        assert rating.source == Source.WORKBOOK and rating.campaign == campaign and len(rating.workbook_sha256) == 64
    assert Assignment.objects.get(campaign=campaign, rater=rater).items.filter(completed_at__isnull=False).count() == 3


def test_captions_are_blinded_in_the_workbook(make_user, media_root):
    rater = make_user("ben", "rater")
    campaign = thumbs_campaign(name="blind", raters=[rater])
    sheet = openpyxl.load_workbook(io.BytesIO(_export_bytes(campaign, rater)))["Assessment"]
    texts = " ".join(str(cell.value) for row in sheet.iter_rows() for cell in row if cell.value is not None).lower()
    assert "blind-system" not in texts and "machine" not in texts and "human" not in texts and "reference" not in texts


def test_formula_like_text_is_stored_as_text_and_imports_back_exactly(make_user, media_root):
    rater = make_user("cleo", "rater")
    texts = {"9.wav": INJECTIONS[:2], "10.wav": INJECTIONS[2:]}
    campaign = thumbs_campaign(name="inject", raters=[rater], texts=texts)
    content = _export_bytes(campaign, rater)
    book = openpyxl.load_workbook(io.BytesIO(content))
    cells = {row: book["Assessment"].cell(row, 4) for row, *_ in caption_rows(book["Assessment"])}
    assert sorted(cell.value for cell in cells.values()) == sorted(INJECTIONS)
    for cell in cells.values():
        assert cell.data_type == "s" and cell.quotePrefix
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        sheet_xml = archive.read("xl/worksheets/sheet2.xml").decode()
    assert "<f>" not in sheet_xml and "HYPERLINK" in sheet_xml  # present as text, never as a formula

    record = {clip: record_id for record_id, clip in clip_of_record(campaign, rater).items()}["9.wav"]
    filled = workbook_fill(content, {(record, INJECTIONS[0]): {"E": 3, "F": 3, "K": "-bad mic"}})
    workbook_import(content=filled, file_name="inject.xlsx", campaign_name="inject", rater=rater)
    rating = ThumbsRating.objects.get(rater=rater)
    assert rating.caption.text == INJECTIONS[0] and rating.comment == "-bad mic"
    assert Caption.objects.count() == 4  # matched the existing captions, none created


def test_score_cells_have_data_validation_and_are_the_only_unlocked_cells(make_user, media_root):
    rater = make_user("dan", "rater")
    campaign = thumbs_campaign(name="valid", raters=[rater])
    sheet = openpyxl.load_workbook(io.BytesIO(_export_bytes(campaign, rater)))["Assessment"]
    rows = [row for row, *_ in caption_rows(sheet)]
    first, last = min(rows), max(rows)
    rules = {
        (rule.type, str(rule.sqref)): (rule.formula1, rule.formula2) for rule in sheet.data_validations.dataValidation
    }
    assert rules == {
        ("whole", f"E{first}:F{last}"): ("1", "5"),
        ("decimal", f"G{first}:I{last}"): ("-2", "0"),
        ("list", f"J{first}:J{last}"): ('"Yes,No"', None),
    }
    assert sheet.protection.sheet
    for row in rows:
        assert all(not sheet[f"{letter}{row}"].protection.locked for letter in "EFGHIK")
        assert all(sheet[f"{letter}{row}"].protection.locked for letter in "ABCD")
    assert not sheet[f"J{first}"].protection.locked
    header = [sheet.cell(first - 1, column).value for column in range(1, 12)]
    assert header == [
        "No.",
        "Record ID",
        "Caption",
        None,
        "Precision ( [1, 5] )",
        "Recall ( [1, 5] )",
        "Fluency (negative) ( [-2, 0] )",
        "Conciseness (negative) ( [-2, 0] )",
        "Irrelevance (negative) ( [-2, 0] )",
        "Is this audio synthesized? (yes/no)",
        "Comments",
    ]


def test_existing_ratings_are_filled_in_and_reimport_changes_nothing(make_user, media_root):
    rater = make_user("eve", "rater")
    campaign = thumbs_campaign(name="prefill", raters=[rater])
    caption = campaign.captions.order_by("pk").first()
    ThumbsRating.objects.create(
        rater=rater,
        caption=caption,
        campaign=campaign,
        precision=2,
        recall=3,
        fluency=Decimal("-0.5"),
        synthesized="yes",
        comment="from the web",
    )
    content = _export_bytes(campaign, rater)
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    row = next(row for row, _, text, _ in caption_rows(sheet) if text == caption.text)
    assert [sheet[f"{letter}{row}"].value for letter in "EFGK"] == [2, 3, -0.5, "from the web"]
    before = ThumbsRating.objects.values().get(pk=ThumbsRating.objects.get(caption=caption).pk)
    summary = workbook_import(content=content, file_name="same.xlsx", campaign_name="prefill", rater=rater)
    # the web answer came back unchanged: it stays the web answer (source, time), no event
    assert (summary["ratings_created"], summary["ratings_updated"], summary["ratings_unchanged"]) == (0, 0, 1)
    assert ThumbsRating.objects.values().get(pk=before["id"]) == before
    again = workbook_import(content=content, file_name="same.xlsx", campaign_name="prefill", rater=rater)
    assert (again["ratings_created"], again["ratings_updated"], again["ratings_unchanged"]) == (0, 0, 1)


def test_local_links_point_into_the_zip_audio_folder(make_user, media_root, tmp_path):
    rater = make_user("fay", "rater")
    campaign = thumbs_campaign(name="local", texts={"1.wav": ["a b", "c d"], "sub/2": ["e f", "g h"]}, with_audio=True)
    out = tmp_path / "out"
    call_command("export_thumbs_workbooks", campaign="local", rater=["fay"], links="local", out=str(out))

    assert Assignment.objects.filter(campaign=campaign, rater=rater).exists()  # assigned on export
    folder = f"study-{campaign_rater_code(campaign.pk)}_P1_fay"
    record = {clip: record_id for record_id, clip in clip_of_record(campaign, rater).items()}
    zip_path = out / f"{folder}.zip"
    with zipfile.ZipFile(zip_path) as archive:
        names = sorted(archive.namelist())
        # Zip entries are named by the rater's tokens: nothing names the clip or the campaign.
        assert names == sorted(["P1_excel.xlsx", f"audio/{record['1.wav']}.wav", f"audio/{record['sub/2']}.wav"])
        assert archive.read(f"audio/{record['1.wav']}.wav")[:4] == b"RIFF"
        sheet = openpyxl.load_workbook(io.BytesIO(archive.read("P1_excel.xlsx")))["Assessment"]
    links = {
        sheet.cell(row, 2).value: sheet.cell(row, 2).hyperlink.target
        for row, _, _, first in caption_rows(sheet)
        if row == first
    }
    assert links == {record_id: f"audio/{record_id}.wav" for record_id in record.values()}
    assert (out / folder / "P1_excel.xlsx").is_file() and (out / folder / "audio" / f"{record['sub/2']}.wav").is_file()


def test_url_links_from_a_mapping_file(make_user, media_root, tmp_path):
    gus = make_user("gus", "rater")
    campaign = thumbs_campaign(name="mapped")
    mapping = {f"{number}.wav": f"https://drive.example.org/file/{number}" for number in (1, 2, 3)}
    (tmp_path / "links.json").write_text(json.dumps(mapping))
    out = tmp_path / "out"
    call_command(
        "export_thumbs_workbooks",
        campaign="mapped",
        rater=["gus"],
        links="url",
        out=str(out),
        url_map=str(tmp_path / "links.json"),
    )
    with zipfile.ZipFile(out / f"study-{campaign_rater_code(campaign.pk)}_P1_gus.zip") as archive:
        assert archive.namelist() == ["P1_url.xlsx"]
        sheet = openpyxl.load_workbook(io.BytesIO(archive.read("P1_url.xlsx")))["Assessment"]
    links = {
        sheet.cell(row, 2).value: sheet.cell(row, 2).hyperlink.target
        for row, _, _, first in caption_rows(sheet)
        if row == first
    }
    # The mapping file is keyed by the clips' own names; the sheet shows the rater's tokens beside those URLs.
    clips = clip_of_record(campaign, gus)
    assert {clips[record_id]: url for record_id, url in links.items()} == mapping


def test_signed_url_links_play_the_clip_without_signing_in(make_user, media_root, tmp_path, client):
    make_user("hal", "rater")
    campaign = thumbs_campaign(name="signed", with_audio=True)
    out = tmp_path / "out"
    call_command(
        "export_thumbs_workbooks",
        campaign="signed",
        rater=["hal"],
        links="url",
        out=str(out),
        base_url="https://eval.example.org/",
    )
    folder = out / f"study-{campaign_rater_code(campaign.pk)}_P1_hal"
    sheet = openpyxl.load_workbook(folder / "P1_url.xlsx")["Assessment"]
    targets = [sheet.cell(row, 2).hyperlink.target for row, _, _, first in caption_rows(sheet) if row == first]
    assert len(targets) == 3 and all(
        target.startswith("https://eval.example.org/ratings/workbook-audio/") for target in targets
    )
    path = targets[0].removeprefix("https://eval.example.org")
    response = client.get(path)
    assert response.status_code == 200 and b"".join(response.streaming_content)[:4] == b"RIFF"
    assert "Content-Disposition" not in response, "no file name derived from the clip"
    assert client.get(path.replace("workbook-audio/", "workbook-audio/x")).status_code == 404


def test_without_rater_every_rater_of_the_campaign_gets_a_zip(make_user, media_root, tmp_path):
    raters = [make_user("ida", "rater"), make_user("jon", "rater")]
    campaign = thumbs_campaign(name="all", raters=raters)
    out = tmp_path / "out"
    call_command("export_thumbs_workbooks", campaign="all", links="local", out=str(out), stdout=io.StringIO())
    study = f"study-{campaign_rater_code(campaign.pk)}"
    assert sorted(path.name for path in out.glob("*.zip")) == [f"{study}_P1_ida.zip", f"{study}_P2_jon.zip"]
    with zipfile.ZipFile(out / f"{study}_P2_jon.zip") as archive:
        assert "P2_excel.xlsx" in archive.namelist()


def test_captions_added_to_the_campaign_later_appear_in_the_next_export(make_user, media_root):
    rater = make_user("kim", "rater")
    campaign = thumbs_campaign(name="late", raters=[rater])
    clip = campaign.dataset.clips.get(external_id="2.wav")
    late = Caption.objects.create(
        clip=clip, text="A third caption, added later.", role="candidate", author_kind="human"
    )
    campaign.captions.add(late)
    sheet = openpyxl.load_workbook(io.BytesIO(_export_bytes(campaign, rater)))["Assessment"]
    record = {clip: record_id for record_id, clip in clip_of_record(campaign, rater).items()}["2.wav"]
    texts = [text for _, record_id, text, _ in caption_rows(sheet) if record_id == record]
    assert len(texts) == 3 and late.text in texts  # placed at random: the rater had not opened that clip
    assert sheet.merged_cells.ranges and any(
        str(cell_range).startswith("B") and cell_range.size["rows"] == 3 for cell_range in sheet.merged_cells.ranges
    )
