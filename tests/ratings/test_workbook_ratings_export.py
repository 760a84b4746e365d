"""export_thumbs_ratings: exact JSON keys and numbers, CSV, xlsx with per-clip averages, authorship only on request."""

import csv
import io
import json
from decimal import Decimal

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from ratings.models import AssignmentItem, ThumbsRating
from tests.ratings.workbook_helpers import overall, thumbs_campaign

pytestmark = pytest.mark.django_db

KEYS = [
    "rater",
    "record_id",
    "caption",
    "precision",
    "recall",
    "fluency",
    "conciseness",
    "irrelevance",
    "synthesized",
    "comment",
    "overall",
]


@pytest.fixture
def rated(make_user):
    """Two raters on a 3-clip campaign; ana rates everything, bob two captions; bob is excluded from reports."""
    ana, bob = make_user("ana", "rater"), make_user("bob", "rater")
    campaign = thumbs_campaign(name="scores", raters=[ana, bob])
    captions = list(campaign.captions.order_by("pk"))
    values = {}
    for index, caption in enumerate(captions):
        values[("ana", caption.pk)] = (
            1 + index % 5,
            5 - index % 5,
            "-0.1",
            "0",
            "-1.5" if index == 2 else "0",
            "yes" if index < 2 else "",
            "=cmd()" if index == 0 else "",
        )
    values[("bob", captions[0].pk)] = (3, 4, "-0.5", "-0.2", "0", "no", "ok")
    values[("bob", captions[3].pk)] = (2, 2, "0", "0", "-2", "", "")
    users = {"ana": ana, "bob": bob}
    for (username, caption_id), (p, r, f, c, i, synthesized, comment) in values.items():
        ThumbsRating.objects.create(
            rater=users[username],
            caption_id=caption_id,
            campaign=campaign,
            precision=p,
            recall=r,
            fluency=Decimal(f),
            conciseness=Decimal(c),
            irrelevance=Decimal(i),
            synthesized=synthesized,
            comment=comment,
        )
    campaign.excluded_raters.add(bob)
    return campaign, values


def _run(*args, **options) -> str:
    out = io.StringIO()
    call_command("export_thumbs_ratings", *args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def test_json_has_exactly_the_keys_and_numbers_as_numbers(rated):
    campaign, values = rated
    rows = json.loads(_run(campaign="scores", format="json"))
    assert len(rows) == len(values) == 8
    for row in rows:
        assert list(row) == KEYS
        caption_id = ThumbsRating.objects.get(rater__username=row["rater"], caption__text=row["caption"]).caption_id
        p, r, f, c, i, synthesized, comment = values[(row["rater"], caption_id)]
        assert (row["precision"], row["recall"]) == (p, r) and isinstance(row["precision"], int)
        assert (row["fluency"], row["conciseness"], row["irrelevance"]) == (float(f), float(c), float(i))
        assert row["synthesized"] == {"yes": True, "no": False, "": None}[synthesized]
        assert row["comment"] == (comment or None)
        assert isinstance(row["overall"], float) and row["overall"] == float(overall(p, r, f, c, i))
        # The record ID that rater knew the clip by: their own item token (page URLs, their workbook).
        assert (
            row["record_id"]
            == AssignmentItem.objects.get(
                assignment__rater__username=row["rater"],
                assignment__campaign=campaign,
                clip__captions__text=row["caption"],
            ).token
        )


def test_authorship_only_with_the_flag(rated):
    plain = _run(campaign="scores", format="json")
    assert "machine" not in plain and "scores-system" not in plain
    rows = json.loads(_run(campaign="scores", format="json", include_authorship=True))
    assert list(rows[0]) == KEYS + ["author_kind", "system"]
    assert {(row["author_kind"], row["system"]) for row in rows} == {("human", None), ("machine", "scores-system")}


def test_excluded_raters_are_kept_unless_asked(rated):
    assert {row["rater"] for row in json.loads(_run(campaign="scores", format="json"))} == {"ana", "bob"}
    assert {row["rater"] for row in json.loads(_run(campaign="scores", format="json", skip_excluded=True))} == {"ana"}


def test_per_clip_averages_match_a_direct_computation(rated):
    campaign, values = rated
    averages = json.loads(_run(campaign="scores", format="json", per_clip=True))
    assert len(averages) == 6 and [entry["no"] for entry in averages] == [1, 2, 3, 4, 5, 6]
    for entry in averages:
        caption = campaign.captions.get(text=entry["caption"], clip__external_id=entry["record_id"])
        scored = [value for (_, caption_id), value in values.items() if caption_id == caption.pk]
        assert entry["ratings"] == len(scored)
        for index, name in enumerate(("precision", "recall", "fluency", "conciseness", "irrelevance")):
            assert entry[f"{name}_avg"] == pytest.approx(sum(float(value[index]) for value in scored) / len(scored))
        assert entry["overall_avg"] == pytest.approx(sum(float(overall(*value[:5])) for value in scored) / len(scored))


def test_csv_rows_and_formula_text_escaped(rated):
    rows = list(csv.DictReader(io.StringIO(_run(campaign="scores", format="csv"))))
    assert list(rows[0]) == KEYS and len(rows) == 8
    assert "'=cmd()" in {row["comment"] for row in rows}
    per_clip = list(csv.reader(io.StringIO(_run(campaign="scores", format="csv", per_clip=True))))
    assert per_clip[0] == [
        "No.",
        "Audio ID",
        "Caption",
        "Ratings",
        "Precision_Avg",
        "Recall_Avg",
        "Fluency_Avg",
        "Conciseness_Avg",
        "Irrelevance_Avg",
        "OverallScore_Avg",
    ]


def test_xlsx_has_ratings_and_per_clip_sheets(rated, tmp_path):
    out = tmp_path / "scores.xlsx"
    call_command("export_thumbs_ratings", campaign="scores", format="xlsx", out=str(out), stderr=io.StringIO())
    book = openpyxl.load_workbook(out)
    assert book.sheetnames == ["Ratings", "Per clip"]
    ratings = list(book["Ratings"].iter_rows(values_only=True))
    assert list(ratings[0]) == KEYS and len(ratings) == 9
    formula_cell = next(cell for row in book["Ratings"].iter_rows() for cell in row if cell.value == "=cmd()")
    assert formula_cell.data_type == "s" and formula_cell.quotePrefix
    per_clip = list(book["Per clip"].iter_rows(values_only=True))
    assert per_clip[0][:2] == ("No.", "Audio ID") and len(per_clip) == 7
    with pytest.raises(CommandError, match="needs --out"):
        call_command("export_thumbs_ratings", campaign="scores", format="xlsx")
