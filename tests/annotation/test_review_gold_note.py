"""The reviewer's note on the gold draft is published with the gold annotation (and travels with the export's
notes), and publishing again replaces or clears it; the annotators' own notes stay on their submissions."""

import pytest

from annotation.models import ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_reviews import review_draft_save, review_open, review_publish
from annotation.services.annotation_tasks import task_draft_save, task_submit
from annotation.services.audiocaps_f_exporting import audiocaps_f_export_notes
from tests.annotation.workspace_data import draft_of, workspace_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(make_user):
    """One clip annotated by two annotators, each with a note of their own."""
    workspace = workspace_build(make_user, clip_count=1, annotator_count=2, per_clip=2)
    for index, annotator in enumerate(workspace.annotators):
        task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
        draft = {**draft_of(("barking", ["dog"], ["loud"])), "note": f"annotator {index}: the dog is far away"}
        saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=draft)
        task_submit(task=task, annotator=annotator, base_version=saved.version)
    return workspace


def _publish(workspace, review, base_version, note):
    draft = {**draft_of(("barking", ["dog"], ["loud"])), "note": note}
    saved = review_draft_save(review=review, reviewer=workspace.reviewer, base_version=base_version, draft=draft)
    gold = review_publish(review=review, reviewer=workspace.reviewer, base_version=saved.version)
    return gold, saved.version


def test_the_gold_drafts_note_is_published_with_the_gold_annotation(submitted):
    clip = submitted.clips[0]
    review = review_open(campaign=submitted.campaign, clip=clip, reviewer=submitted.reviewer)

    gold, version = _publish(submitted, review, 0, "  Two annotators heard a second dog; it is an echo.  ")

    stored = ExpertAnnotation.objects.get(pk=gold.pk, status="gold")
    assert stored.note == "Two annotators heard a second dog; it is an echo."
    assert audiocaps_f_export_notes(dataset_name=submitted.dataset.name) == {
        f"Y{clip.external_id}.wav": "Two annotators heard a second dog; it is an echo."
    }
    # the submissions keep their annotators' notes
    notes = set(ExpertAnnotation.objects.filter(clip=clip, status="submitted").values_list("note", flat=True))
    assert notes == {"annotator 0: the dog is far away", "annotator 1: the dog is far away"}

    # publishing again replaces the note, and an emptied note clears it
    again, version = _publish(submitted, review, version, "The echo is the same dog.")
    assert again.pk == gold.pk and ExpertAnnotation.objects.get(pk=gold.pk).note == "The echo is the same dog."
    _publish(submitted, review, version, "")
    assert ExpertAnnotation.objects.get(pk=gold.pk).note == ""
    assert audiocaps_f_export_notes(dataset_name=submitted.dataset.name) == {}
