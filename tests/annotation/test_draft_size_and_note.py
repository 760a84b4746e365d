"""A draft heavier than the documented limit is refused (413) with its size, never stored; the annotation's note
is refused past its length (not cut), travels from the draft to the submitted annotation, the reviewer's API
and the export's notes file."""

import json

import pytest
from django.core.management import call_command

from annotation.models import AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_drafts import MAX_DRAFT_BYTES
from annotation.services.annotation_tasks import task_submit
from annotation.services.expert_annotations import gold_annotation_publish
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(make_user):
    return workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)


def _task_and_client(workspace):
    annotator = workspace.annotators[0]
    return annotation_task_next(campaign=workspace.campaign, annotator=annotator), api_client(annotator)


def _heavy_draft(events: int) -> dict:
    """Every field within its own limit (255 characters, 100 attributes), the whole draft as heavy as wanted."""
    return draft_of(*[(f"event {index}", ["dog"], ["x" * 250] * 10) for index in range(events)])


def test_a_draft_over_the_limit_is_refused_with_its_size_and_nothing_is_stored(workspace):
    task, client = _task_and_client(workspace)
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    heavy = _heavy_draft(120)
    assert len(json.dumps({"base_version": 0, "draft": heavy})) > MAX_DRAFT_BYTES  # the case is really over
    refused = client.put(url, {"base_version": 0, "draft": heavy}, format="json")
    assert refused.status_code == 413
    body = refused.json()
    assert body["code"] == "draft_too_large" and body["max_bytes"] == 256 * 1024
    assert (
        body["size"] > MAX_DRAFT_BYTES and "at most 256 KB" in body["detail"] and "Nothing was saved" in body["detail"]
    )
    assert AnnotationTask.objects.get(pk=task.pk).draft_version == 0
    lighter = _heavy_draft(60)  # about 150 KB: saved
    assert client.put(url, {"base_version": 0, "draft": lighter}, format="json").status_code == 200


def test_a_note_past_its_length_is_refused_not_cut(workspace):
    task, client = _task_and_client(workspace)
    url = f"/api/annotation-tasks/{task.pk}/draft/"
    draft = {**draft_of(("barking", ["dog"], ["loud"])), "note": "n" * 5001}
    refused = client.put(url, {"base_version": 0, "draft": draft}, format="json")
    assert refused.status_code == 400 and "longer than 5000 characters" in str(refused.json()["note"])
    draft["note"] = "n" * 5000
    assert client.put(url, {"base_version": 0, "draft": draft}, format="json").status_code == 200
    assert AnnotationTask.objects.get(pk=task.pk).draft["note"] == "n" * 5000


def test_the_note_is_submitted_shown_to_the_reviewer_and_exported(workspace, tmp_path):
    task, client = _task_and_client(workspace)
    note = "The last second is clipped; the voice may be a radio."
    draft = {**draft_of(("barking", ["dog"], ["loud"])), "note": f"  {note}\n"}
    saved = client.put(f"/api/annotation-tasks/{task.pk}/draft/", {"base_version": 0, "draft": draft}, format="json")
    task_submit(
        task=task, annotator=workspace.annotators[0], base_version=saved.json()["version"], confirm_warnings=True
    )
    annotation = ExpertAnnotation.objects.get(clip=workspace.clips[0], annotator=workspace.annotators[0])
    assert annotation.note == note
    opened = api_client(workspace.reviewer).post(
        "/api/annotation-reviews/", {"campaign": workspace.campaign.pk, "clip": workspace.clips[0].pk}, format="json"
    )
    assert opened.status_code in (200, 201), opened.content
    submissions = opened.json()["submissions"]
    assert [row["graph"]["note"] for row in submissions] == [note]

    gold_annotation_publish(
        clip=workspace.clips[0],
        reviewer=workspace.reviewer,
        campaign=workspace.campaign,
        events=[{"label": "barking", "sources": ["dog"], "attributes": ["loud"], "spans": []}],
        relations=[],
        note="Gold: one dog.",
    )
    out, notes = tmp_path / "gold.json", tmp_path / "notes.json"
    call_command("export_audiocaps_f", dataset=workspace.dataset.name, out=str(out), notes=str(notes))
    assert json.loads(notes.read_text()) == {"Yclip0.wav": "Gold: one dog."}
    assert "note" not in json.loads(out.read_text())["Yclip0.wav"]  # the AudioCaps-F file itself keeps its shape
