"""Two occurrences of one event that overlap or touch are one occurrence to every rule that reads spans, so
one rule refuses them everywhere: the checks call them an error naming the event and both seconds ranges,
submitting and publishing gold refuse them (no confirmation lets them through), the AudioCaps-F importer stops
on them and writes nothing; a draft may hold them while its spans are being moved. Occurrences apart by a
hundredth of a second pass everywhere."""

import pytest

from annotation.models import ExpertAnnotation
from annotation.selectors import attribute_vocabulary
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_checks import draft_checks
from annotation.services.annotation_drafts import draft_validate
from annotation.services.annotation_reviews import review_draft_save, review_open, review_publish
from annotation.services.annotation_tasks import SubmitRefusedError, task_draft_save, task_submit
from annotation.services.audiocaps_f import audiocaps_f_import
from common.time_relations import merged_spans
from corpus.services.importing import ImportDataError
from tests.annotation.workspace_data import workspace_build

pytestmark = pytest.mark.django_db

OVERLAPPING = [[2.0, 4.0], [3.5, 5.0]]
TOUCHING = [[2.0, 4.0], [4.0, 5.0]]
APART = [[2.0, 4.0], [4.01, 5.0]]
EXPECTED_MESSAGE = {
    "overlapping": "Event 'barking': occurrences 2.00–4.00 s and 3.50–5.00 s overlap or touch, so they are one "
    "occurrence: join them into 2.00–5.00 s or move them apart.",
    "touching": "Event 'barking': occurrences 2.00–4.00 s and 4.00–5.00 s overlap or touch, so they are one "
    "occurrence: join them into 2.00–5.00 s or move them apart.",
}


def _draft(spans) -> dict:
    return {
        "events": [
            {"id": "e1", "label": "barking", "sources": ["dog"], "attributes": ["loud"], "spans": spans},
            {"id": "e2", "label": "rustling", "sources": ["leaves"], "attributes": ["soft"], "spans": [[6, 8]]},
        ],
        "relations": [],
    }


def _overlap_checks(checks):
    return [(c.level, c.code, c.field, c.event, c.message) for c in checks if c.code == "overlapping_spans"]


@pytest.mark.parametrize(("spans", "case"), [(OVERLAPPING, "overlapping"), (TOUCHING, "touching")])
def test_checks_call_overlapping_or_touching_occurrences_an_error_naming_event_and_seconds(spans, case):
    # The rule agrees with the one time relations use: these spans are a single interval there.
    assert len(merged_spans(spans)) == 1
    checks = draft_checks(draft=draft_validate(_draft(spans)), library=attribute_vocabulary(), clip_duration=10)
    assert _overlap_checks(checks) == [
        ("error", "overlapping_spans", "events[0].spans[1]", "e1", EXPECTED_MESSAGE[case])
    ]


def test_occurrences_apart_pass_the_checks():
    assert len(merged_spans(APART)) == 2
    checks = draft_checks(draft=draft_validate(_draft(APART)), library=attribute_vocabulary(), clip_duration=10)
    assert _overlap_checks(checks) == []


@pytest.mark.parametrize("spans", [OVERLAPPING, TOUCHING])
def test_submit_refuses_them_even_confirmed_while_the_draft_keeps_them(make_user, spans):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=_draft(spans))
    task.refresh_from_db()
    assert task.draft["events"][0]["spans"] == spans  # a draft in progress keeps them as drawn

    with pytest.raises(SubmitRefusedError) as refused:
        task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
    assert [c.code for c in refused.value.checks if c.level == "error"] == ["overlapping_spans"]
    assert not refused.value.needs_confirmation_only
    task.refresh_from_db()
    assert task.status != "submitted"

    # Moved apart, it is submitted.
    saved = task_draft_save(task=task, annotator=annotator, base_version=saved.version, draft=_draft(APART))
    submitted = task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
    assert submitted.status == "submitted"


def test_publishing_gold_refuses_them_and_publishes_once_joined(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    reviewer, clip = workspace.reviewer, workspace.clips[0]
    review = review_open(campaign=workspace.campaign, clip=clip, reviewer=reviewer)
    saved = review_draft_save(review=review, reviewer=reviewer, base_version=0, draft=_draft(OVERLAPPING))
    with pytest.raises(SubmitRefusedError) as refused:
        review_publish(review=review, reviewer=reviewer, base_version=saved.version, confirm_warnings=True)
    assert [(c.code, c.message) for c in refused.value.checks if c.level == "error"] == [
        ("overlapping_spans", EXPECTED_MESSAGE["overlapping"])
    ]
    assert not ExpertAnnotation.objects.filter(clip=clip, status="gold").exists()

    saved = review_draft_save(review=review, reviewer=reviewer, base_version=saved.version, draft=_draft([[2.0, 5.0]]))
    gold = review_publish(review=review, reviewer=reviewer, base_version=saved.version, confirm_warnings=True)
    spans = [(s.onset_seconds, s.offset_seconds) for s in gold.events.get(label="barking").spans.all()]
    assert spans == [(2.0, 5.0)]


@pytest.mark.parametrize(("spans", "case"), [(OVERLAPPING, "overlapping"), (TOUCHING, "touching")])
def test_the_importer_refuses_them_naming_clip_event_and_seconds_and_writes_nothing(spans, case):
    data = {"34.wav": {"barking": {"source": ["dog"], "attr": ["loud"], "spans": list(reversed(spans))}}}
    with pytest.raises(ImportDataError) as refused:
        audiocaps_f_import(data=data, dataset_name="acf-overlap", source_name="gold.json")
    what = EXPECTED_MESSAGE[case].removeprefix("Event 'barking': ")
    assert str(refused.value) == f'gold.json: key "34.wav" event "barking" key "spans": {what}'
    assert not ExpertAnnotation.objects.exists()

    data["34.wav"]["barking"]["spans"] = APART
    audiocaps_f_import(data=data, dataset_name="acf-overlap", source_name="gold.json")
    spans = [(s.onset_seconds, s.offset_seconds) for s in ExpertAnnotation.objects.get().events.get().spans.all()]
    assert spans == [(2.0, 4.0), (4.01, 5.0)]


def test_the_importer_refuses_a_span_after_the_clips_end_as_the_checks_do():
    from corpus.models import Clip, Dataset

    Clip.objects.create(dataset=Dataset.objects.create(name="acf-end"), external_id="34.wav", duration_seconds=10.0)
    data = {"34.wav": {"barking": {"source": ["dog"], "attr": ["loud"], "spans": [[2.0, 3.0], [9.5, 10.5]]}}}
    with pytest.raises(ImportDataError) as refused:
        audiocaps_f_import(data=data, dataset_name="acf-end", source_name="gold.json")
    assert str(refused.value) == (
        'gold.json: key "34.wav" event "barking" key "spans" index 1: ends at 10.5 s, after the clip\'s end (10.00 s)'
    )
    assert not ExpertAnnotation.objects.exists()
    draft = _draft([[9.5, 10.5]])
    checks = draft_checks(draft=draft_validate(draft), library=attribute_vocabulary(), clip_duration=10.0)
    assert [c.code for c in checks if c.level == "error"] == ["time_outside_clip"]

    data["34.wav"]["barking"]["spans"] = [[2.0, 3.0], [9.5, 10.04]]  # within a decoder's frame of the end
    audiocaps_f_import(data=data, dataset_name="acf-end", source_name="gold.json")
    assert ExpertAnnotation.objects.count() == 1
