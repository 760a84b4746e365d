"""A workbook that carries the rater's web answers back unchanged changes nothing: the answers keep their source
("web"), their timestamps, their items' versions, and no audit event appears. Only a changed value is written, as
a workbook answer with its event.
"""

import io

import openpyxl
import pytest

from ratings.models import ItemEvent, Source, ThumbsRating
from ratings.services.workbooks import rater_workbook_export, workbook_import
from tests.ratings.test_workbook_campaign_rules import _rows, two_campaigns  # noqa: F401 (a fixture)
from tests.ratings.workbook_helpers import caption_rows, workbook_fill

pytestmark = pytest.mark.django_db


def _exported(campaign, rater) -> bytes:
    return next(iter(rater_workbook_export(campaign=campaign, rater=rater).workbooks.values()))


def _item_versions(campaign, rater) -> dict[str, int]:
    return dict(campaign.assignments.get(rater=rater).items.values_list("token", "version"))


def test_reimporting_the_web_answers_unchanged_keeps_them_web_answers(two_campaigns):  # noqa: F811
    first, _, ana, _ = two_campaigns  # ana answered all of camp-a on the web: 3 clips, 6 captions
    rows, versions = _rows(first), _item_versions(first, ana)
    assert {row[-4] for row in rows if row[2] == ana.pk} == {Source.WEB}
    events = ItemEvent.objects.count()
    content = _exported(first, ana)  # carries her answers, as she would send it back without touching it

    summary = workbook_import(content=content, file_name="untouched.xlsx", campaign_name="camp-a", rater=ana)

    assert (summary["ratings_created"], summary["ratings_updated"], summary["ratings_unchanged"]) == (0, 0, 6)
    assert summary["items_with_changed_answers"] == 0
    assert _rows(first) == rows, "source, workbook hash and timestamps untouched"
    assert _item_versions(first, ana) == versions
    assert ItemEvent.objects.count() == events


def test_a_changed_value_alone_becomes_a_workbook_answer_with_its_event(two_campaigns):  # noqa: F811
    first, _, ana, _ = two_campaigns
    content = _exported(first, ana)
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Assessment"]
    _, record_id, text, _ = caption_rows(sheet)[0]
    edited = workbook_fill(content, {(record_id, text): {"E": 5}})
    rows = {row[0]: row for row in _rows(first)}
    versions = _item_versions(first, ana)

    summary = workbook_import(content=edited, file_name="one-change.xlsx", campaign_name="camp-a", rater=ana)

    assert (summary["ratings_created"], summary["ratings_updated"], summary["ratings_unchanged"]) == (0, 1, 5)
    changed = ThumbsRating.objects.get(campaign=first, rater=ana, caption__text=text)
    assert (changed.precision, changed.source) == (5, Source.WORKBOOK) and len(changed.workbook_sha256) == 64
    after = {row[0]: row for row in _rows(first)}
    assert {pk for pk in after if after[pk] != rows[pk]} == {changed.pk}
    # its item, and only its item, has a new version and a workbook event saying what it was before
    new_versions = _item_versions(first, ana)
    assert {token for token in new_versions if new_versions[token] != versions[token]} == {record_id}
    event = ItemEvent.objects.get(item__token=record_id, kind=ItemEvent.Kind.WORKBOOK)
    assert [entry["precision"] for entry in event.previous_answer["captions"]][0] == 2
    assert 5 in [entry["precision"] for entry in event.answer["captions"]]
