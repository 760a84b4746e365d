"""Review into gold: who may review what, sending work back, publishing one gold annotation per clip, the
export of gold (with relations) and its re-import; the workspace API's permissions by role."""

import json

import pytest
from django.core.management import call_command

from annotation.models import AnnotationReview, AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_reviews import (
    ReviewDeniedError,
    clip_review_denial,
    review_draft_save,
    review_open,
    review_publish,
)
from annotation.services.annotation_tasks import SubmitRefusedError, task_draft_save, task_submit
from annotation.services.audiocaps_f import audiocaps_f_import
from annotation.services.audiocaps_f_exporting import audiocaps_f_export
from ratings.selectors import dataset_stats
from tests.annotation.table_counts import all_table_counts
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotated(make_user):
    """One clip annotated by three annotators (submitted)."""
    workspace = workspace_build(make_user, clip_count=1, annotator_count=3, per_clip=3)
    for index, annotator in enumerate(workspace.annotators):
        task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
        draft = draft_of(
            ("barking", ["dog"], ["loud"]), (f"event {index}", ["door"], ["quiet"]), relations=[(0, 1, "before")]
        )
        saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=draft)
        task_submit(task=task, annotator=annotator, base_version=saved.version)
    return workspace


def test_reviewers_cannot_review_a_clip_they_annotated(annotated, make_user):
    clip = annotated.clips[0]
    both = make_user("both", "annotator", "reviewer")
    annotated.campaign.annotators.add(both)
    annotated.campaign.reviewers.add(both)
    AnnotationTask.objects.filter(annotator=annotated.annotators[0]).update(annotator=both)
    assert (
        clip_review_denial(campaign=annotated.campaign, clip=clip, user=both)
        == "you annotated this clip yourself, so someone else reviews it"
    )
    with pytest.raises(ReviewDeniedError):
        review_open(campaign=annotated.campaign, clip=clip, reviewer=both)
    client = api_client(both)
    assert (
        client.post(
            "/api/annotation-reviews/", {"campaign": annotated.campaign.pk, "clip": clip.pk}, format="json"
        ).status_code
        == 403
    )
    assert client.get(f"/review/campaigns/{annotated.campaign.pk}/clips/{clip.pk}/").status_code == 403
    assert (
        client.get(f"/metrics/annotation-agreement/campaigns/{annotated.campaign.pk}/clips/{clip.pk}/").status_code
        == 403
    )
    # A reviewer not listed on the campaign is refused too; the listed one may review.
    outsider = make_user("outsider", "reviewer")
    assert "not a reviewer of campaign" in clip_review_denial(campaign=annotated.campaign, clip=clip, user=outsider)
    assert clip_review_denial(campaign=annotated.campaign, clip=clip, user=annotated.reviewer) is None


def test_someone_who_annotates_and_reviews_never_sees_a_clip_that_may_still_come_to_them(make_user):
    from annotation.services.annotation_campaigns import annotation_task_skip

    workspace = workspace_build(make_user, clip_count=1, annotator_count=4, per_clip=3)
    clip, campaign = workspace.clips[0], workspace.campaign
    both = make_user("both", "annotator", "reviewer")
    campaign.annotators.add(both)
    campaign.reviewers.add(both)
    for annotator in workspace.annotators[:2]:
        task = annotation_task_next(campaign=campaign, annotator=annotator)
        saved = task_draft_save(task=task, annotator=annotator, base_version=0, draft=draft_of(("rain", ["sky"], [])))
        task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)
    # Two submissions in, one slot open: `both` could still be given the clip, so may not look at it.
    assert "may still come to you" in clip_review_denial(campaign=campaign, clip=clip, user=both)
    client = api_client(both)
    assert client.get(f"/review/campaigns/{campaign.pk}/clips/{clip.pk}/").status_code == 403
    assert client.get(f"/metrics/annotation-agreement/campaigns/{campaign.pk}/clips/{clip.pk}/").status_code == 403
    assert "may still come to you" in client.get(f"/review/campaigns/{campaign.pk}/").content.decode()
    assert client.get("/api/expert-annotations/", {"clip": clip.pk}).json()["results"] == []
    # The last slot taken by someone else: `both` may review; when that one skips, the clip goes to a
    # third annotator, never to `both`, who has seen the submissions.
    third = annotation_task_next(campaign=campaign, annotator=workspace.annotators[2])
    assert clip_review_denial(campaign=campaign, clip=clip, user=both) is None
    assert len(client.get("/api/expert-annotations/", {"clip": clip.pk}).json()["results"]) == 2
    review_open(campaign=campaign, clip=clip, reviewer=both)
    annotation_task_skip(task=third, reason="silence")
    assert annotation_task_next(campaign=campaign, annotator=both) is None
    assert annotation_task_next(campaign=campaign, annotator=workspace.annotators[3]).clip_id == clip.pk


