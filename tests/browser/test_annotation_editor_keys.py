"""Keys of the annotation editor that changed what annotators meant, in headless Chromium: arrow keys on one
occurrence of an event keep moving that occurrence after it passes another one (region ids no longer follow
the sorted order), Enter keeps the word typed unless a suggestion was chosen with the arrow keys or Tab, and
Tab takes the highlighted suggestion at once and moves on (name -> sources -> attributes), the suggestions
ranked by how often annotators used them, a word start counting as much as the whole's start."""

import pytest

from annotation.models import AttributeTag, EventAttribute, ExpertAnnotation, SoundEvent
from annotation.services.annotation_campaigns import annotation_campaign_create
from corpus.models import Clip, Dataset
from tests.annotation.audio_helpers import real_stereo_clip_attach

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def task_page(make_user, media_root, shared_dir, tmp_path, live_server, page_for):
    """The editor open on a real 20 s clip, with "panting" and "beeping" among the event words and "in the
    distance" the attribute used (another clip's annotation)."""
    dataset = Dataset.objects.create(name="keys")
    clip = real_stereo_clip_attach(
        Clip.objects.create(dataset=dataset, external_id="34.wav"), shared_dir=shared_dir, folder=tmp_path
    )
    other = Clip.objects.create(dataset=dataset, external_id="other.wav")
    earlier = ExpertAnnotation.objects.create(clip=other, annotator=make_user("ann-earlier", "annotator"))
    SoundEvent.objects.create(annotation=earlier, label="panting", position=0)
    beeping = SoundEvent.objects.create(annotation=earlier, label="beeping", position=1)
    distance = AttributeTag.objects.get(text="in the distance")
    EventAttribute.objects.create(event=beeping, text="in the distance", position=0, tag=distance)
    annotator = make_user("ann-keys", "annotator")
    annotation_campaign_create(
        name="keys", dataset=dataset, clips=[clip], annotators=[annotator], annotations_per_clip=1
    )
    page = page_for(annotator)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/annotate/")
    page.focus("form[action*='/next/'] button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    page.wait_for_function("() => window.annotationPage.player.duration > 0", timeout=60_000)
    return page


def _events(page) -> list[dict]:
    return page.evaluate("() => window.annotationPage.editor.draft.events")


def test_nudging_an_occurrence_past_another_keeps_moving_the_same_one(task_page):
    page = task_page
    page.keyboard.press("n")
    page.keyboard.type("knocking")
    page.keyboard.press("Shift+Enter")
    page.locator(".event-card").first.focus()
    for start, end in ((2.0, 4.0), (6.0, 8.0)):
        page.evaluate("([s, e]) => window.annotationPage.player.setSelection(s, e)", [start, end])
        page.keyboard.press("r")
    assert _events(page)[0]["spans"] == [[2.0, 4.0], [6.0, 8.0]]

    first = page.locator(".region-bar[data-event-id='e1'][data-index='0']")
    moved_id = first.get_attribute("data-region-id")
    first.focus()
    for _ in range(42):  # 0.1 s a step on the whole clip: 2.0 -> 6.2, past the other occurrence
        page.keyboard.press("ArrowRight")
    assert _events(page)[0]["spans"] == [[6.0, 8.0], [6.2, 8.2]]
    # the focus stayed on the occurrence that moved, now second in order, so the next step moves it again
    focused = page.evaluate("() => document.activeElement.dataset.regionId")
    assert focused == moved_id
    assert page.evaluate("() => document.activeElement.dataset.index") == "1"
    page.keyboard.press("ArrowRight")
    assert _events(page)[0]["spans"] == [[6.0, 8.0], [6.3, 8.3]]
    page.keyboard.press("Shift+ArrowLeft")  # its start
    assert _events(page)[0]["spans"] == [[6.0, 8.0], [6.2, 8.3]]
    # and back before the other one, by the keyboard too
    for _ in range(43):
        page.keyboard.press("ArrowLeft")
    assert _events(page)[0]["spans"] == [[1.9, 4.0], [6.0, 8.0]]
    assert page.evaluate("() => document.activeElement.dataset.regionId") == moved_id


def _type_new_event(page, typed: str, *keys: str) -> None:
    page.evaluate("() => window.annotationPage.editor.focusNewEvent()")
    page.keyboard.type(typed)
    page.wait_for_selector(".suggest-box:not([hidden]) .suggest-option.is-active")  # a hint is highlighted
    for key in keys:
        page.keyboard.press(key)


def test_enter_keeps_what_was_typed_unless_a_suggestion_was_chosen(task_page):
    page = task_page
    _type_new_event(page, "pan", "Enter")  # the highlighted "panting" is only a hint
    assert [event["label"] for event in _events(page)] == ["pan"]
    _type_new_event(page, "pan", "ArrowDown", "Enter")  # chosen with the arrow keys
    _type_new_event(page, "bee", "Tab")  # taken with Tab
    _type_new_event(page, "bee", "Shift+Enter")  # exactly as typed, as before
    assert [event["label"] for event in _events(page)] == ["pan", "panting", "beeping", "bee"]


def test_a_pasted_name_past_255_characters_is_refused_with_its_length_not_cut_short(task_page):
    page = task_page
    page.evaluate("() => window.annotationPage.editor.focusNewEvent()")
    long_name = "a dog barking " * 22  # 308 characters
    page.keyboard.insert_text(long_name)
    page.keyboard.press("Shift+Enter")
    assert _events(page) == []
    assert "Too long: the event name has 307 characters, at most 255 fit" in page.inner_text("#editor-message")
    field = page.locator(".new-event-input")
    assert field.input_value() == long_name  # kept whole, to be shortened
    field.fill("a dog barking")
    field.press("Shift+Enter")
    assert [event["label"] for event in _events(page)] == ["a dog barking"]


def test_attributes_the_library_calls_opposites_or_other_counts_are_flagged_on_their_chips(task_page):
    page = task_page
    page.evaluate("() => window.annotationPage.editor.focusNewEvent()")
    page.keyboard.type("knocking")
    page.keyboard.press("Shift+Enter")  # -> sources
    page.keyboard.press("Enter")  # empty -> attributes
    for attribute in ("loud", "three times", "clear", "quiet", "several times"):
        page.keyboard.type(attribute)
        page.keyboard.press("Shift+Enter")
    chips = page.locator(".chips[data-kind=attributes] .chip")
    assert [chip.locator(".chip-text").inner_text() for chip in chips.all()] == [
        "loud",
        "three times",
        "clear",
        "quiet",
        "several times",
    ]
    flagged = page.locator(".chips[data-kind=attributes] .chip.is-clash")
    assert [chip.locator(".chip-text").inner_text() for chip in flagged.all()] == ["quiet", "several times"]
    assert flagged.first.get_attribute("title") == (
        "'quiet' is the opposite of 'loud' (tag library): keep the one that is right."
    )
    assert "another count than 'three times'" in flagged.nth(1).get_attribute("title")


def _highlighted(page) -> str:
    return page.locator(".suggest-box:not([hidden]) .suggest-option.is-active .suggest-text").inner_text()


def _focused_field(page) -> str:
    return page.evaluate(
        "() => { const e = document.activeElement; return e.classList.contains('new-event-input') ? 'new'"
        " : e.dataset.kind || e.className; }"
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_tab_takes_the_highlighted_suggestion_and_moves_on(task_page, width, artifacts):
    page = task_page
    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
    _type_new_event(page, "bee")
    assert _highlighted(page) == "beeping"
    page.keyboard.press("Tab")  # the name is taken, on to the sources
    assert [event["label"] for event in _events(page)] == ["beeping"]
    assert _focused_field(page) == "sources"
    page.keyboard.type("do")
    page.wait_for_selector(".suggest-box:not([hidden]) .suggest-option.is-active")
    source = _highlighted(page)
    assert source.lower().startswith("do") or " do" in source.lower()
    page.keyboard.press("Tab")  # one source is the rule: on to the attributes
    assert _events(page)[0]["sources"] == [source]
    assert _focused_field(page) == "attributes"
    page.keyboard.type("dist")
    page.wait_for_selector(".suggest-box:not([hidden]) .suggest-option.is-active")
    # a word start of the one tag used before, ahead of the shorter "distant" nobody used
    assert _highlighted(page) == "in the distance"
    box = page.locator(".suggest-box:not([hidden])").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width  # the list fits the screen
    page.screenshot(path=str(artifacts / f"editor-tab-suggestion-{width}.png"))
    page.keyboard.press("Tab")  # taken; an attribute stays for the next one
    assert _events(page)[0]["attributes"] == ["in the distance"]
    assert _focused_field(page) == "attributes"
    page.keyboard.type("dist")
    page.wait_for_selector(".suggest-box:not([hidden]) .suggest-option.is-active")
    page.keyboard.press("Enter")  # Enter still keeps what was typed
    assert _events(page)[0]["attributes"] == ["in the distance", "dist"]
    page.keyboard.press("Enter")  # empty: on to the next event
    assert _focused_field(page) == "new"
    page.keyboard.press("Tab")  # nothing typed: Tab leaves the field as usual, nothing is added
    assert len(_events(page)) == 1
