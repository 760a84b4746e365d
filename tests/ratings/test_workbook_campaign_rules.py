"""Workbooks never move or silently overwrite ratings: which campaign and rater a workbook may go to.

The rule (ratings/services/workbook_import.py): an exported workbook's record IDs are its rater's item
tokens and resolve to exactly one (campaign, rater); a workbook of a study run outside the app goes into
a campaign made for that study, to which the rater is assigned; creating such a campaign is explicit
(or, from the command line, naming one that does not exist yet). Ratings are keyed by campaign.
"""

import io

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from ratings.models import AssignmentItem, Campaign, ItemEvent, Source, ThumbsRating
from ratings.services.campaigns import campaign_add_raters, campaign_create
from ratings.services.judgements import CaptionScores, StaleItemError, thumbs_item_submit
from ratings.services.workbooks import WorkbookImportError, rater_workbook_export, workbook_import
from tests.ratings.campaign_data import headphone_pass_give
from tests.ratings.test_judgements import _listened
from tests.ratings.workbook_helpers import (
    caption_rows,
    outside_workbook_make,
    table_counts,
    thumbs_campaign,
    workbook_fill,
)

pytestmark = pytest.mark.django_db

RATING_COLUMNS = (
    "pk",
    "campaign_id",
    "rater_id",
    "caption_id",
    "precision",
    "recall",
    "fluency",
    "conciseness",
    "irrelevance",
    "synthesized",
    "comment",
    "source",
    "workbook_sha256",
    "created_at",
    "updated_at",
)


def _rows(campaign) -> list[tuple]:
    return list(ThumbsRating.objects.filter(campaign=campaign).order_by("pk").values_list(*RATING_COLUMNS))


def _filled(campaign, rater, precision=4) -> bytes:
    content = rater_workbook_export(campaign=campaign, rater=rater).workbooks
    content = next(iter(content.values()))
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    values = {(record_id, text): {"E": precision, "F": 3} for _, record_id, text, _ in caption_rows(sheet)}
    synthesized = {record_id: "no" for _, record_id, _, _ in caption_rows(sheet)}
    return workbook_fill(content, values, synthesized=synthesized)


@pytest.fixture
def two_campaigns(make_user):
    """Campaigns A and B over the same captions; ana rates in both (A on the web), bea only in A."""
    ana, bea = make_user("ana", "rater"), make_user("bea", "rater")
    for rater in (ana, bea):
        headphone_pass_give(rater)
    first = thumbs_campaign(name="camp-a", raters=[ana, bea])
    second = campaign_create(
        name="camp-b", dataset=first.dataset, task_type="thumbs", captions=list(first.captions.all())
    )
    campaign_add_raters(campaign=second, raters=[ana])
    for item in first.assignments.get(rater=ana).items.all():
        item = _listened(item)
        scores = [CaptionScores(caption_id=caption_id, precision=2, recall=2) for caption_id in item.caption_order]
        thumbs_item_submit(item=item, scores=scores, synthesized="yes", seen_version=0)
    return first, second, ana, bea


def test_importing_one_campaigns_workbook_leaves_the_other_campaigns_ratings_byte_for_byte(two_campaigns):
    first, second, ana, _ = two_campaigns
    before = _rows(first)
    assert len(before) == 6
    summary = workbook_import(content=_filled(second, ana), file_name="b.xlsx", campaign_name="camp-b", rater=ana)
    assert summary["ratings_created"] == 6 and summary["workbook_kind"] == "exported by this app"
    assert _rows(first) == before, "campaign A's rows, timestamps included, are untouched"
    assert ThumbsRating.objects.filter(campaign=second, rater=ana).count() == 6
    # The same rater and caption now have one rating per campaign: nothing was moved between them.
    caption = first.captions.order_by("pk").first()
    assert sorted(
        ThumbsRating.objects.filter(rater=ana, caption=caption).values_list("campaign__name", "precision")
    ) == [
        ("camp-a", 2),
        ("camp-b", 4),
    ]