def test_send_back_with_a_comment_shows_in_the_queue_and_resubmission_returns_it(annotated):
    task = AnnotationTask.objects.get(annotator=annotated.annotators[1])
    client = api_client(annotated.reviewer)
    assert client.post(f"/api/annotation-tasks/{task.pk}/return/", {"comment": ""}, format="json").status_code == 400
    response = client.post(
        f"/api/annotation-tasks/{task.pk}/return/", {"comment": "Name the second event"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "returned"
    task.refresh_from_db()
    assert task.annotation.status == "draft"
    owner = api_client(annotated.annotators[1])
    queue = owner.get("/annotate/").content.decode()
    assert "Name the second event" in queue
    # Returned work is not in the review until it comes back.
    review = review_open(campaign=annotated.campaign, clip=annotated.clips[0], reviewer=annotated.reviewer)
    rows = api_client(annotated.reviewer).get(f"/api/annotation-reviews/{review.pk}/").json()["submissions"]
    assert [row["annotator"] for row in rows] == ["ann0", "ann2"]
    saved = task_draft_save(
        task=task,
        annotator=annotated.annotators[1],
        base_version=task.draft_version,
        draft=draft_of(("barking", ["dog"], ["loud"])),
    )
    task_submit(task=task, annotator=annotated.annotators[1], base_version=saved.version)
    assert ExpertAnnotation.objects.get(pk=task.annotation_id).status == "submitted"


def test_publishing_makes_one_gold_annotation_and_supersedes_the_previous(annotated):
    clip = annotated.clips[0]
    audiocaps_f_import(
        data={f"Y{clip.external_id}.wav": {"rain": {"source": ["rain"], "attr": []}}},
        dataset_name="ws",
        source_name="g.json",
    )
    old_gold = ExpertAnnotation.objects.get(clip=clip, status="gold")
    review = review_open(campaign=annotated.campaign, clip=clip, reviewer=annotated.reviewer)
    gold_draft = draft_of(
        ("barking", ["dog"], ["loud"]), ("door slam", ["door"], ["yappy"]), relations=[(1, 0, "after")]
    )
    saved = review_draft_save(review=review, reviewer=annotated.reviewer, base_version=0, draft=gold_draft)
    with pytest.raises(SubmitRefusedError) as raised:
        review_publish(review=review, reviewer=annotated.reviewer, base_version=saved.version)
    assert raised.value.needs_confirmation_only
    gold = review_publish(review=review, reviewer=annotated.reviewer, base_version=saved.version, confirm_warnings=True)

    assert list(ExpertAnnotation.objects.filter(clip=clip, status="gold")) == [gold]
    old_gold.refresh_from_db()
    assert old_gold.status == "superseded"
    assert gold.merged_from.count() == 3 and AnnotationReview.objects.get(pk=review.pk).status == "published"
    assert dataset_stats(dataset=annotated.dataset)["expert_annotations"] == 1  # gold only, not the 3 submissions
    exported = audiocaps_f_export(dataset_name="ws")
    assert exported == {
        f"Y{clip.external_id}.wav": {
            "barking": {"source": ["dog"], "attr": ["loud"]},
            "door slam": {"source": ["door"], "attr": ["yappy"], "relations": {"barking": "after"}},
        }
    }
    # Editing and publishing again updates the same gold annotation.
    saved = review_draft_save(
        review=review,
        reviewer=annotated.reviewer,
        base_version=saved.version,
        draft=draft_of(("barking", ["dog"], ["loud"])),
    )
    again = review_publish(review=review, reviewer=annotated.reviewer, base_version=saved.version)
    assert again.pk == gold.pk and [e.label for e in again.events.all()] == ["barking"]


def test_export_with_relations_and_spans_reimports_to_the_same(tmp_path):
    data = {
        "Yabc.wav": {
            "barking": {
                "source": ["dog"],
                "attr": ["loud"],
                "spans": [[0.5, 2.25], [6.0, 7.5]],
                "relations": {"door slam": "before"},
            },
            "door slam": {"source": ["door"], "attr": []},
        },
        "Ydef.wav": {"rain": {"source": ["rain"], "attr": ["steady"]}},
    }
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    call_command("import_audiocaps_f", str(path), "--dataset", "rt")
    out = tmp_path / "out.json"
    call_command("export_audiocaps_f", "--dataset", "rt", "--out", str(out))
    assert json.loads(out.read_text()) == data
    counts = all_table_counts()
    call_command("import_audiocaps_f", str(out), "--dataset", "rt")  # changes nothing
    assert all_table_counts() == counts
    assert ExpertAnnotation.objects.get(clip__external_id="abc").relations.get().kind == "before"


def test_the_earlier_single_onset_and_offset_still_import_as_one_span(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"Yabc.wav": {"barking": {"source": ["dog"], "attr": [], "onset": 0.5, "offset": 2}}}))
    call_command("import_audiocaps_f", str(path), "--dataset", "old")
    assert audiocaps_f_export(dataset_name="old") == {
        "Yabc.wav": {"barking": {"source": ["dog"], "attr": [], "spans": [[0.5, 2.0]]}}
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"Ya.wav": {"x": {"source": [], "attr": [], "relations": {"y": "before"}}}}, '"y" is no event of this clip'),
        ({"Ya.wav": {"x": {"source": [], "attr": [], "relations": {"x": "before"}}}}, '"x" is the event itself'),
        (
            {"Ya.wav": {"x": {"relations": {"y": "before"}}, "y": {"relations": {"x": "before"}}}},
            'events "y" and "x" are related twice',
        ),
        (
            {
                "Ya.wav": {
                    "x": {"relations": {"y": "before"}},
                    "y": {"relations": {"z": "before"}},
                    "z": {"relations": {"x": "before"}},
                }
            },
            "contradictory relations",
        ),
        ({"Ya.wav": {"x": {"relations": {"y": "during"}}, "y": {}}}, "expected one of before, after, simultaneous"),
        ({"Ya.wav": {"x": {"onset": 2, "offset": 1}}}, 'key "offset": 1.0 is before the onset 2.0'),
        ({"Ya.wav": {"x": {"onset": 2}}}, 'key "offset": missing'),
        ({"Ya.wav": {"x": {"spans": [[2, 1]]}}}, 'key "spans" index 0: the offset 1.0 is before the onset 2.0'),
        ({"Ya.wav": {"x": {"spans": [[0, 1], [2]]}}}, r'key "spans" index 1: expected \[onset, offset\]'),
        ({"Ya.wav": {"x": {"spans": [[0, -1]]}}}, 'key "spans" index 0 offset: expected a number of seconds'),
        ({"Ya.wav": {"x": {"spans": [[0, 1]], "onset": 0}}}, 'give "spans" or "onset" / "offset", not both'),
    ],
)
def test_bad_relations_in_an_import_are_named_and_nothing_is_written(tmp_path, data, message):
    from django.core.management import CommandError

    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError, match=message):
        call_command("import_audiocaps_f", str(path), "--dataset", "bad")
    assert not ExpertAnnotation.objects.exists()


