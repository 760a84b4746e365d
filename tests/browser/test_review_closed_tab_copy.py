"""The reviewer's gold draft loses nothing to a closed tab, in headless Chromium: gold edits made offline in a tab
that is then closed are offered in the next tab opened on the clip ("Merge them into this version"), merged
into the saved gold draft, and not offered again; as the annotators' page does."""

import time

import pytest

from annotation.models import AnnotationReview
from tests.annotation.test_review_counts import submit_one
from tests.annotation.workspace_data import workspace_build
from tests.browser.offline_tabs import close_while_offline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _open(page, url):
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#review-page[data-ready=true]")


def _state_is(page, state):
    page.wait_for_function(f"() => document.getElementById('save-status').dataset.state === '{state}'")


def _stored_labels() -> list[str]:
    review = AnnotationReview.objects.first()
    return sorted(event["label"] for event in review.draft["events"]) if review else []


def _wait_stored(expected, timeout=60.0):
    deadline = time.monotonic() + timeout
    while _stored_labels() != sorted(expected):
        if time.monotonic() > deadline:
            raise AssertionError(f"stored {_stored_labels()}, expected {sorted(expected)}")
        time.sleep(0.2)


def test_gold_edits_of_a_closed_offline_tab_are_offered_and_merged(page_for, live_server, make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    submit_one(workspace, workspace.annotators[0])
    clip = workspace.clips[0]
    url = f"{live_server.url}/review/campaigns/{workspace.campaign.pk}/clips/{clip.pk}/"
    first = page_for(workspace.reviewer)
    errors = []
    first.on("pageerror", lambda error: errors.append(str(error)))
    _open(first, url)
    first.evaluate("() => window.reviewPage.editor.addEvent('alpha')")
    _wait_stored(["alpha"])
    _state_is(first, "saved")

    # Offline, the tab adds an event and is closed: the edit is only in this browser.
    first.context.set_offline(True)
    first.evaluate("() => window.reviewPage.editor.addEvent('beta')")
    _state_is(first, "offline")
    context = first.context
    close_while_offline(first)
    context.set_offline(False)
    assert _stored_labels() == ["alpha"]

    second = context.new_page()
    second.on("pageerror", lambda error: errors.append(str(error)))
    _open(second, url)
    notice = second.locator("#stale-local")
    notice.wait_for(state="visible")
    assert "'beta'" in notice.inner_text()
    notice.locator("[data-action=restore]").click()
    _wait_stored(["alpha", "beta"])
    assert notice.is_hidden()

    # Merged copies are gone: a further tab is not offered them again.
    third = context.new_page()
    _open(third, url)
    # The offer waits for open tabs to answer first (a timer). A second look started now ends after the page's own
    # (same delay, started later), by when the page has decided: a sleep would guess on a busy machine.
    third.evaluate("() => window.reviewPage.sync.findOrphans()")
    assert third.locator("#stale-local").is_hidden()
    assert errors == []
