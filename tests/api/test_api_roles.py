"""Who may call which endpoint, and which rows each role gets back."""

import pytest

from corpus.models import Caption
from ratings.models import campaign_rater_code

ROLES = ("anonymous", "nobody", "rater", "annotator", "reviewer", "admin")
CORPUS = {"rater": 403, "annotator": 200, "reviewer": 200, "admin": 200}
RATER_OWN = {"rater": 200, "annotator": 403, "reviewer": 403, "admin": 200}
ADMIN_ONLY = {"rater": 403, "annotator": 403, "reviewer": 403, "admin": 200}

LIST_STATUS = {
    "/api/datasets/": CORPUS,
    "/api/clips/": CORPUS,
    "/api/captions/": CORPUS,
    "/api/captioning-systems/": CORPUS,
    "/api/attribute-tags/": CORPUS,
    "/api/expert-annotations/": CORPUS,
    "/api/caption-pairs/": CORPUS,
    "/api/metric-runs/": CORPUS,
    "/api/metric-scores/": CORPUS,
    "/api/campaigns/": ADMIN_ONLY,
    "/api/assignments/": RATER_OWN,
    "/api/assignment-items/": RATER_OWN,
    "/api/thumbs-ratings/": RATER_OWN,
    "/api/pairwise-votes/": RATER_OWN,
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("url", sorted(LIST_STATUS))
def test_list_endpoint_status_by_role(client_for, url, role):
    client = client_for(None if role == "anonymous" else role)
    response = client.get(url)
    if role == "anonymous":
        # Session auth comes first and sends no WWW-Authenticate challenge, so DRF answers 403, not 401.
        assert response.status_code == 403
        assert response.json() == {"detail": "Authentication credentials were not provided."}
    elif role == "nobody":  # signed in, but holds no role
        assert response.status_code == 403
    else:
        assert response.status_code == LIST_STATUS[url][role], response.content
        if response.status_code == 403:
            assert response.json()["detail"].startswith("This endpoint is for: ")


def _ids(response) -> list[int]:
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    return sorted(row["id"] for row in rows)


def test_datasets_carry_counts(world, client_for):
    body = client_for("annotator").get("/api/datasets/").json()
    assert body["count"] == 1
    row = body["results"][0]
    assert {key: row[key] for key in row if key.endswith("count")} == {
        "clip_count": 3,
        "clips_with_audio_count": 1,
        "reference_count": 15,
        "candidate_count": 6,
        "expert_annotation_count": 2,
        "pair_count": 3,
    }


def test_caption_filters_show_authorship_to_corpus_readers(world, client_for):
    clip = world.clips[0]
    response = client_for("reviewer").get("/api/captions/", {"clip": clip.pk, "role": "candidate"})
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [(row["author_kind"], row["system"]) for row in rows] == [("machine", "sys-alpha"), ("machine", "sys-beta")]
    assert client_for("reviewer").get("/api/captions/", {"clip": "not-a-number"}).status_code == 400


def test_rater_sees_only_own_assignments_and_items(world, client_for):
    rater = world.users["rater"]
    client = client_for("rater")
    # Raters know a study by its opaque code, never the campaign's database id.
    own = sorted(campaign_rater_code(assignment.campaign_id) for assignment in rater.assignments.all())
    assert len(own) == 2 and not any(code.isdigit() for code in own)
    assert sorted(row["study_id"] for row in client.get("/api/assignments/").json()["results"]) == own
    other = world.users["rater2"].assignments.get()
    assert client.get(f"/api/assignments/{other.pk}/").status_code == 404
    items = client.get("/api/assignment-items/").json()["results"]
    assert {item["study_id"] for item in items} == set(own)
    assert len(items) == 1 + 3  # one THumBS clip, three pairs
    assert len(client.get("/api/assignment-items/", {"study": own[0]}).json()["results"]) in (1, 3)
    campaign_id = rater.assignments.order_by("pk").first().campaign_id
    assert client.get("/api/assignment-items/", {"study": campaign_id}).json()["results"] == [], "an id finds nothing"
    other_item = other.items.first()
    assert client.get(f"/api/assignment-items/{other_item.token}/").status_code == 404
    assert client.get(f"/api/assignment-items/{other_item.pk}/").status_code == 404


def test_rater_item_shows_captions_in_display_order(world, client_for):
    rater = world.users["rater"]
    thumbs_item = world.thumbs.assignments.get(rater=rater).items.get()
    body = client_for("rater").get(f"/api/assignment-items/{thumbs_item.token}/").json()
    texts = dict(Caption.objects.values_list("pk", "text"))
    assert body["captions"] == [
        {"key": str(number), "text": texts[caption_id]}
        for number, caption_id in enumerate(thumbs_item.caption_order, start=1)
    ]
    assert body["audio_url"] == f"/ratings/items/{thumbs_item.token}/audio/"
    assert body["duration_seconds"] == pytest.approx(1.5)
    assert body["task_type"] == "thumbs"
    for pair_item in world.pairwise.assignments.get(rater=rater).items.select_related("pair"):
        body = client_for("rater").get(f"/api/assignment-items/{pair_item.token}/").json()
        pair = pair_item.pair
        left, right = (pair.caption_a, pair.caption_b) if pair_item.a_on_left else (pair.caption_b, pair.caption_a)
        assert body["captions"] == [{"key": "left", "text": left.text}, {"key": "right", "text": right.text}]


def test_rater_sees_only_own_ratings_and_votes(world, client_for):
    client = client_for("rater")
    ratings = client.get("/api/thumbs-ratings/").json()["results"]
    rating = world.ratings["rater"]
    item = world.thumbs.assignments.get(rater=world.users["rater"]).items.get()
    assert [(row["item"], row["caption"]) for row in ratings] == [
        (item.token, item.caption_order.index(rating.caption_id) + 1)
    ]
    assert ratings[0]["overall"] == "3.40"  # (4 + 3) / 2 - 0.1
    assert client.get(f"/api/thumbs-ratings/{world.ratings['rater2'].pk}/").status_code == 404
    assert client.get("/api/thumbs-ratings/", {"caption": world.ratings["rater2"].caption_id}).json()["count"] == 1, (
        "raters cannot filter by caption id (it would let them probe ids)"
    )
    votes = client.get("/api/pairwise-votes/").json()["results"]
    vote_item = world.pairwise.assignments.get(rater=world.users["rater"]).items.get(pair=world.pairs["HM"])
    # The vote chose a; with a shown on the right (or left) for this rater, the side says which, never a/b.
    assert votes == [
        {
            "item": vote_item.token,
            "side": "left" if vote_item.a_on_left else "right",
            "updated_at": votes[0]["updated_at"],
        }
    ]
    assert client.get(f"/api/pairwise-votes/{world.votes['rater2'].pk}/").status_code == 404


def test_admin_sees_every_judgement_with_raters(world, client_for):
    client = client_for("admin")
    ratings = client.get("/api/thumbs-ratings/").json()["results"]
    assert sorted((row["rater"], row["overall"]) for row in ratings) == [("rat", "3.40"), ("rat2", "3.40")]
    votes = client.get("/api/pairwise-votes/").json()["results"]
    assert sorted(row["rater"] for row in votes) == ["rat", "rat2"]
    assert client.get("/api/pairwise-votes/", {"rater": "rat2"}).json()["count"] == 1
    items = client.get("/api/assignment-items/").json()
    assert items["count"] == 2 + 3  # the THumBS clip for both raters, three pairs for one
    assert "a_on_left" in items["results"][0]


def test_campaigns_list_and_create_and_add_raters(world, client_for, make_user):
    client = client_for("admin")
    names = [row["name"] for row in client.get("/api/campaigns/").json()["results"]]
    assert names == ["t-pairwise", "t-thumbs"]
    response = client.post(
        "/api/campaigns/",
        {
            "name": "new-one",
            "dataset": "api-test",
            "task_type": "thumbs",
            "clip_ids": [world.clips[2].external_id],
            "human_captions_per_clip": 0,
            "judgements_per_item": 1,
            "raters": ["rat2"],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert (response.json()["caption_count"], response.json()["assignment_count"]) == (2, 1)
    campaign_id = response.json()["id"]
    response = client.post(f"/api/campaigns/{campaign_id}/raters/", {"raters": ["rat"]}, format="json")
    assert response.status_code == 200
    assert response.json()["assignment_count"] == 2
    assert client.post(f"/api/campaigns/{campaign_id}/raters/", {"raters": ["ann"]}, format="json").status_code == 400
    assert client.post(f"/api/campaigns/{campaign_id}/raters/", {"raters": ["ghost"]}, format="json").status_code == 400
    duplicate = client.post(
        "/api/campaigns/", {"name": "new-one", "dataset": "api-test", "task_type": "thumbs"}, format="json"
    )
    assert duplicate.status_code == 400
    assert client_for("rater").post("/api/campaigns/", {"name": "x"}, format="json").status_code == 403


def test_metric_scores_filter_by_metric_and_dataset(world, client_for):
    client = client_for("annotator")
    rows = client.get("/api/metric-scores/", {"metric": "BLEU_4", "dataset": "api-test"}).json()["results"]
    assert [(row["caption"], row["value"]) for row in rows] == [(world.score.caption_id, 0.25)]
    assert client.get("/api/metric-scores/", {"metric": "METEOR"}).json()["count"] == 0
    run = client.get(f"/api/metric-runs/{world.run.pk}/").json()
    assert (run["dataset"], run["status"], run["requested_by"]) == ("api-test", "done", "boss")


@pytest.mark.parametrize("role", ["rater", "annotator", "reviewer"])
def test_only_admins_start_or_cancel_metric_runs(world, client_for, role):
    client = client_for(role)
    assert (
        client.post("/api/metric-runs/", {"dataset": "api-test", "metrics": ["BLEU_4"]}, format="json").status_code
        == 403
    )
    assert client.post(f"/api/metric-runs/{world.run.pk}/cancel/").status_code == 403


@pytest.mark.parametrize("role", ["rater", "annotator", "reviewer"])
def test_only_admins_write_systems(world, client_for, role):
    assert client_for(role).post("/api/captioning-systems/", {"name": "new-system"}).status_code == 403


def test_admin_creates_a_system(world, client_for):
    response = client_for("admin").post("/api/captioning-systems/", {"name": "new-system", "description": "d"})
    assert response.status_code == 201
    assert response.json()["name"] == "new-system"


def test_admin_starts_a_metric_run_through_celery(world, client_for, django_capture_on_commit_callbacks):
    from metrics_bridge.models import MetricRun, MetricScore

    client = client_for("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/metric-runs/", {"dataset": "api-test", "metrics": ["ROUGE_L"]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["dataset"], body["metrics"], body["requested_by"]) == ("api-test", ["ROUGE_L"], "boss")
    run = MetricRun.objects.get(pk=body["id"])
    assert run.status == "done", run.error
    candidates = {caption.pk for captions in world.candidates.values() for caption in captions}
    scored = set(MetricScore.objects.filter(run=run, metric="ROUGE_L").values_list("caption_id", flat=True))
    assert candidates <= scored
    # Cancelling a finished run changes nothing; an unknown metric is refused by name.
    assert client.post(f"/api/metric-runs/{run.pk}/cancel/").json()["status"] == "done"
    response = client.post("/api/metric-runs/", {"dataset": "api-test", "metrics": ["NOPE"]}, format="json")
    assert response.status_code == 400
    assert "NOPE" in response.json()["metrics"]
