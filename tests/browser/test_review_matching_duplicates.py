"""The review page in headless Chromium, matching by what the sound is: three annotators name the same sounds
differently over the same seconds (birds chirping / pigeons cooing / birds tweeting, leaves rustling / rustle)
and each sound is one row; a row whose annotators gave opposite attributes (loud / quiet) shows both with a
"keep" button and the reviewer's choice is what reaches gold; one annotator gave the leaves twice, so "+ gold" on
every row makes two gold events of one sound, which the page flags and merges; then the gold publishes.
Screenshots at 1280 and 390 px."""

import pytest

from annotation.models import AnnotationReview, ExpertAnnotation
from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach
from tests.browser.review_campaigns import annotation_draft, campaign_with_submissions, review_page_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# (label, sources, attributes, spans) per annotator.
SUBMISSIONS = {
    "ann-a": [
        ("chirping", ["bird"], ["high-pitched"], [[0.0, 10.0]]),
        ("rustling", ["leaves"], ["loud"], [[2.0, 8.0]]),
        ("brushing", ["leaves"], ["loud"], [[2.2, 7.8]]),  # the same leaves, given twice
        ("barking", ["dog"], ["sharp"], [[12.0, 13.0]]),
    ],
    "ann-b": [
        ("cooing", ["pigeons"], ["continuous"], [[0.2, 10.0]]),
        ("rustle", ["leaves"], ["quiet"], [[2.1, 8.0]]),
        ("barks", ["dog"], ["sharp"], [[12.0, 13.1]]),
    ],
    "ann-c": [
        ("tweeting", ["birds"], ["high-pitched"], [[0.0, 9.8]]),
        ("rustling", ["leaves"], ["loud"], [[2.0, 7.9]]),
    ],
}


@pytest.fixture
def submitted(make_user, media_root, shared_dir, tmp_path):
    dataset = Dataset.objects.create(name="garden-review")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="garden.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    drafts = {username: annotation_draft(events) for username, events in SUBMISSIONS.items()}
    campaign, reviewer = campaign_with_submissions(clip=clip, make_user=make_user, name="garden", drafts=drafts)
    return clip, campaign, reviewer


def _gold(page) -> dict:
    return page.evaluate("() => window.reviewPage.editor.draft")


def _rows(page) -> list[list[str]]:
    return [
        [cell.inner_text() for cell in row.locator("td").all()[:3]]
        for row in page.locator("table.matching tbody tr").all()
    ]


