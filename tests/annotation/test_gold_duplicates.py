"""Two gold events that name one sound (the review's matching rule): the review's checks list them, publishing
refuses them naming both, and merging them or relating them (two sounds) lets the gold annotation through."""

import pytest

from annotation.services.annotation_reviews import review_checks, review_draft_save, review_open, review_publish
from annotation.services.annotation_tasks import SubmitRefusedError
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


def _with_spans(draft: dict, *spans) -> dict:
    for event, event_spans in zip(draft["events"], spans, strict=True):
        event["spans"] = event_spans
    return draft


def _twice(relations=()):
    # one annotator's "leaves rustling" and another's "leaves brushing", both added to gold, and a dog
    draft = draft_of(
        ("rustling", ["leaves"], ["soft"]),
        ("brushing", ["leaves"], ["soft"]),
        ("barking", ["dog"], ["loud"]),
        relations=relations,
    )
    return _with_spans(draft, [[0.0, 8.0]], [[0.5, 8.0]], [[2.0, 3.0]])


def test_publishing_refuses_one_sound_twice_until_the_reviewer_merges_or_relates_them(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    reviewer, clip = workspace.reviewer, workspace.clips[0]
    review = review_open(campaign=workspace.campaign, clip=clip, reviewer=reviewer)
    saved = review_draft_save(review=review, reviewer=reviewer, base_version=0, draft=_twice())

    [shown] = [check for check in review_checks(review=review, reviewer=reviewer) if check.code == "gold_duplicate"]
    with pytest.raises(SubmitRefusedError) as refused:
        review_publish(review=review, reviewer=reviewer, base_version=saved.version, confirm_warnings=True)
    [check] = [check for check in refused.value.checks if check.code == "gold_duplicate"]
    assert check == shown
    assert (check.level, check.field, check.event, check.other_event) == ("error", "events[1]", "e2", "e1")
    assert check.message.startswith("Events 'rustling' and 'brushing' may be one sound (meaning ")
    assert check.message.endswith("merge them, or relate them (b / a / s) if they are two sounds.")
    assert not refused.value.needs_confirmation_only

    # Relating them says they are two sounds: published.
    related = _twice(relations=[(0, 1, "simultaneous")])
    saved = review_draft_save(review=review, reviewer=reviewer, base_version=saved.version, draft=related)
    assert not [c for c in review_checks(review=review, reviewer=reviewer) if c.code == "gold_duplicate"]
    gold = review_publish(review=review, reviewer=reviewer, base_version=saved.version, confirm_warnings=True)
    assert sorted(gold.events.values_list("label", flat=True)) == ["barking", "brushing", "rustling"]

    # Merged into one event: published too.
    merged = _with_spans(
        draft_of(("rustling", ["leaves"], ["soft"]), ("barking", ["dog"], ["loud"])), [[0, 8]], [[2, 3]]
    )
    saved = review_draft_save(review=review, reviewer=reviewer, base_version=saved.version, draft=merged)
    gold = review_publish(review=review, reviewer=reviewer, base_version=saved.version, confirm_warnings=True)
    assert sorted(gold.events.values_list("label", flat=True)) == ["barking", "rustling"]


def test_the_checks_endpoint_lists_duplicates_of_an_unsaved_draft(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    review = review_open(campaign=workspace.campaign, clip=workspace.clips[0], reviewer=workspace.reviewer)
    client = api_client(workspace.reviewer)
    answer = client.post(f"/api/annotation-reviews/{review.pk}/checks/", {"draft": _twice()}, format="json")
    assert answer.status_code == 200
    duplicates = [check for check in answer.json()["checks"] if check["code"] == "gold_duplicate"]
    assert [(check["event"], check["other_event"]) for check in duplicates] == [("e2", "e1")]
    assert answer.json()["can_submit"] is False
    # a dog and a door slam in the same second are two sounds: nothing to flag
    two_sounds = _with_spans(draft_of(("barking", ["dog"], []), ("slam", ["door"], [])), [[2, 3]], [[2, 3]])
    answer = client.post(f"/api/annotation-reviews/{review.pk}/checks/", {"draft": two_sounds}, format="json")
    assert [check for check in answer.json()["checks"] if check["code"] == "gold_duplicate"] == []
    # an annotator of the clip may not ask
    other = make_user("outsider", "annotator")
    assert api_client(other).post(f"/api/annotation-reviews/{review.pk}/checks/", {}, format="json").status_code in (
        403,
        404,
    )
