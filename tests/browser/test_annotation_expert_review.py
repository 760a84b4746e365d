"""The review editor for expert work, in headless Chromium: three annotators described a real 20 s park recording
with different words; the reviewer sees their events matched by meaning with the score, adds matched groups to
the gold annotation (union of sources and attributes with how many gave each, the majority seconds, the group's
relations carried), reads where they disagree most, removes and restores relations by click and by keyboard,
cannot publish a relation the time spans contradict until it is fixed, and publishes. The caption page then
puts the gold-based X-ACE score first, beside the graphs. Each submission shows its annotator's note as text (a
note holding markup runs nothing), and the reviewer's own note is published with the gold. Screenshots at 1280
and 390 px."""

import pytest

from annotation.models import AnnotationReview, ExpertAnnotation
from annotation.services.audiocaps_f_exporting import audiocaps_f_export
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach
from tests.browser.review_campaigns import annotation_draft, campaign_with_submissions, review_page_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# (label, sources, attributes, spans) per annotator, and one relation each for two of them.
SUBMISSIONS = {
    "ann-a": (
        [
            ("chirping", ["birds"], ["high-pitched"], [[0.3, 19.89]]),
            ("driving by", ["car"], ["loud"], [[3.4, 5.1], [8.49, 11.5], [18.8, 20]]),
            ("honking", ["horn"], ["twice"], [[9, 9.5]]),
        ],
        [(1, 2, "simultaneous")],
    ),
    "ann-b": (
        [
            ("birds singing", ["birds"], ["continuous"], [[0, 20]]),
            ("passing", ["car"], ["loud"], [[3.5, 5], [8.3, 11.8]]),
            ("beeping", ["car horn"], ["short"], [[9.1, 9.6]]),
        ],
        [(1, 2, "simultaneous")],
    ),
    "ann-c": (
        [
            ("tweeting", ["bird"], ["high-pitched"], [[0.5, 19.5]]),
            ("whooshing", ["car"], ["fast", "loud"], [[8.6, 11.2], [18.7, 19.9]]),
            ("door slam", ["door"], ["loud"], [[15.2, 15.5]]),
        ],
        [],
    ),
}
# Each annotator's note for the reviewer; one holds markup that must show as text and run nothing.
HOSTILE_NOTE = '<img src=x onerror="window.__noteRan = 1"><script>window.__noteRan = 2</script> & </section>'
NOTES = {
    "ann-a": "The horn may be two cars.\nThe birds never stop.",
    "ann-b": HOSTILE_NOTE,
    "ann-c": "",
}


@pytest.fixture
def submitted_park(make_user, media_root, shared_dir, tmp_path):
    dataset = Dataset.objects.create(name="park-review")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="34.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    Caption.objects.create(
        clip=clip, text="birds chirp as a car drives by", role="reference", author_kind="human", position=0
    )
    Caption.objects.create(
        clip=clip,
        text="a car passes by while birds are chirping",
        role="candidate",
        author_kind="machine",
        system=CaptioningSystem.objects.create(name="sys-park"),
    )
    drafts = {
        username: annotation_draft(events, relations, note=NOTES[username])
        for username, (events, relations) in SUBMISSIONS.items()
    }
    campaign, reviewer = campaign_with_submissions(clip=clip, make_user=make_user, name="park", drafts=drafts)
    return dataset, clip, campaign, reviewer


def _gold(page) -> dict:
    return page.evaluate("() => window.reviewPage.editor.draft")


def _saved(page):
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")


def _group_row(page, label):
    return page.locator("table.matching tbody tr").filter(has_text=label)


