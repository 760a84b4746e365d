"""The clip review page in headless Chromium: opening it creates no review (the page used to POST one on load, so
clips with no submission read "In review"); the reviewer's first change starts the review and autosave keeps it."""

import pytest

from annotation.models import AnnotationReview
from tests.annotation.test_review_counts import submit_one
from tests.annotation.workspace_data import workspace_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _open(page, live_server, workspace, clip):
    page.goto(
        f"{live_server.url}/review/campaigns/{workspace.campaign.pk}/clips/{clip.pk}/", wait_until="domcontentloaded"
    )
    page.wait_for_selector("#review-page[data-ready=true]")
    # the page's own requests after load (the matching) have answered: nothing else is coming
    page.wait_for_function("() => document.getElementById('matching').textContent !== 'Matching events…'")


def test_opening_the_page_is_read_only_and_the_first_change_starts_the_review(page_for, live_server, make_user):
    workspace = workspace_build(make_user, clip_count=2, annotator_count=1, per_clip=1)
    submit_one(workspace, workspace.annotators[0])
    annotated = workspace.annotators[0].annotation_tasks.get().clip
    empty = next(clip for clip in workspace.clips if clip.pk != annotated.pk)
    page = page_for(workspace.reviewer)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method != "GET" else None)

    # A clip nobody annotated, then an annotated one: looked at, nothing written
    _open(page, live_server, workspace, empty)
    assert page.locator("#submissions").inner_text() == "No submitted annotation yet."
    _open(page, live_server, workspace, annotated)
    assert page.locator(".submission").count() == 1
    assert "Review not started" in page.locator("#gold-state").inner_text()
    assert posts == [] and not AnnotationReview.objects.exists()
    page.goto(f"{live_server.url}/review/campaigns/{workspace.campaign.pk}/")
    assert sorted(page.locator("[data-state]").evaluate_all("rows => rows.map((row) => row.dataset.state)")) == [
        "ready",
        "waiting",
    ]

    # The reviewer's explicit action starts the review; autosave stores the draft
    _open(page, live_server, workspace, annotated)
    page.locator(".submission[data-annotator='ann0'] >> text=Start gold from this").click()
    page.wait_for_function(
        "() => document.getElementById('save-status').dataset.state === 'saved'"
        " && document.getElementById('save-status').textContent.startsWith('Saved')"
    )
    review = AnnotationReview.objects.get()
    assert (review.clip_id, review.reviewer_id, review.draft_version) == (annotated.pk, workspace.reviewer.pk, 1)
    assert [event["label"] for event in review.draft["events"]] == ["beep"]
    assert page.locator("#gold-state").inner_text() == "Gold draft"

    # Opened again: the saved draft is shown, and opening it wrote nothing more
    _open(page, live_server, workspace, annotated)
    assert page.evaluate("() => window.reviewPage.editor.draft.events.map((event) => event.label)") == ["beep"]
    assert AnnotationReview.objects.get().draft_version == 1
    assert not errors, errors
