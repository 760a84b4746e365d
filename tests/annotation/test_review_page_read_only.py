"""Opening a clip's review page changes nothing: no review is created, the clip is not "in review"; the review
starts with the reviewer's first action (the page's POST to the reviews API)."""

import json
import re

import pytest

from annotation.models import AnnotationReview
from annotation.services.annotation_reviews import review_draft_save, review_open
from tests.annotation.test_review_counts import campaign_page_states, overview_counts, submit_one
from tests.annotation.workspace_data import api_client, draft_of, workspace_build

pytestmark = pytest.mark.django_db


def _review_state(page: str) -> dict:
    found = re.search(r'<script id="review-state" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def _page(client, workspace, clip) -> str:
    response = client.get(f"/review/campaigns/{workspace.campaign.pk}/clips/{clip.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_opening_review_pages_creates_no_review(client, make_user):
    # Given a campaign of three clips, one annotated (one annotation per clip asked), two with no submission
    workspace = workspace_build(make_user, clip_count=3, annotator_count=1, per_clip=1)
    submit_one(workspace, workspace.annotators[0])
    annotated = workspace.annotators[0].annotation_tasks.get().clip
    client.force_login(workspace.reviewer)

    # When the reviewer opens every clip's review page, twice
    states = {}
    for _ in range(2):
        for clip in workspace.clips:
            states[clip.pk] = _review_state(_page(client, workspace, clip))

    # Then nothing was written, and the clips read as before: one ready, none in review
    assert not AnnotationReview.objects.exists()
    assert sorted(campaign_page_states(client, workspace.campaign)) == ["ready", "waiting", "waiting"]
    assert overview_counts(client) == [3, 1, 0, 0]
    # the page still has what it shows: the submission of the annotated clip, an empty gold draft, no review
    assert states[annotated.pk]["review"] is None
    assert [submission["annotator"] for submission in states[annotated.pk]["submissions"]] == ["ann0"]
    assert states[annotated.pk]["submissions"][0]["graph"]["events"][0]["label"] == "beep"
    assert states[annotated.pk]["emptyDraft"] == {"events": [], "relations": [], "note": ""}
    assert all(state["submissions"] == [] for pk, state in states.items() if pk != annotated.pk)
    assert "Review not started" in _page(client, workspace, annotated)


def test_the_review_starts_on_the_reviewers_action_and_the_page_then_shows_it(client, make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    submit_one(workspace, workspace.annotators[0])
    clip = workspace.clips[0]
    client.force_login(workspace.reviewer)

    # The page's first change POSTs to the reviews API: that creates the review (empty, version 0)
    opened = api_client(workspace.reviewer).post(
        "/api/annotation-reviews/", {"campaign": workspace.campaign.pk, "clip": clip.pk}, format="json"
    )
    assert opened.status_code == 200 and opened.json()["draft_version"] == 0
    review = AnnotationReview.objects.get()
    # opened and never saved (what the old page left behind on every visit): still not "in review"
    assert campaign_page_states(client, workspace.campaign) == ["ready"]

    saved = review_draft_save(
        review=review, reviewer=workspace.reviewer, base_version=0, draft=draft_of(("beep", ["alarm"], []))
    )
    assert campaign_page_states(client, workspace.campaign) == ["in review"]
    state = _review_state(_page(client, workspace, clip))
    assert state["review"]["id"] == review.pk and state["review"]["draft_version"] == saved.version
    assert state["review"]["draft"]["events"][0]["label"] == "beep"
    assert [submission["annotator"] for submission in state["submissions"]] == ["ann0"]
    assert "submissions" not in state["review"]
    # opening it again is still a read: the same row, the same version
    assert review_open(campaign=workspace.campaign, clip=clip, reviewer=workspace.reviewer).pk == review.pk
    _page(client, workspace, clip)
    assert AnnotationReview.objects.get().draft_version == saved.version