def test_review_by_meaning_merges_groups_with_counts_and_relations_and_refuses_a_relation_against_time(
    page_for, live_server, submitted_park, artifacts, make_user
):
    dataset, clip, campaign, reviewer = submitted_park
    page = page_for(reviewer)
    errors = review_page_open(page, live_server.url, campaign, clip)
    page.wait_for_selector("table.matching", timeout=90_000)  # the phrase encoder loads on first use

    # The three cars (passing / whooshing / driving by over the same seconds) are one group, with its score.
    cars = _group_row(page, "whooshing")
    cells = [cell.inner_text() for cell in cars.locator("td").all()]
    assert cells[:3] == ["driving by", "passing", "whooshing"]
    score = float(cells[3])
    assert 0.5 <= score < 1
    assert "sources 1.00" in cars.locator("td.num").get_attribute("title")
    assert "car" in cells[4] and "fast 1/3" in cells[4]
    # The lowest factor is pointed at first, with what the annotators differ on.
    first_view = page.locator(".disagreements ol > li").first
    factor = first_view.get_attribute("data-factor")
    assert page.locator(f".agreement-factors div.is-lowest[data-factor={factor}]").count() == 1
    assert page.locator(".disagreements li[data-factor=event]").inner_text().count("only") >= 1

    # "+ gold" on the cars, then on the horns: merged events, counts on the chips, the relation carried.
    cars.locator(".add-group-to-gold").click()
    gold = _gold(page)
    assert [(e["label"], e["sources"], e["attributes"]) for e in gold["events"]] == [
        ("driving by", ["car"], ["loud", "fast"])
    ]
    assert [[round(a, 1), round(b, 1)] for a, b in gold["events"][0]["spans"]] == [
        [3.5, 5.0],
        [8.5, 11.5],
        [18.8, 19.9],
    ]
    badges = page.locator("#gold-editor .chip .chip-support").all_inner_texts()
    assert badges == ["3/3", "3/3", "1/3"]
    _group_row(page, "beeping").locator(".add-group-to-gold").click()
    gold = _gold(page)
    horn = next(e for e in gold["events"] if e["label"] in ("honking", "beeping"))
    assert gold["relations"] == [{"first": "e1", "second": horn["id"], "kind": "simultaneous"}]
    assert "carried 'driving by' simultaneous" in page.locator("#editor-message").inner_text()

    # Relations in the gold editor: ✕ removes, Ctrl+Z restores, Delete on the focused relation removes.
    stated = page.locator("#gold-relations .relations-stated li.relation")
    stated.first.locator("[data-action=remove-relation]").click()
    assert _gold(page)["relations"] == []
    page.keyboard.press("Control+z")
    assert len(_gold(page)["relations"]) == 1
    stated.first.focus()
    page.keyboard.press("Delete")
    assert _gold(page)["relations"] == []
    page.keyboard.press("Control+z")
    assert len(_gold(page)["relations"]) == 1

    # The birds group, then the published mistake: chirping before driving by, flagged against the spans.
    _group_row(page, "tweeting").locator(".add-group-to-gold").click()
    birds = page.locator("#gold-editor .event-card").nth(2)
    birds.focus()
    page.keyboard.press("x")
    page.locator("#gold-editor .event-card").nth(0).focus()
    page.keyboard.press("a")  # chirping (selected)... is related to driving by: "chirping after driving by"
    wrong = page.locator("#gold-relations .relations-stated li.is-against-time")
    assert wrong.count() == 1 and "the spans say simultaneous" in wrong.inner_text()
    _saved(page)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "annotation_review_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(100)  # a frame for the canvases to redraw at the new width
    page.screenshot(path=str(artifacts / "annotation_review_390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # Publishing refuses it (an error, nothing to confirm); f on it fixes it; then it publishes.
    page.locator("#publish-button").click()
    page.wait_for_selector("#submit-dialog[open]")
    assert page.locator("#submit-dialog .check.is-error").filter(has_text="against the time spans").count() == 1
    assert page.locator("#submit-dialog [data-action=confirm-submit]").is_hidden()
    page.locator("#submit-dialog [data-action=close]").click()
    assert not ExpertAnnotation.objects.filter(clip=clip, status="gold").exists()
    page.keyboard.press("e")
    page.keyboard.press("f")
    assert not page.locator("#gold-relations .relations-stated li.is-against-time").count()
    page.locator("#publish-button").click()
    page.wait_for_selector("#submit-dialog[open]")
    if page.locator("#submit-dialog [data-action=confirm-submit]").is_visible():
        assert page.locator("#submit-dialog .check.is-error").count() == 0
        page.locator("#submit-dialog [data-action=confirm-submit]").click()
    page.wait_for_function("() => document.getElementById('gold-state').textContent === 'Gold published'")
    assert AnnotationReview.objects.get(campaign=campaign, clip=clip).status == "published"
    exported = audiocaps_f_export(dataset_name=dataset.name)["34.wav"]
    assert set(exported) == {"driving by", horn["label"], "chirping"}
    assert len(exported["driving by"]["spans"]) == 3
    assert exported["driving by"]["relations"] == {horn["label"]: "simultaneous"}
    assert exported["chirping"]["relations"] == {"driving by": "simultaneous"}
    assert not errors, errors

    # --- The caption page: the gold-based X-ACE score first, the caption's graph beside the gold one.
    from metrics_bridge.services.runs.runs import metric_run_create
    from metrics_bridge.tasks.runs import execute_metric_run

    assert execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"])).status == "done"
    caption = Caption.objects.get(clip=clip, role="candidate")
    admin = page_for(make_user("boss-park", staff=True))
    admin.set_viewport_size({"width": 1280, "height": 900})
    admin.goto(f"{live_server.url}/metrics/captions/{caption.pk}/", wait_until="domcontentloaded")
    first_row = admin.locator("#score-table tbody tr").first
    assert first_row.get_attribute("data-metric") == "XACE" and "gold annotation" in first_row.inner_text()
    admin.wait_for_function("() => document.getElementById('xace-matches').naturalWidth > 0", timeout=60_000)
    admin.screenshot(path=str(artifacts / "caption_page_1280.png"), full_page=True)
    admin.set_viewport_size({"width": 390, "height": 900})
    admin.screenshot(path=str(artifacts / "caption_page_390.png"), full_page=True)


def test_each_submission_shows_its_note_as_text_and_the_reviewers_note_is_published_with_the_gold(
    page_for, live_server, submitted_park, artifacts
):
    dataset, clip, campaign, reviewer = submitted_park
    page = page_for(reviewer)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/clips/{clip.pk}/", wait_until="domcontentloaded")
    page.wait_for_selector("#review-page[data-ready=true]")

    # The page rendered the three submissions, each with its events, before anything is said about notes.
    cards = page.locator("#submissions .submission")
    assert cards.count() == 3
    assert [cards.nth(i).get_attribute("data-annotator") for i in range(3)] == ["ann-a", "ann-b", "ann-c"]
    assert all(cards.nth(i).locator(".event-card").count() == 3 for i in range(3))
    # Each note as its annotator wrote it, line breaks kept; markup shown as text, nothing of it run or built.
    note_a = cards.nth(0).locator(".submission-note-text")
    assert note_a.inner_text() == NOTES["ann-a"]
    assert note_a.evaluate("(node) => getComputedStyle(node).whiteSpace") == "pre-wrap"
    note_b = cards.nth(1).locator(".submission-note-text")
    assert note_b.inner_text() == HOSTILE_NOTE
    assert note_b.evaluate("(node) => node.children.length") == 0
    assert page.locator("#submissions img, #submissions script").count() == 0
    assert page.evaluate("() => window.__noteRan") is None
    assert cards.nth(2).locator(".submission-note-text").count() == 0
    assert cards.nth(2).locator(".submission-note").inner_text() == "No note for the reviewer."

    # The gold starts from ann-b's annotation without taking its note; the reviewer writes the gold's own note.
    cards.nth(1).get_by_role("button", name="Start gold from this").click()
    assert [e["label"] for e in _gold(page)["events"]] == ["birds singing", "passing", "beeping"]
    assert page.locator("#gold-note").input_value() == "" and _gold(page)["note"] == ""
    page.locator("#gold-note").fill("ann-b's markup note was a test; the horn is one car.")
    _saved(page)
    page.wait_for_selector("table.matching", timeout=90_000)  # the phrase encoder loads on first use
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "annotation_review_notes_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(100)  # a frame for the canvases to redraw at the new width
    note_box = cards.nth(1).locator(".submission-note-text").bounding_box()
    assert note_box is not None and note_box["x"] >= 0 and note_box["x"] + note_box["width"] <= 390
    page.screenshot(path=str(artifacts / "annotation_review_notes_390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.locator("#publish-button").click()
    page.wait_for_selector("#submit-dialog[open]")
    if page.locator("#submit-dialog [data-action=confirm-submit]").is_visible():
        assert page.locator("#submit-dialog .check.is-error").count() == 0
        page.locator("#submit-dialog [data-action=confirm-submit]").click()
    page.wait_for_function("() => document.getElementById('gold-state').textContent === 'Gold published'")
    gold = ExpertAnnotation.objects.get(clip=clip, status="gold")
    assert gold.note == "ann-b's markup note was a test; the horn is one car."
    assert set(ExpertAnnotation.objects.filter(clip=clip, status="submitted").values_list("note", flat=True)) == {
        NOTES["ann-a"],
        HOSTILE_NOTE,
        "",
    }
    assert page.evaluate("() => window.__noteRan") is None
    assert not errors, errors
    assert dialogs == []
