"""The annotation editor for expert work, in headless Chromium on a real 20 s stereo recording (34.wav):
relations removed by click and by keyboard with undo for every edit, relations checked against the time spans
(flagged, fixed with one key, refused at submit) and proposed from them, several occurrences of an event as
regions moved and resized on a zoomable timeline, the spectrogram's scales and channels, tag templates, the
Count tags and flagged sources. Screenshots at 1280 and 390 px go to test-artifacts/."""

import json

import pytest

from annotation.models import AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_campaign_create
from common.time_relations import time_proposals
from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def park_task(make_user, media_root, shared_dir, tmp_path):
    """A campaign over one real stereo clip (20 s, 44.1 kHz) for one annotator."""
    dataset = Dataset.objects.create(name="park")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="34.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    annotator = make_user("ann-park", "annotator")
    annotation_campaign_create(
        name="park", dataset=dataset, clips=[clip], annotators=[annotator], annotations_per_clip=1
    )
    return annotator, clip


def _open(page, live_server, width=1280):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/annotate/")
    page.focus("form[action*='/next/'] button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    # The spectrogram and the channel peaks are computed on their first request (seconds on a busy machine).
    page.wait_for_function(
        "() => window.annotationPage.player.spectrogram.isLoaded && window.annotationPage.player.channelPeaks !== null",
        timeout=60_000,
    )


def _draft(page) -> dict:
    return page.evaluate("() => window.annotationPage.editor.draft")


def _saved(page):
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")


def _stored(page) -> dict:
    return AnnotationTask.objects.get(pk=json.loads(page.locator("#task-data").text_content())["id"]).draft


def _select(page, start, end):
    page.evaluate("([s, e]) => window.annotationPage.player.setSelection(s, e)", [start, end])


def _new_event(page, label, source, attribute=None):
    keyboard = page.keyboard
    keyboard.press("n")
    keyboard.type(label)
    keyboard.press("Enter")
    keyboard.type(source)
    keyboard.press("Shift+Enter")
    keyboard.press("Enter")
    if attribute:
        keyboard.type(attribute)
        keyboard.press("Tab")  # take the library tag it starts (Enter alone keeps what was typed)
    keyboard.press("Escape")  # attributes field -> the event's card


def _card(page, index):
    return page.locator("#event-editor .event-card").nth(index)


def _stated(page):
    return page.locator("#relations-panel .relations-stated li.relation")


def test_relations_time_spans_occurrences_and_the_player_by_keyboard(page_for, live_server, park_task, artifacts):
    annotator, clip = park_task
    page = page_for(annotator)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _open(page, live_server)

    # --- A selection made with the keyboard only: the timeline's cursor keys, then i and o.
    page.locator(".timeline").focus()
    page.keyboard.press("Home")
    for _ in range(5):
        page.keyboard.press("ArrowRight")  # 0.1 s a step on the whole 20 s clip
    page.keyboard.press("i")
    for _ in range(10):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("o")
    assert page.evaluate("() => window.annotationPage.player.selection") == {"start": 0.5, "end": 1.5}
    page.keyboard.press("Escape")
    assert page.evaluate("() => window.annotationPage.player.selection") is None

    # --- The park: chirping all along, a car driving by; a new event takes the selection as its span.
    _select(page, 8.49, 11.5)
    _new_event(page, "driving by", "car", "lou")
    _select(page, 0.3, 19.89)
    _new_event(page, "chirping", "birds", "high")
    draft = _draft(page)
    assert [(e["label"], e["spans"]) for e in draft["events"]] == [
        ("driving by", [[8.49, 11.5]]),
        ("chirping", [[0.3, 19.89]]),
    ]
    assert draft["events"][0]["attributes"] == ["loud"]

    # --- The published mistake: "chirping before driving by" is flagged against the spans, with its fix.
    page.keyboard.press("x")  # chirping selected
    page.keyboard.press("k")
    page.keyboard.press("b")  # the selected one (chirping) before this one (driving by)
    assert _stated(page).count() == 1
    flagged = _stated(page).first
    assert "is-against-time" in flagged.get_attribute("class")
    flag = " ".join(flagged.locator(".relation-flag").inner_text().split())
    assert "'chirping' (0.30–19.89 s) before 'driving by' (8.49–11.50 s): the spans say simultaneous" in flag
    _saved(page)
    # The server's checks (run after the save) say the same.
    page.wait_for_selector("#checks-list .check.is-error >> text=Relation against the time spans")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "annotation_editor_flagged_1280.png"), full_page=True)
    # Submitting is refused while the relation contradicts the spans (the server's check).
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#submit-dialog[open]")
    assert page.locator("#submit-dialog .check.is-error").filter(has_text="against the time spans").count() == 1
    assert page.locator("#submit-dialog [data-action=confirm-submit]").is_hidden()
    page.keyboard.press("Escape")
    # e goes to the flagged relation, f fixes it from the spans.
    page.keyboard.press("e")
    assert page.evaluate("() => document.activeElement.dataset.list") == "stated"
    page.keyboard.press("f")
    assert _draft(page)["relations"] == [{"first": "e2", "second": "e1", "kind": "simultaneous"}]
    assert _stated(page).first.get_attribute("class") == "relation"

    # --- Removing a relation: Delete on it, Ctrl+Z brings it back; the ✕ works too (it did nothing before).
    page.keyboard.press("Delete")
    assert _draft(page)["relations"] == [] and _stated(page).count() == 0
    page.keyboard.press("Control+z")
    assert _draft(page)["relations"] == [{"first": "e2", "second": "e1", "kind": "simultaneous"}]
    _stated(page).first.locator("[data-action=remove-relation]").click()
    assert _draft(page)["relations"] == []
    page.keyboard.press("Control+z")
    assert len(_draft(page)["relations"]) == 1
    page.keyboard.press("Control+Shift+z")  # redo the removal
    assert _draft(page)["relations"] == []
    page.keyboard.press("Control+z")

    # --- Every edit is undone with Ctrl+Z: a source, a rename.
    _card(page, 1).locator(".chip-input[data-kind=sources]").focus()
    page.keyboard.type("sparrows")
    page.keyboard.press("Shift+Enter")
    assert _draft(page)["events"][1]["sources"] == ["birds", "sparrows"]
    page.keyboard.press("Control+z")
    assert _draft(page)["events"][1]["sources"] == ["birds"]
    _card(page, 1).locator(".event-label").fill("birdsong")
    _card(page, 1).focus()
    page.keyboard.press("Control+z")
    assert _draft(page)["events"][1]["label"] == "chirping"

    # --- Three passes of a car: one event, three occurrences (n with a selection, then r twice).
    _select(page, 3.5, 5.0)
    _new_event(page, "passing", "car")
    for start, end in ((10.0, 11.5), (18.8, 19.9)):
        _select(page, start, end)
        page.keyboard.press("r")
    assert _draft(page)["events"][2]["spans"] == [[3.5, 5.0], [10.0, 11.5], [18.8, 19.9]]
    bars = page.locator(".region-bar")
    assert bars.count() == 5  # driving by, chirping, and the three passes
    assert page.locator(".region-bar[data-region-id^='e3:']").count() == 3

    # The timeline zooms (+, Ctrl+wheel) and pans (, .), with a ruler; 0 shows the whole clip again.
    view = (
        "() => { const data = document.querySelector('.timeline').dataset;"
        " return [Number(data.viewStart), Number(data.viewEnd)]; }"
    )
    page.keyboard.press("+")
    page.keyboard.press("+")
    start, end = page.evaluate(view)
    assert end - start == pytest.approx(5.0, abs=0.01)
    page.keyboard.press(".")
    assert page.evaluate(view)[0] == pytest.approx(start + 1.25, abs=0.01)
    page.locator(".timeline").scroll_into_view_if_needed()
    box = page.locator(".timeline-waveform").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    page.wait_for_function(f"() => ({view})()[1] - ({view})()[0] < 4.5")
    zoomed = page.evaluate(view)
    assert zoomed[1] - zoomed[0] < 5.0 - 0.5
    page.keyboard.press("0")
    assert page.evaluate(view) == pytest.approx([0.0, 20.0], abs=0.01)

    # A span moved with the keyboard (arrows, steps of 0.1 s on the whole clip), then resized at its end.
    page.locator(".region-bar[data-event-id='e3'][data-index='1']").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert _draft(page)["events"][2]["spans"][1] == [10.2, 11.7]
    page.keyboard.press("Control+ArrowLeft")
    assert _draft(page)["events"][2]["spans"][1] == [10.2, 11.6]
    page.keyboard.press("Control+z")  # keys pressed one after the other on a span are one edit
    assert _draft(page)["events"][2]["spans"][1] == [10.0, 11.5]
    assert len(_draft(page)["events"][2]["spans"]) == 3
    # A span dragged with the mouse by its body.
    bar = page.locator(".region-bar[data-event-id='e3'][data-index='0']")
    bar_box = bar.bounding_box()
    seconds_per_pixel = 20.0 / page.locator(".timeline-regions-inner").bounding_box()["width"]
    page.mouse.move(bar_box["x"] + bar_box["width"] / 2, bar_box["y"] + bar_box["height"] / 2)
    page.mouse.down()
    page.mouse.move(bar_box["x"] + bar_box["width"] / 2 + 40, bar_box["y"] + bar_box["height"] / 2, steps=5)
    page.mouse.up()
    moved = _draft(page)["events"][2]["spans"][0]
    assert moved[0] == pytest.approx(3.5 + 40 * seconds_per_pixel, abs=0.05)
    assert moved[1] - moved[0] == pytest.approx(1.5, abs=0.002)
    page.keyboard.press("Control+z")
    assert _draft(page)["events"][2]["spans"][0] == [3.5, 5.0]
    # The end handle resizes a span; its play button plays exactly that span.
    handle = page.locator(".region-bar[data-event-id='e3'][data-index='1'] .region-handle.is-end").bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(handle["x"] + handle["width"] / 2 + 30, handle["y"] + handle["height"] / 2, steps=5)
    page.mouse.up()
    resized = _draft(page)["events"][2]["spans"][1]
    assert resized[0] == 10.0 and resized[1] == pytest.approx(11.5 + 30 * seconds_per_pixel, abs=0.05)
    page.keyboard.press("Control+z")
    page.locator(".region-bar[data-event-id='e3'][data-index='1'] .region-play").click()
    page.wait_for_function("() => !document.querySelector('#player audio').paused")
    assert page.evaluate("() => window.annotationPage.player.range") == {"start": 10.0, "end": 11.5}
    assert 10.0 <= page.evaluate("() => document.querySelector('#player audio').currentTime") <= 11.5
    page.evaluate("() => document.querySelector('#player audio').pause()")
    # Delete on a span removes that occurrence only.
    page.locator(".region-bar[data-event-id='e3'][data-index='2']").focus()
    page.keyboard.press("Delete")
    assert _draft(page)["events"][2]["spans"] == [[3.5, 5.0], [10.0, 11.5]]

    # --- Relations proposed from the spans, the same in the page and on the server; p takes the first.
    draft = _draft(page)
    in_page = page.evaluate("() => window.annotationPage.editor.proposals()")
    on_server = time_proposals(
        [(e["id"], e["spans"]) for e in draft["events"]],
        [(r["first"], r["second"], r["kind"]) for r in draft["relations"]],
    )
    assert [tuple(p) for p in in_page] == on_server and on_server
    shown = page.locator("#relations-panel .relations-proposed li.relation")
    assert shown.count() == len(on_server)
    page.keyboard.press("Escape")  # leave the span: back to its event
    page.keyboard.press("p")
    first, second, kind = on_server[0]
    assert {"first": first, "second": second, "kind": kind} in _draft(page)["relations"]

    # --- The spectrogram: linear scale, brightness, one channel (played and shown) of the stereo clip.
    requested = []
    page.on("request", lambda request: requested.append(request.url) if "spectrogram" in request.url else None)
    page.keyboard.press("m")
    page.keyboard.press("}")
    page.keyboard.press("c")  # left only
    page.wait_for_function("() => window.annotationPage.player.spectrogram.isLoaded", timeout=60_000)
    state = page.evaluate(
        "() => { const p = window.annotationPage.player;"
        " return [p.spectrogram.scale, p.spectrogram.channel, p.spectrogram.brightness, p.router.mode]; }"
    )
    assert state == ["linear", "left", 1.25, "left"]
    assert any("scale=linear&channel=left" in url for url in requested)
    page.keyboard.press("v")  # the two channels mixed in one lane, and apart again
    assert page.evaluate("() => window.annotationPage.player.splitChannels") is False
    page.keyboard.press("v")
    page.keyboard.press("c")
    page.keyboard.press("c")  # both again

    # --- A template asks for the word; the Count tags; a source outside the list is flagged.
    attributes = _card(page, 2).locator(".chip-input[data-kind=attributes]")
    attributes.focus()
    page.keyboard.type("on a")
    page.wait_for_selector(".suggest-option.is-active >> text=on a ___")
    page.keyboard.press("Tab")  # the highlighted template is taken (Enter alone keeps what was typed)
    assert attributes.input_value() == "on a "
    page.keyboard.type("road")
    page.keyboard.press("Enter")
    page.keyboard.type("three t")
    page.keyboard.press("Tab")
    chips = _card(page, 2).locator(".chips[data-kind=attributes] .chip")
    assert [chip.locator(".chip-text").inner_text() for chip in chips.all()] == ["on a road", "three times"]
    assert [chip.locator(".chip-category").inner_text().lower() for chip in chips.all()] == ["location", "count"]
    sources = _card(page, 2).locator(".chip-input[data-kind=sources]")
    sources.focus()
    page.keyboard.type("vroomster")
    page.keyboard.press("Shift+Enter")
    flagged_source = _card(page, 2).locator(".chips[data-kind=sources] .chip.is-free")
    assert flagged_source.locator(".chip-text").inner_text() == "vroomster"
    assert "new source" in flagged_source.inner_text()

    _saved(page)
    page.wait_for_selector("#checks-list .check.is-warning >> text=vroomster")  # the checks of this version
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "annotation_editor_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(100)  # a frame for the canvases to redraw at the new width
    page.screenshot(path=str(artifacts / "annotation_editor_390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # --- What the server stored is what the page shows; the checks ask to confirm the flagged source.
    stored = _stored(page)
    assert stored["events"][2]["spans"] == [[3.5, 5.0], [10.0, 11.5]]
    assert stored["events"][2]["attributes"] == ["on a road", "three times"]
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#submit-dialog[open]")
    assert page.locator("#submit-dialog .check.is-error").count() == 0
    assert page.locator("#submit-dialog .check.is-warning").filter(has_text="vroomster").count() == 1
    page.locator("#submit-dialog [data-action=confirm-submit]").click()
    page.wait_for_url("**/annotate/?done=*")
    submitted = ExpertAnnotation.objects.get(clip=clip, status="submitted")
    passing = submitted.events.get(label="passing")
    assert [(s.onset_seconds, s.offset_seconds) for s in passing.spans.all()] == [(3.5, 5.0), (10.0, 11.5)]
    assert [(s.text, s.listed) for s in passing.sources.all()] == [("car", True), ("vroomster", False)]
    assert [a.tag.text for a in passing.attributes.all()] == ["on a xxx", "three times"]
    assert not errors, errors


def test_the_page_runs_the_servers_rules_on_the_shared_cases(page_for, live_server, park_task):
    """annotation_graph.js against tests/annotation/data/time_relation_cases.json (the pytest side reads the same
    file), and the editor's tag-library and source-list readings against the server's."""
    from pathlib import Path

    from annotation.models import AttributeTag
    from annotation.selectors import attribute_vocabulary
    from annotation.vocabulary import source_is_listed

    annotator, _clip = park_task
    page = page_for(annotator)
    _open(page, live_server)
    cases = json.loads((Path(__file__).parent.parent / "annotation" / "data" / "time_relation_cases.json").read_text())
    results = page.evaluate(
        """(cases) => {
          const G = window.AnnotationGraph;
          const relations = (list) => list.map(([first, second, kind]) => ({first, second, kind}));
          return {
            chain: cases.chain_rule.map((c) => { const r = G.analyse(relations(c.relations));
              return [r.implied.map((i) => [i.first, i.second, i.kind]), r.contradictions.map((x) => x.index)]; }),
            spans: cases.span_relation.map((c) => G.spanRelation(c.first, c.second)),
            conflicts: cases.conflicts.map((c) => { const x = G.timeConflict(c.kind, c.first, c.second);
              return x ? {reason: x.reason, implied: x.implied} : null; }),
            proposals: cases.proposals.map((c) => G.timeProposals(c.events, relations(c.relations))),
            derived: cases.derived.map((c) => { const r = G.derive(relations(c.relations), c.spans);
              const triple = (i) => [i.first, i.second, i.kind];
              return [r.implied.map(triple), r.dropped.map(triple), r.contradictions.map((x) => x.index)]; }),
          };
        }""",
        cases,
    )
    assert results["chain"] == [[c["implied"], c["contradictions"]] for c in cases["chain_rule"]]
    assert results["spans"] == [c["relation"] for c in cases["span_relation"]]
    assert results["conflicts"] == [c["conflict"] for c in cases["conflicts"]]
    assert results["proposals"] == [c["proposals"] for c in cases["proposals"]]
    assert results["derived"] == [[c["implied"], c["dropped"], c["contradictions"]] for c in cases["derived"]]

    words = ["dog", "Dogs", "puppies", "church bell", "glasses", "zorblax", "car horn", "  Man ", "leaves", "bus"]
    listed = page.evaluate("(words) => words.map((w) => window.annotationPage.editor.sourceIsListed(w))", words)
    assert listed == [source_is_listed(word) for word in words]
    texts = ["Loud ", "on a wooden table", "on a", "against the wall", "twice", "in  the distance", "yappy"]
    tags = page.evaluate(
        "(texts) => texts.map((t) => { const tag = window.annotationPage.editor.tagOf(t);"
        " return tag ? tag.tag : null; })",
        texts,
    )
    library, names = attribute_vocabulary(), dict(AttributeTag.objects.values_list("pk", "text"))
    assert tags == [names.get(library.tag_of(text)) for text in texts]