def test_related_names_are_one_row_clashes_are_chosen_and_gold_duplicates_are_merged(
    page_for, live_server, submitted, artifacts
):
    clip, campaign, reviewer = submitted
    page = page_for(reviewer)
    errors = review_page_open(page, live_server.url, campaign, clip)
    page.wait_for_selector("table.matching", timeout=120_000)  # the phrase encoder loads on first use

    # One row per sound: the birds (a hypernym and a co-hyponym over the same seconds), the leaves, the dog;
    # ann-a's second name for the leaves is a row of its own (one event per annotator in a row).
    rows = _rows(page)
    assert ["chirping", "cooing", "tweeting"] in rows
    # the hover says the birds' sound class decided the bird / pigeons link
    birds_title = (
        page.locator("table.matching tbody tr").filter(has_text="cooing").locator("td.num").get_attribute("title")
    )
    assert "chirping ↔ cooing" in birds_title and "sources of one sound class (bird) count as the same" in birds_title
    assert ["barking", "barks", "—"] in rows
    leaves = [row for row in rows if "rustle" in row]
    assert len(leaves) == 1 and leaves[0][2] == "rustling" and leaves[0][0] in ("rustling", "brushing")
    other_leaves = "brushing" if leaves[0][0] == "rustling" else "rustling"
    assert [other_leaves, "—", "—"] in rows
    # The clip's agreement counts the links these rows are made of: 2 x links / (events of both), per pair.
    matching = page.evaluate("() => ({links_all: window.reviewPage.matching().groups.flatMap((group) => group.links)})")
    sizes = {name: len(events) for name, events in SUBMISSIONS.items()}
    expected = []
    for first, second in (("ann-a", "ann-b"), ("ann-a", "ann-c"), ("ann-b", "ann-c")):
        links = [link for link in matching["links_all"] if {link["first"][0], link["second"][0]} == {first, second}]
        expected.append(2 * len(links) / (sizes[first] + sizes[second]))
    assert (
        len([link for link in matching["links_all"] if {link["first"][0], link["second"][0]} == {"ann-a", "ann-b"}])
        == 3
    )
    shown = float(page.locator(".agreement-factors div[data-factor=event] strong").inner_text())
    assert shown == pytest.approx(sum(expected) / 3, abs=0.006)

    # The leaves' row: loud (2 of 3) and quiet (1 of 3) are opposites in the tag library.
    leaves_row = page.locator("table.matching tbody tr").filter(has_text="rustle")
    clash = leaves_row.locator(".attribute-clash")
    assert clash.count() == 1 and "opposites" in clash.inner_text()
    assert clash.locator(".keep-attribute").all_inner_texts() == ["keep loud 2/3", "keep quiet 1/3"]

    # "+ gold" on every row.
    for index in range(page.locator("table.matching tbody tr").count()):
        page.locator("table.matching tbody tr").nth(index).locator(".add-group-to-gold").click()
    labels = sorted(event["label"] for event in _gold(page)["events"])
    assert labels == sorted(["chirping", "rustling", "brushing", "barking"])
    # The leaves twice in gold are flagged, naming both.
    duplicates = page.locator("#gold-duplicates li.gold-duplicate")
    duplicates.first.wait_for(timeout=60_000)
    assert duplicates.count() == 1
    assert (
        "'rustling' and 'brushing'" in duplicates.inner_text() or "'brushing' and 'rustling'" in duplicates.inner_text()
    )
    # The reviewer keeps "quiet": the row says so and the gold event of the row holds quiet, not loud.
    clash.locator(".keep-attribute").filter(has_text="quiet").click()
    assert "is-settled" in page.locator("table.matching tbody tr").filter(has_text="rustle").locator(
        ".attribute-clash"
    ).get_attribute("class")
    row_event = next(e for e in _gold(page)["events"] if e["label"] == leaves[0][0])
    assert "quiet" in row_event["attributes"] and "loud" not in row_event["attributes"]

    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "review_matching_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(100)  # a frame for the canvases to redraw at the new width
    page.screenshot(path=str(artifacts / "review_matching_390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # Publishing refuses the duplicate (an error naming both events).
    page.locator("#publish-button").click()
    page.wait_for_selector("#submit-dialog[open]")
    refused = page.locator("#submit-dialog .check.is-error").filter(has_text="may be one sound")
    assert refused.count() == 1
    page.locator("#submit-dialog [data-action=close]").click()
    assert not ExpertAnnotation.objects.filter(clip=clip, status="gold").exists()

    # Merge: one leaves event, the flag goes, and the gold publishes.
    page.locator("#gold-duplicates .merge-duplicate").click()
    assert len(_gold(page)["events"]) == 3
    page.wait_for_selector("#gold-duplicates", state="hidden", timeout=60_000)
    leaves_gold = next(e for e in _gold(page)["events"] if e["label"] in ("rustling", "brushing"))
    assert leaves_gold["sources"] == ["leaves"]
    page.locator("#publish-button").click()
    page.wait_for_function(
        "() => document.getElementById('gold-state').textContent === 'Gold published'"
        " || document.getElementById('submit-dialog').open"
    )
    if page.locator("#submit-dialog[open]").count():
        assert page.locator("#submit-dialog .check.is-error").count() == 0, page.locator("#submit-dialog").inner_text()
        page.locator("#submit-dialog [data-action=confirm-submit]").click()
    page.wait_for_function("() => document.getElementById('gold-state').textContent === 'Gold published'")
    assert AnnotationReview.objects.get(campaign=campaign, clip=clip).status == "published"
    assert not errors, errors