def test_an_exported_workbook_is_refused_by_another_campaign_and_another_rater(two_campaigns):
    first, second, ana, bea = two_campaigns
    content = _filled(first, ana, precision=5)
    counts, rows = table_counts(), _rows(first)
    with pytest.raises(WorkbookImportError) as other_campaign:
        workbook_import(content=content, file_name="a.xlsx", campaign_name="camp-b", rater=ana)
    assert "exported for rater ana of campaign camp-a; it cannot be imported for rater ana of campaign camp-b" in str(
        other_campaign.value
    )
    with pytest.raises(WorkbookImportError, match="exported for rater ana of campaign camp-a") as other_rater:
        workbook_import(content=content, file_name="a.xlsx", campaign_name="camp-a", rater=bea)
    assert "for rater bea" in str(other_rater.value)
    with pytest.raises(WorkbookImportError, match="cannot create a campaign"):
        workbook_import(content=content, file_name="a.xlsx", campaign_name="new-one", rater=ana, create_campaign=True)
    assert table_counts() == counts and _rows(first) == rows
    # The command says the same and writes nothing either.
    path = _tmp_file(content)
    with pytest.raises(CommandError, match="import refused"):
        call_command("import_thumbs_workbook", path, campaign="camp-b", rater="ana", stderr=io.StringIO())
    assert table_counts() == counts


def _tmp_file(content: bytes) -> str:
    import tempfile

    handle = tempfile.NamedTemporaryFile(suffix=".xlsx", delete=False)
    handle.write(content)
    handle.close()
    return handle.name


def test_reimport_updates_in_place_counts_the_change_and_bumps_the_answer_version(two_campaigns):
    first, second, ana, _ = two_campaigns
    content = _filled(second, ana)
    workbook_import(content=content, file_name="b.xlsx", campaign_name="camp-b", rater=ana)
    again = workbook_import(content=content, file_name="b.xlsx", campaign_name="camp-b", rater=ana)
    assert (again["ratings_created"], again["ratings_updated"], again["items_with_changed_answers"]) == (0, 0, 0)
    edited = _filled(second, ana, precision=1)
    summary = workbook_import(content=edited, file_name="b2.xlsx", campaign_name="camp-b", rater=ana)
    assert (summary["ratings_created"], summary["ratings_updated"], summary["items_with_changed_answers"]) == (0, 6, 3)
    assert set(ThumbsRating.objects.filter(campaign=second).values_list("precision", flat=True)) == {1}
    item = second.assignments.get(rater=ana).items.order_by("position").first()
    assert item.version == 2
    events = list(item.events.order_by("pk").values_list("kind", "version"))
    assert events == [("workbook", 1), ("workbook", 2)]
    assert item.events.last().previous_answer["captions"][0]["precision"] == 4
    # A web page still showing the answer of version 1 cannot overwrite the workbook's answer silently.
    scores = [CaptionScores(caption_id=caption_id, precision=5, recall=5) for caption_id in item.caption_order]
    with pytest.raises(StaleItemError):
        thumbs_item_submit(item=_listened(item), scores=scores, synthesized="no", seen_version=1)


def test_an_answer_given_again_on_the_web_after_the_export_is_not_overwritten_unless_asked(two_campaigns):
    first, _, ana, _ = two_campaigns
    content = _filled(first, ana, precision=5)  # exported at version 1 (the web answers)
    item = first.assignments.get(rater=ana).items.order_by("position").first()
    scores = [CaptionScores(caption_id=caption_id, precision=3, recall=3) for caption_id in item.caption_order]
    thumbs_item_submit(item=item, scores=scores, synthesized="no", seen_version=1)  # now version 2
    rows = _rows(first)
    with pytest.raises(WorkbookImportError, match="answered again after the workbook was exported"):
        workbook_import(content=content, file_name="a.xlsx", campaign_name="camp-a", rater=ana)
    assert _rows(first) == rows
    summary = workbook_import(
        content=content, file_name="a.xlsx", campaign_name="camp-a", rater=ana, replace_newer=True
    )
    assert summary["ratings_updated"] == 6 and summary["items_with_changed_answers"] == 3
    assert set(ThumbsRating.objects.filter(campaign=first, rater=ana).values_list("precision", "source")) == {
        (5, Source.WORKBOOK)
    }


