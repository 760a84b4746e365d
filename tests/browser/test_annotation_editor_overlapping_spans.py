"""Occurrences of one event that overlap, in the annotators' editor (headless Chromium): both chips are flagged
as the span is added, submitting shows the server's error naming the event and both seconds ranges with no
"Submit anyway", "join" makes them one span (undoable), and the annotation then submits. At 1280 and 390 px."""

import re

import pytest

from annotation.models import AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_campaign_create
from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_overlapping_occurrences_are_flagged_refused_at_submit_and_joined(
    make_user, media_root, shared_dir, tmp_path, live_server, page_for, artifacts, width
):
    dataset = Dataset.objects.create(name="overlap")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="34.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    annotator = make_user("ann-overlap", "annotator")
    annotation_campaign_create(
        name="overlap", dataset=dataset, clips=[clip], annotators=[annotator], annotations_per_clip=1
    )
    page = page_for(annotator)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/annotate/")
    page.focus("form[action*='/next/'] button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    page.wait_for_function("() => window.annotationPage.player.duration > 0", timeout=60_000)

    page.keyboard.press("n")
    page.keyboard.type("barking")
    page.keyboard.press("Shift+Enter")
    page.locator(".event-card").first.focus()
    for start, end in ((2.0, 4.0), (3.5, 5.0)):
        page.evaluate("([s, e]) => window.annotationPage.player.setSelection(s, e)", [start, end])
        page.keyboard.press("r")
    assert page.evaluate("() => window.annotationPage.editor.draft.events[0].spans") == [[2.0, 4.0], [3.5, 5.0]]
    flagged = page.locator(".event-card .span-chip.is-overlapping")
    assert flagged.count() == 2
    assert "2.00–4.00 s and 3.50–5.00 s overlap or touch" in flagged.first.get_attribute("title")
    page.screenshot(path=str(artifacts / f"editor_overlapping_spans_{width}.png"))

    # Submitting: the server's error names the event and both ranges; nothing lets it through.
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#submit-dialog[open]")
    error = page.locator("#submit-dialog .check.is-error").filter(has_text="overlap or touch")
    assert error.count() == 1
    assert "'barking': occurrences 2.00–4.00 s and 3.50–5.00 s" in error.inner_text()
    assert "join them into 2.00–5.00 s" in error.inner_text()
    assert page.locator("#submit-dialog [data-action=confirm-submit]").is_hidden()
    page.locator("#submit-dialog [data-action=close]").click()
    assert AnnotationTask.objects.get(annotator=annotator).status != "submitted"

    # "join": one span; Ctrl+Z brings both back, Ctrl+Shift+Z joins again.
    flagged.first.locator(".span-join").click()
    assert page.evaluate("() => window.annotationPage.editor.draft.events[0].spans") == [[2.0, 5.0]]
    assert flagged.count() == 0
    page.locator(".event-card").first.focus()
    page.keyboard.press("Control+z")
    assert page.evaluate("() => window.annotationPage.editor.draft.events[0].spans") == [[2.0, 4.0], [3.5, 5.0]]
    page.keyboard.press("Control+Shift+z")
    assert page.evaluate("() => window.annotationPage.editor.draft.events[0].spans") == [[2.0, 5.0]]

    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#submit-dialog[open]")
    assert page.locator("#submit-dialog .check.is-error").count() == 0  # warnings only (no source, no attribute)
    page.locator("#submit-dialog [data-action=confirm-submit]").click()
    page.wait_for_url(re.compile(r"[?&]done=\d+"))  # submitted, and no clip left: back to the queue
    submitted = ExpertAnnotation.objects.get(clip=clip, annotator=annotator)
    assert [(s.onset_seconds, s.offset_seconds) for s in submitted.events.get().spans.all()] == [(2.0, 5.0)]
    assert errors == []
