"""Attributes of one event that the tag library calls opposites ("loud" / "quiet", "frequently" / "sparse") or
that give different counts ("three times" / "several times"): a warning for an annotator, and publishing gold
with one is refused until the reviewer keeps one of them."""

import json

import pytest

from annotation.models import AttributeTag
from annotation.selectors import attribute_vocabulary
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_checks import draft_checks
from annotation.services.annotation_drafts import draft_validate
from annotation.services.annotation_reviews import review_draft_save, review_open, review_publish
from annotation.services.annotation_tasks import SubmitRefusedError, task_checks, task_draft_save
from annotation.tag_library import TAGS_FILE, tag_conflict, tag_facts_read
from tests.annotation.workspace_data import draft_of, workspace_build

pytestmark = pytest.mark.django_db


def _facts():
    rows = AttributeTag.objects.values_list("pk", "text", "category", "synonym_group", "antonym_groups")
    return tag_facts_read(rows)


def _codes(attributes, gold=False):
    draft = draft_validate(draft_of(("humming", ["fridge"], attributes)))
    checks = draft_checks(draft=draft, library=attribute_vocabulary(), tag_facts=_facts(), gold=gold)
    return [(check.level, check.code, check.field) for check in checks if check.code.startswith("attribute_")]


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        (["loud", "quiet"], [("warning", "attribute_antonym", "events[0].attributes[1]")]),
        (["Frequently", "sparse "], [("warning", "attribute_antonym", "events[0].attributes[1]")]),
        (["three times", "several times"], [("warning", "attribute_count", "events[0].attributes[1]")]),
        (["once", "loud", "twice"], [("warning", "attribute_count", "events[0].attributes[2]")]),
        (["loud", "clear", "continuous", "three times"], []),  # different categories, no opposites
        (["loud", "loud"], []),  # the same tag twice is a duplicate (its own check), not a conflict
        (["loud", "quietish"], []),  # free text is not in the library
    ],
)
def test_opposites_and_different_counts_are_flagged(attributes, expected):
    assert _codes(attributes) == expected


def test_the_library_file_agrees_with_the_table():
    # what the check reads (the seeded table) says of loud / quiet what the released file says
    released = json.loads(TAGS_FILE.read_text())
    assert released["quiet"]["sym"] in released["loud"]["ant"]
    facts = {fact.text: fact for fact in _facts().values()}
    assert tag_conflict(facts["loud"], facts["quiet"]) == "antonym"
    assert tag_conflict(facts["loud"], facts["clear"]) is None


def test_a_gold_annotation_with_a_conflict_is_refused_until_the_reviewer_keeps_one(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    draft = draft_of(("knocking", ["door"], ["three times", "several times"]))
    task_draft_save(task=task, annotator=annotator, base_version=0, draft=draft)
    # the annotator sees it as a warning they may confirm
    assert [(c.level, c.code) for c in task_checks(task=task, draft=draft)] == [("warning", "attribute_count")]

    clip = workspace.clips[0]
    review = review_open(campaign=workspace.campaign, clip=clip, reviewer=workspace.reviewer)
    saved = review_draft_save(review=review, reviewer=workspace.reviewer, base_version=0, draft=draft)
    with pytest.raises(SubmitRefusedError) as refused:
        review_publish(review=review, reviewer=workspace.reviewer, base_version=saved.version, confirm_warnings=True)
    [check] = refused.value.checks
    assert (check.level, check.field) == ("error", "events[0].attributes[1]")
    assert check.message == (
        "Event 'knocking': the attributes 'three times' and 'several times' give different counts (tag library); "
        "keep the one that is right."
    )
    assert not refused.value.needs_confirmation_only
    chosen = draft_of(("knocking", ["door"], ["three times"]))
    saved = review_draft_save(review=review, reviewer=workspace.reviewer, base_version=saved.version, draft=chosen)
    gold = review_publish(review=review, reviewer=workspace.reviewer, base_version=saved.version)
    assert [a.text for a in gold.events.get().attributes.all()] == ["three times"]
