"""A refused draft save (409) carries the stored draft, so the tab that was behind can merge its edits into it
three-way instead of choosing between two whole versions."""

import pytest

from annotation.models import AnnotationReview, AnnotationTask
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_reviews import review_open
from annotation.services.annotation_tasks import task_draft_save, task_submit
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


def test_a_stale_save_answers_409_with_the_stored_draft_and_version(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    client = api_client(annotator)
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    base = draft_of(("barking", ["dog"], ["loud"]))
    assert client.put(url, {"base_version": 0, "draft": base}, format="json").json()["version"] == 1
    tab_a = draft_of(("barking", ["dog"], ["loud"]), ("door slam", ["door"], []))
    assert client.put(url, {"base_version": 1, "draft": tab_a}, format="json").json()["version"] == 2

    tab_b = draft_of(("barking", ["dog"], ["quiet"]))
    refused = client.put(url, {"base_version": 1, "draft": tab_b}, format="json")

    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "stale_version"
    assert body["current_version"] == 2 and body["base_version"] == 1
    stored = AnnotationTask.objects.get(pk=task.pk)
    # What the server holds, read from the row, not from the answer: the answer must be exactly that.
    assert body["current_draft"] == stored.draft
    assert [event["label"] for event in body["current_draft"]["events"]] == ["barking", "door slam"]
    assert stored.draft_version == 2


def test_a_submit_from_behind_answers_409_without_a_draft(make_user):
    """Submitting sends no draft; the page saves (and merges) first, so the answer only names the version."""
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    client = api_client(annotator)
    draft = draft_of(("barking", ["dog"], ["loud"]))
    client.put(f"/api/annotation-tasks/{task.pk}/draft/", {"base_version": 0, "draft": draft}, format="json")
    refused = client.post(f"/api/annotation-tasks/{task.pk}/submit/", {"base_version": 0}, format="json")
    assert refused.status_code == 409
    assert refused.json()["current_version"] == 1 and "current_draft" not in refused.json()


def test_the_reviewers_gold_draft_answers_409_with_the_stored_draft_too(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=draft_of(("rain", ["rain"], [])))
    task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
    review = review_open(campaign=workspace.campaign, clip=workspace.clips[0], reviewer=workspace.reviewer)
    client = api_client(workspace.reviewer)
    url = f"/api/annotation-reviews/{review.pk}/draft/"
    gold = draft_of(("rain", ["rain"], ["steady"]))
    assert client.put(url, {"base_version": 0, "draft": gold}, format="json").status_code == 200
    refused = client.put(url, {"base_version": 0, "draft": draft_of(("wind", [], []))}, format="json")
    assert refused.status_code == 409
    assert refused.json()["current_version"] == 1
    assert refused.json()["current_draft"] == AnnotationReview.objects.get(pk=review.pk).draft
    assert refused.json()["current_draft"]["events"][0]["attributes"] == ["steady"]