def test_a_workbook_with_mixed_record_ids_is_refused_naming_the_cells(two_campaigns):
    first, _, ana, _ = two_campaigns
    content = _filled(first, ana)
    book = openpyxl.load_workbook(io.BytesIO(content))
    sheet = book["Assessment"]
    row = caption_rows(sheet)[0][0]
    sheet.cell(row, 2).value = "1.wav"
    buffer = io.BytesIO()
    book.save(buffer)
    with pytest.raises(WorkbookImportError) as refused:
        workbook_import(content=buffer.getvalue(), file_name="mixed.xlsx", campaign_name="camp-a", rater=ana)
    assert refused.value.errors == [
        f"Assessment!B{row}: '1.wav' — not a record ID of this exported workbook (was it edited?)"
    ]


# --- studies run outside the app -------------------------------------------------------------------------


@pytest.fixture
def outside_workbook(make_user):
    """A workbook as an outside study would have it: record IDs are its own file names, not app tokens."""
    return outside_workbook_make(helper=make_user("helper", "rater"))


def test_an_outside_study_needs_an_explicit_campaign_creation_and_an_assigned_rater(outside_workbook, make_user):
    p1, p2 = make_user("p1"), make_user("p2")
    counts = table_counts()
    with pytest.raises(WorkbookImportError, match="no campaign named study: to start one .* --create-campaign"):
        workbook_import(content=outside_workbook, file_name="P1.xlsx", campaign_name="study", rater=p1)
    assert table_counts() == counts
    summary = workbook_import(
        content=outside_workbook, file_name="P1.xlsx", campaign_name="study", rater=p1, create_campaign=True
    )
    campaign = Campaign.objects.get(name="study")
    assert summary["campaign_created"] and summary["rater_assigned"] and campaign.origin == "outside"
    assert summary["ratings_created"] == 6 and summary["workbook_kind"] == "study run outside the app"
    # The rater's items remember the record IDs of their own workbook: the ratings export reports those.
    assert sorted(AssignmentItem.objects.filter(assignment__rater=p1).values_list("outside_record_id", flat=True)) == [
        "study-1.wav",
        "study-2.wav",
        "study-3.wav",
    ]
    with pytest.raises(WorkbookImportError, match="campaign study exists already"):
        workbook_import(
            content=outside_workbook, file_name="P1.xlsx", campaign_name="study", rater=p1, create_campaign=True
        )
    with pytest.raises(WorkbookImportError, match="p2 is not a rater of campaign study"):
        workbook_import(content=outside_workbook, file_name="P2.xlsx", campaign_name="study", rater=p2)
    campaign_add_raters(campaign=campaign, raters=[p2])
    assert (
        workbook_import(content=outside_workbook, file_name="P2.xlsx", campaign_name="study", rater=p2)[
            "ratings_created"
        ]
        == 6
    )


def test_a_campaign_made_in_the_app_refuses_an_outside_workbook(outside_workbook, two_campaigns):
    first, _, ana, _ = two_campaigns
    rows = _rows(first)
    with pytest.raises(WorkbookImportError, match="was created in the app and takes only its own exported workbooks"):
        workbook_import(content=outside_workbook, file_name="P1.xlsx", campaign_name="camp-a", rater=ana)
    assert _rows(first) == rows


def test_the_command_creates_a_missing_outside_campaign_and_says_so(outside_workbook, make_user):
    make_user("p1")
    output = io.StringIO()
    call_command("import_thumbs_workbook", _tmp_file(outside_workbook), campaign="legacy", rater="p1", stdout=output)
    assert "campaign legacy did not exist: created it for a study run outside the app, with p1 as its first rater" in (
        output.getvalue()
    )
    assert Campaign.objects.get(name="legacy").origin == "outside"
    with pytest.raises(CommandError, match="import refused"):
        call_command(
            "import_thumbs_workbook",
            _tmp_file(outside_workbook),
            campaign="legacy",
            rater="p1",
            create_campaign=True,
            stderr=io.StringIO(),
        )
    assert ItemEvent.objects.filter(kind="workbook").count() == 3