def test_workspace_api_roles(annotated, make_user):
    rater = make_user("rater-y", "rater")
    task = AnnotationTask.objects.get(annotator=annotated.annotators[0])
    other = AnnotationTask.objects.get(annotator=annotated.annotators[1])
    owner = api_client(annotated.annotators[0])
    assert [row["id"] for row in owner.get("/api/annotation-tasks/").json()["results"]] == [task.pk]
    assert owner.get(f"/api/annotation-tasks/{other.pk}/draft/").status_code == 404
    assert (
        owner.put(
            f"/api/annotation-tasks/{other.pk}/draft/", {"base_version": 0, "draft": {}}, format="json"
        ).status_code
        == 404
    )
    assert (
        owner.post(
            "/api/annotation-reviews/",
            {"campaign": annotated.campaign.pk, "clip": annotated.clips[0].pk},
            format="json",
        ).status_code
        == 403
    )
    assert owner.post("/api/annotation-campaigns/", {}, format="json").status_code == 403
    for url in (
        "/api/annotation-tasks/",
        "/api/annotation-campaigns/",
        "/api/annotation-reviews/",
        "/annotate/",
        "/review/",
    ):
        assert api_client(rater).get(url).status_code == 403, url
    # Annotators never read other people's annotations through the expert-annotation API either.
    own_ids = {row["id"] for row in owner.get("/api/expert-annotations/").json()["results"]}
    assert own_ids == {task.annotation_id}
    # The reviewer sees the three submissions; admins create campaigns over the API.
    reviewer_ids = {
        row["id"] for row in api_client(annotated.reviewer).get("/api/expert-annotations/").json()["results"]
    }
    assert reviewer_ids == set(AnnotationTask.objects.values_list("annotation_id", flat=True))
    admin = api_client(make_user("boss", staff=True))
    response = admin.post(
        "/api/annotation-campaigns/",
        {"name": "api-made", "dataset": "ws", "annotators": ["ann0"], "annotations_per_clip": 1},
        format="json",
    )
    assert response.status_code == 201 and response.json()["clip_count"] == 1
    bad = admin.post(
        "/api/annotation-campaigns/", {"name": "api-2", "dataset": "ws", "annotators": ["ann0", "ghost"]}, format="json"
    )
    assert bad.status_code == 400 and "ghost" in json.dumps(bad.json())


