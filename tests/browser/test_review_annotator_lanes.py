"""The review page draws every annotator's time spans, in headless Chromium: one lane per submission, named as
its card names the annotator, one bar per span at the seconds the submission gives (measured against the
clip's duration stored by the audio import, not the page's own numbers), coloured by matched row with a legend,
the event and seconds in each bar's title, and an event name holding markup shown as text. At 1280 and 390 px,
unzoomed and zoomed."""

import pytest

from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach
from tests.browser.review_campaigns import annotation_draft, campaign_with_submissions, review_page_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

LANES = "#annotator-lanes .annotator-lane:not(.is-ruler)"
HOSTILE_NAME = '<img src=x onerror="window.__laneRan = 1">'
# (label, sources, spans) per annotator.
SUBMISSIONS = {
    "ann-a": [
        ("rustling", ["leaves"], [[2.0, 8.0]]),
        ("barking", ["dog"], [[12.0, 13.0], [15.5, 16.25]]),
    ],
    "ann-b": [
        ("rustle", ["leaves"], [[2.1, 7.9]]),
        ("barks", ["dog"], [[12.1, 13.1]]),
        (HOSTILE_NAME, ["door"], [[18.0, 18.4]]),
    ],
    "ann-c": [
        ("leaves rustling", ["leaves"], [[1.8, 4.0], [5.0, 8.1]]),
    ],
}


@pytest.fixture
def submitted(make_user, media_root, shared_dir, tmp_path):
    dataset = Dataset.objects.create(name="lanes-review")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="lanes.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    drafts = {
        username: annotation_draft([(label, sources, ["loud"], spans) for label, sources, spans in events])
        for username, events in SUBMISSIONS.items()
    }
    campaign, reviewer = campaign_with_submissions(clip=clip, make_user=make_user, name="lanes", drafts=drafts)
    return clip, campaign, reviewer


def _drawn(page) -> dict:
    """Per lane (its name): [(event name, left px, width px, title)] relative to the lane's track."""
    return page.evaluate(
        """(selector) => Object.fromEntries([...document.querySelectorAll(selector)].map((lane) => {
            const track = lane.querySelector('.annotator-lane-track').getBoundingClientRect();
            const bars = [...lane.querySelectorAll('.annotator-lane-bar')].filter((bar) => !bar.hidden).map((bar) => {
                const box = bar.getBoundingClientRect();
                return [bar.querySelector('.annotator-lane-label').textContent, box.left - track.left, box.width,
                        bar.title, track.width];
            });
            return [lane.querySelector('.annotator-lane-name').textContent, bars];
        }))""",
        LANES,
    )


def _assert_spans_drawn(drawn, duration, view=(0.0, None)):
    start, end = view[0], view[1] if view[1] is not None else duration
    assert sorted(drawn) == sorted(SUBMISSIONS)
    for annotator, events in SUBMISSIONS.items():
        expected = [
            (label, onset, offset)
            for label, _sources, spans in events
            for onset, offset in spans
            if offset >= start and onset <= end
        ]
        bars = drawn[annotator]
        assert len(bars) == len(expected), annotator
        for (label, onset, offset), (text, left, width, title, track) in zip(expected, bars, strict=True):
            assert text == label
            assert f"{onset:.2f}–{offset:.2f} s" in title and label in title
            assert left == pytest.approx((onset - start) / (end - start) * track, abs=1.5)
            assert width == pytest.approx(max((offset - onset) / (end - start) * track, 3), abs=1.5)


def test_review_page_draws_every_annotators_spans_in_lanes(page_for, live_server, submitted, artifacts):
    clip, campaign, reviewer = submitted
    duration = clip.duration_seconds
    assert duration == pytest.approx(20.0, abs=0.05)
    page = page_for(reviewer)
    errors = review_page_open(page, live_server.url, campaign, clip)
    page.wait_for_function("(selector) => document.querySelectorAll(selector).length === 3", arg=LANES)

    # The lanes are named as the submission cards name the annotators, in the same order.
    lane_names = page.locator(f"{LANES} .annotator-lane-name").all_inner_texts()
    card_names = page.locator("#submissions .submission h3 > span:first-child").all_inner_texts()
    assert lane_names == card_names and sorted(lane_names) == sorted(SUBMISSIONS)
    # Every span where its seconds are, and the hostile name shown as text, never run.
    _assert_spans_drawn(_drawn(page), duration)
    assert page.evaluate("() => window.__laneRan") is None
    assert page.locator("#annotator-lanes img").count() == 0

    # Once the matching is in, one sound has one colour in every lane, and the legend names it.
    page.wait_for_selector("table.matching", timeout=90_000)  # the phrase encoder loads on first use
    page.wait_for_function("() => document.querySelector('#annotator-lanes .annotator-lane-bar[data-group=\"0\"]')")
    colours = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#annotator-lanes .annotator-lane-bar')].map(
            (bar) => [bar.closest('.annotator-lane').dataset.annotator + ':' + bar.dataset.event,
                      getComputedStyle(bar).borderTopColor]))"""
    )
    leaves = {colours["ann-a:rustling"], colours["ann-b:rustle"], colours["ann-c:leaves rustling"]}
    dogs = {colours["ann-a:barking"], colours["ann-b:barks"]}
    assert len(leaves) == 1 and len(dogs) == 1 and leaves != dogs
    legend = page.locator("#annotator-lanes .annotator-lanes-legend li").all_inner_texts()
    assert len(legend) == 3 and any(HOSTILE_NAME in text for text in legend)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "review_annotator_lanes_1280.png"), full_page=True)

    # Zoomed on 10-17 s the lanes follow the player: only the spans in view, at the view's scale.
    page.evaluate("() => window.reviewPage.player.setView(10, 17)")
    _assert_spans_drawn(_drawn(page), duration, view=(10.0, 17.0))
    page.evaluate("() => window.reviewPage.player.zoomFit()")

    # At 390 px the lanes still hold every span at its seconds, on a track wide enough to read.
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(100)  # a frame for the layout at the new width
    drawn = _drawn(page)
    _assert_spans_drawn(drawn, duration)
    assert min(bar[4] for bars in drawn.values() for bar in bars) >= 220
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(artifacts / "review_annotator_lanes_390.png"), full_page=True)
    assert errors == []
