"""Expert annotations over the API: annotators write their own, reviewers move them to gold, nobody else writes."""

from annotation.models import ExpertAnnotation, SoundEvent

GRAPH = {
    "status": "draft",
    "events": [
        {"label": "dog barking", "sources": ["dog"], "attributes": ["loud", "Repeatedly", "yappy"]},
        {"label": "car passing", "sources": ["car", "engine"], "attributes": [], "spans": [[4.5, 6], [1, 2.5]]},
    ],
    "relations": [{"first_event": "dog barking", "second_event": "car passing", "kind": "simultaneous"}],
}


def test_annotator_lists_only_own_annotations(world, client_for):
    rows = client_for("annotator").get("/api/expert-annotations/").json()["results"]
    assert [row["id"] for row in rows] == [world.annotations["annotator"].pk]
    assert rows[0]["events"] == [
        {
            "label": "beep",
            "sources": ["device"],
            "attributes": [
                {"text": "Loud", "tag": "loud", "category": "Volume", "is_free_text": False},
                {"text": "ringing-ish", "tag": None, "category": None, "is_free_text": True},
            ],
            "spans": [],
        },
        {
            "label": "hum",
            "sources": [],
            "attributes": [{"text": "low", "tag": "low", "category": "Pitch", "is_free_text": False}],
            "spans": [],
        },
    ]
    assert rows[0]["relations"] == [{"first_event": "beep", "second_event": "hum", "kind": "before"}]
    other = world.annotations["annotator2"]
    assert client_for("annotator").get(f"/api/expert-annotations/{other.pk}/").status_code == 404


def test_admin_lists_all_and_reviewer_all_but_drafts(world, client_for):
    expected = sorted(annotation.pk for annotation in world.annotations.values())
    rows = client_for("admin").get("/api/expert-annotations/").json()["results"]
    assert sorted(row["id"] for row in rows) == expected
    rows = client_for("reviewer").get("/api/expert-annotations/").json()["results"]
    assert [row["id"] for row in rows] == [world.annotations["annotator2"].pk]  # the other one is a draft
    submitted = client_for("reviewer").get("/api/expert-annotations/", {"status": "submitted"}).json()["results"]
    assert [row["annotator"] for row in submitted] == ["ann2"]


def test_annotator_creates_then_replaces_own_annotation(world, client_for):
    client = client_for("annotator")
    clip = world.clips[2]
    response = client.post("/api/expert-annotations/", {**GRAPH, "clip": clip.pk}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["annotator"] == "ann"
    assert [event["label"] for event in body["events"]] == ["dog barking", "car passing"]
    assert [attribute["tag"] for attribute in body["events"][0]["attributes"]] == ["loud", "repeatedly", None]
    assert body["events"][1]["spans"] == [[1.0, 2.5], [4.5, 6.0]]  # occurrences, sorted

    replacement = {"clip": clip.pk, "status": "submitted", "events": [{"label": "rain", "sources": ["sky"]}]}
    response = client.put(f"/api/expert-annotations/{body['id']}/", replacement, format="json")
    assert response.status_code == 200, response.content
    annotation = ExpertAnnotation.objects.get(pk=body["id"])
    assert annotation.status == "submitted"
    assert list(SoundEvent.objects.filter(annotation=annotation).values_list("label", flat=True)) == ["rain"]
    assert annotation.relations.count() == 0


def test_posting_again_for_the_same_clip_replaces_with_200(world, client_for):
    clip = world.clips[0]  # the annotator already has an annotation here
    response = client_for("annotator").post("/api/expert-annotations/", {**GRAPH, "clip": clip.pk}, format="json")
    assert response.status_code == 200
    assert response.json()["id"] == world.annotations["annotator"].pk
    assert ExpertAnnotation.objects.filter(clip=clip).count() == 1


def test_invalid_graphs_are_refused_with_the_reason(world, client_for):
    client = client_for("annotator")
    clip = world.clips[2].pk
    bad_relation = {
        **GRAPH,
        "clip": clip,
        "relations": [{"first_event": "dog barking", "second_event": "cat", "kind": "before"}],
    }
    response = client.post("/api/expert-annotations/", bad_relation, format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "relations[0].second_event: no event is labelled 'cat'"}
    duplicate = {**GRAPH, "clip": clip, "events": [{"label": "a"}, {"label": "a"}], "relations": []}
    assert client.post("/api/expert-annotations/", duplicate, format="json").json() == {
        "detail": "events[1]: the label 'a' is used twice"
    }
    gold_by_annotator = {**GRAPH, "clip": clip, "status": "gold"}
    assert client.post("/api/expert-annotations/", gold_by_annotator, format="json").status_code == 400
    assert not ExpertAnnotation.objects.filter(clip_id=clip).exists()


def test_annotator_cannot_touch_someone_elses_annotation(world, client_for):
    other = world.annotations["annotator2"]
    client = client_for("annotator")
    assert (
        client.put(f"/api/expert-annotations/{other.pk}/", {**GRAPH, "clip": other.clip_id}, format="json").status_code
        == 404
    )
    assert client.delete(f"/api/expert-annotations/{other.pk}/").status_code == 404
    assert (
        client.post(f"/api/expert-annotations/{other.pk}/status/", {"status": "gold"}, format="json").status_code == 403
    )


def test_reviewer_marks_gold_and_gold_is_frozen_for_the_annotator(world, client_for):
    submitted = world.annotations["annotator2"]
    reviewer = client_for("reviewer")
    response = reviewer.post(f"/api/expert-annotations/{submitted.pk}/status/", {"status": "gold"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "gold"
    owner = client_for("annotator2")
    response = owner.put(
        f"/api/expert-annotations/{submitted.pk}/", {**GRAPH, "clip": submitted.clip_id}, format="json"
    )
    assert response.status_code == 400
    assert "gold" in response.json()["detail"]
    assert owner.delete(f"/api/expert-annotations/{submitted.pk}/").status_code == 400
    assert ExpertAnnotation.objects.get(pk=submitted.pk).events.get().label == "rain"


def test_reviewer_cannot_reach_a_draft_but_admin_can_make_it_gold(world, client_for):
    draft = world.annotations["annotator"]
    response = client_for("reviewer").post(
        f"/api/expert-annotations/{draft.pk}/status/", {"status": "gold"}, format="json"
    )
    assert response.status_code == 404  # drafts are the annotator's own until submitted
    response = client_for("admin").post(
        f"/api/expert-annotations/{draft.pk}/status/", {"status": "gold"}, format="json"
    )
    assert response.status_code == 200
    assert ExpertAnnotation.objects.get(pk=draft.pk).status == "gold"


def test_reviewer_and_rater_cannot_create(world, client_for):
    for role in ("reviewer", "rater"):
        response = client_for(role).post(
            "/api/expert-annotations/", {**GRAPH, "clip": world.clips[2].pk}, format="json"
        )
        assert response.status_code == 403
    assert not ExpertAnnotation.objects.filter(clip=world.clips[2]).exists()


def test_annotator_deletes_own_draft(world, client_for):
    own = world.annotations["annotator"]
    assert client_for("annotator").delete(f"/api/expert-annotations/{own.pk}/").status_code == 204
    assert not ExpertAnnotation.objects.filter(pk=own.pk).exists()