def test_campaign_work_changes_only_through_its_task(annotated):
    task = AnnotationTask.objects.get(annotator=annotated.annotators[0])
    owner = api_client(annotated.annotators[0])
    graph = {"clip": task.clip_id, "events": [{"label": "rain"}]}
    replaced = owner.put(f"/api/expert-annotations/{task.annotation_id}/", graph, format="json")
    assert replaced.status_code == 400 and "annotation campaign" in replaced.json()["detail"]
    assert owner.delete(f"/api/expert-annotations/{task.annotation_id}/").status_code == 400
    # Outside the campaign the annotator still has an annotation of their own for the same clip: a new one (201).
    assert owner.post("/api/expert-annotations/", graph, format="json").status_code == 201
    assert [e.label for e in ExpertAnnotation.objects.get(pk=task.annotation_id).events.all()] == ["barking", "event 0"]


def test_the_workspace_api_is_in_the_openapi_schema_with_its_conflict_and_validation_answers(make_user):
    import yaml

    schema = yaml.safe_load(api_client(make_user("boss", staff=True)).get("/api/schema/").content)
    paths = schema["paths"]
    for path in (
        "/api/annotation-campaigns/{id}/next/",
        "/api/annotation-tasks/{id}/skip/",
        "/api/annotation-tasks/{id}/return/",
        "/api/annotation-tasks/{id}/checks/",
    ):
        assert "post" in paths[path], path
    for path in ("/api/annotation-tasks/{id}/draft/", "/api/annotation-reviews/{id}/draft/"):
        assert {"200", "400", "409"} <= set(paths[path]["put"]["responses"]), path
    for path in ("/api/annotation-tasks/{id}/submit/", "/api/annotation-reviews/{id}/publish/"):
        assert {"200", "400", "409"} <= set(paths[path]["post"]["responses"]), path
