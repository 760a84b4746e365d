"""Two tabs and two devices on one clip, in headless Chromium: interleaved edits, an offline period, reloads and
a closed tab. Every event typed in either place ends in the saved draft, or in the conflict view, which shows
both versions side by side and says on each button what it keeps and what it drops. Screenshots of the conflict
view at 1280 and 390 px go to test-artifacts/."""

import json
import time
from pathlib import Path

import pytest

from annotation.models import AnnotationTask
from annotation.services.annotation_campaigns import annotation_campaign_create
from tests.browser.offline_tabs import close_while_offline
from tests.ratings.campaign_data import clip_audio_attach, corpus_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def annotator(make_user, media_root):
    dataset, clips, _systems = corpus_build(name="merge", clip_count=1, reference_count=1, system_names=("sys_x",))
    clip = clip_audio_attach(clips[0], seconds=3.0)
    user = make_user("ann-two-tabs", "annotator")
    annotation_campaign_create(name="merge", dataset=dataset, clips=[clip], annotators=[user], annotations_per_clip=1)
    return user


def _open_next_clip(page, live_server):
    page.goto(f"{live_server.url}/annotate/")
    page.focus("form[action*='/next/'] button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotation-page[data-ready=true]")


def _open_same(page, url):
    page.goto(url)
    page.wait_for_selector("#annotation-page[data-ready=true]")


def _state_is(page, state):
    page.wait_for_function(f"() => document.getElementById('save-status').dataset.state === '{state}'")


def _add(page, label):
    page.evaluate("(label) => window.annotationPage.editor.addEvent(label)", label)


def _rename(page, old, new):
    page.evaluate(
        "([old, label]) => { const e = window.annotationPage.editor;"
        " e.setLabel(e.draft.events.find((x) => x.label === old).id, label); }",
        [old, new],
    )


def _labels_on_page(page) -> list[str]:
    return page.evaluate("() => window.annotationPage.editor.draft.events.map((e) => e.label)")


def _stored_labels(task_id) -> list[str]:
    return [event["label"] for event in AnnotationTask.objects.get(pk=task_id).draft["events"]]


def _wait_stored(task_id, expected, timeout=60.0):
    """Poll the stored draft until its event names are `expected` (sorted); fail naming what is there."""
    deadline = time.monotonic() + timeout
    while sorted(_stored_labels(task_id)) != sorted(expected):
        if time.monotonic() > deadline:
            raise AssertionError(f"stored {sorted(_stored_labels(task_id))}, expected {sorted(expected)}")
        time.sleep(0.2)


def _task_id(page) -> int:
    return json.loads(page.locator("#task-data").text_content())["id"]


def test_two_tabs_interleaved_edits_a_conflict_a_reload_and_a_closed_tab_lose_nothing(
    page_for, live_server, annotator, artifacts
):
    tab_a = page_for(annotator)
    _open_next_clip(tab_a, live_server)
    task_id = _task_id(tab_a)
    _add(tab_a, "alpha")
    _state_is(tab_a, "saved")
    tab_b = tab_a.context.new_page()
    _open_same(tab_b, tab_a.url)
    assert _labels_on_page(tab_b) == ["alpha"]

    # Interleaved: each tab adds an event the other has not seen; the refused save merges and saves again.
    _add(tab_a, "gamma")
    _state_is(tab_a, "saved")
    _add(tab_b, "beta")  # B is behind: 409, merged (both numbered their new event e2), saved
    _state_is(tab_b, "saved")
    assert sorted(_stored_labels(task_id)) == ["alpha", "beta", "gamma"]
    assert sorted(_labels_on_page(tab_b)) == ["alpha", "beta", "gamma"]
    _add(tab_a, "delta")
    _state_is(tab_a, "saved")
    assert sorted(_stored_labels(task_id)) == ["alpha", "beta", "delta", "gamma"]
    assert "Merged" in tab_a.locator("#editor-message").inner_text()

    # The same event renamed in both tabs: nothing is saved until the user chooses; the buttons say what goes.
    _rename(tab_a, "alpha", "alpha dog")
    _state_is(tab_a, "saved")
    _rename(tab_b, "alpha", "alpha cat")
    _state_is(tab_b, "conflict")
    banner = tab_b.locator("#conflict-banner")
    assert banner.is_visible() and "another tab" in banner.inner_text()
    item = banner.locator(".merge-conflict")
    assert item.count() == 1
    assert "'alpha cat'" in item.locator("[data-side=mine]").inner_text()
    assert "'alpha dog'" in item.locator("[data-side=theirs]").inner_text()
    keep_mine = item.locator("button[data-choice=mine]").inner_text()
    assert "'alpha cat'" in keep_mine and "drops" in keep_mine and "name 'alpha dog'" in keep_mine
    keep_theirs = item.locator("button[data-choice=theirs]").inner_text()
    assert "'alpha dog'" in keep_theirs and "name 'alpha cat'" in keep_theirs
    assert tab_b.locator("[data-action=apply-merge]").is_disabled()
    # Still stored while waiting: an edit made now is in the tab's own local copy and in the result.
    _add(tab_b, "epsilon")
    _state_is(tab_b, "conflict")
    own_copy = tab_b.evaluate("() => JSON.parse(localStorage.getItem(window.annotationPage.sync.storageKey))")
    assert "epsilon" in [event["label"] for event in own_copy["draft"]["events"]]
    tab_b.set_viewport_size({"width": 1280, "height": 900})
    banner.scroll_into_view_if_needed()
    tab_b.screenshot(path=str(artifacts / "annotation_merge_conflict_1280.png"))
    item.locator("button[data-choice=both]").click()
    assert tab_b.locator("[data-action=apply-merge]").is_enabled()
    tab_b.locator("[data-action=apply-merge]").click()
    _state_is(tab_b, "saved")
    assert sorted(_stored_labels(task_id)) == ["alpha cat", "alpha dog", "beta", "delta", "epsilon", "gamma"]

    # B cannot reach the server, edits, A saves meanwhile; B reloads: its own copy is restored and merged.
    tab_b.route("**/draft/", lambda route: route.abort() if route.request.method == "PUT" else route.continue_())
    _add(tab_b, "zeta")
    _state_is(tab_b, "offline")
    _add(tab_a, "eta")
    _state_is(tab_a, "saved")
    tab_b.unroute("**/draft/")
    tab_b.reload()
    tab_b.wait_for_selector("#annotation-page[data-ready=true]")
    _wait_stored(task_id, ["alpha cat", "alpha dog", "beta", "delta", "epsilon", "gamma", "zeta", "eta"])

    # B edits offline and is closed: the copy it left is offered in the next tab opened, and merged in.
    tab_a.context.set_offline(True)
    _add(tab_b, "theta")
    _state_is(tab_b, "offline")
    close_while_offline(tab_b)
    tab_a.context.set_offline(False)
    assert "theta" not in _stored_labels(task_id)
    tab_c = tab_a.context.new_page()
    _open_same(tab_c, tab_a.url)
    notice = tab_c.locator("#stale-local")
    notice.wait_for(state="visible")
    assert "theta" in notice.inner_text()
    notice.locator("[data-action=restore]").click()
    _wait_stored(task_id, ["alpha cat", "alpha dog", "beta", "delta", "epsilon", "gamma", "zeta", "eta", "theta"])
    # Merged copies are gone: a further tab is not offered them again.
    tab_d = tab_a.context.new_page()
    _open_same(tab_d, tab_a.url)
    # The offer waits for open tabs to answer first (a timer). A second look started now ends after the page's own
    # (same delay, started later), by when the page has decided: a sleep would guess on a busy machine.
    tab_d.evaluate("() => window.annotationPage.sync.findOrphans()")
    assert tab_d.locator("#stale-local").is_hidden()


def test_a_tab_closed_before_its_autosave_sends_the_last_edit_on_the_way_out(page_for, live_server, annotator):
    tab = page_for(annotator)
    _open_next_clip(tab, live_server)
    task_id = _task_id(tab)
    _add(tab, "alpha")
    _state_is(tab, "saved")
    # The edit is made and its autosave cancelled in one step, so only the keepalive save on pagehide can send it.
    tab.evaluate(
        "() => { window.annotationPage.editor.addEvent('beta'); clearTimeout(window.annotationPage.sync.timer); }"
    )
    assert _stored_labels(task_id) == ["alpha"]
    tab.close()
    _wait_stored(task_id, ["alpha", "beta"])


def test_two_devices_offline_edits_merge_and_a_conflict_on_a_phone(page_for, live_server, annotator, artifacts):
    laptop = page_for(annotator)
    _open_next_clip(laptop, live_server)
    task_id = _task_id(laptop)
    _add(laptop, "one")
    _state_is(laptop, "saved")
    phone = page_for(annotator)  # a second browser context: its own localStorage, like another device
    phone.set_viewport_size({"width": 390, "height": 844})
    _open_same(phone, laptop.url)

    # The phone goes offline and keeps editing; the laptop saves meanwhile.
    phone.context.set_offline(True)
    _add(phone, "two")
    _rename(phone, "one", "one loud")
    _state_is(phone, "offline")
    _add(laptop, "three")
    _rename(laptop, "one", "one quiet")
    _state_is(laptop, "saved")
    phone.context.set_offline(False)  # "online": the phone resends, is refused, merges: one conflict left
    _state_is(phone, "conflict")
    item = phone.locator("#conflict-banner .merge-conflict")
    assert item.count() == 1
    phone.locator("#conflict-banner").scroll_into_view_if_needed()
    phone.screenshot(path=str(artifacts / "annotation_merge_conflict_390.png"))
    # The two versions stack on a phone (one above the other) instead of overflowing it.
    mine_box = item.locator("[data-side=mine]").bounding_box()
    theirs_box = item.locator("[data-side=theirs]").bounding_box()
    assert theirs_box["y"] >= mine_box["y"] + mine_box["height"] and mine_box["x"] + mine_box["width"] <= 390
    assert "drops" in item.locator("button[data-choice=theirs]").inner_text()
    item.locator("button[data-choice=theirs]").click()
    phone.locator("[data-action=apply-merge]").click()
    _state_is(phone, "saved")
    assert sorted(_stored_labels(task_id)) == ["one quiet", "three", "two"]

    # The laptop edits offline and its tab is closed; a new tab later merges that copy with the phone's newer work.
    laptop.context.set_offline(True)
    _add(laptop, "four")
    _state_is(laptop, "offline")
    laptop_context = laptop.context
    close_while_offline(laptop)
    laptop_context.set_offline(False)
    _add(phone, "five")
    _state_is(phone, "saved")
    again = laptop_context.new_page()
    _open_same(again, phone.url)
    notice = again.locator("#stale-local")
    notice.wait_for(state="visible")
    assert "four" in notice.inner_text()
    notice.locator("[data-action=restore]").click()
    _wait_stored(task_id, ["five", "four", "one quiet", "three", "two"])

    # Submitted from the phone, which has not seen "four" yet: the submit is refused (409), the phone saves,
    # merging "four" in, and says so; submitted again, the annotation holds every event typed on either device.
    _state_is(again, "saved")
    phone.locator("#submit-button").click()
    phone.wait_for_function("() => /merged here/.test(document.getElementById('editor-message').textContent)")
    _state_is(phone, "saved")
    assert sorted(_labels_on_page(phone)) == ["five", "four", "one quiet", "three", "two"]
    phone.locator("#submit-button").click()
    phone.wait_for_selector("#submit-dialog[open]")
    assert phone.locator("#submit-dialog .check.is-error").count() == 0
    phone.locator("#submit-dialog [data-action=confirm-submit]").click()
    phone.wait_for_url("**/annotate/?done=*")
    task = AnnotationTask.objects.get(pk=task_id)
    assert sorted(event.label for event in task.annotation.events.all()) == [
        "five",
        "four",
        "one quiet",
        "three",
        "two",
    ]


MERGE_JS = Path(__file__).resolve().parents[2] / "static" / "annotation" / "js" / "draft_merge.js"


def _event(id_, label, sources=(), attributes=(), spans=()):
    return {"id": id_, "label": label, "sources": list(sources), "attributes": list(attributes), "spans": list(spans)}


def test_the_merge_rules_on_hand_made_cases(browser):
    """The rules of draft_merge.js, each case with its expected result written out by hand."""
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(MERGE_JS))
    run = (
        "([base, mine, theirs, choices]) => { const r = DraftMerge.merge(base, mine, theirs);"
        " const out = {keys: r.conflicts.map((c) => c.key)};"
        " if (choices) Object.assign(out, DraftMerge.resolve(r, choices)); else if (!r.conflicts.length)"
        " Object.assign(out, {draft: r.draft, dropped: r.dropped}); return out; }"
    )
    a, b = _event("e1", "rain", ["rain"], ["loud"]), _event("e2", "thunder")
    base = {"events": [a, b], "relations": [{"first": "e1", "second": "e2", "kind": "before"}], "note": "n"}

    # Deleted here, edited there: a conflict; deleting drops the relation too, and says so.
    mine = {**base, "events": [a], "relations": []}
    theirs = {**base, "events": [a, {**b, "label": "thunder clap"}]}
    result = page.evaluate(run, [base, mine, theirs, {"event:e2": "mine"}])
    assert result["keys"] == ["event:e2"]
    assert result["draft"]["events"] == [a] and result["draft"]["relations"] == []
    kept = page.evaluate(run, [base, mine, theirs, {"event:e2": "theirs"}])
    assert kept["draft"]["events"][1]["label"] == "thunder clap"
    # The relation was removed here (with its event) and untouched there: it stays removed, nothing dangles.
    assert kept["draft"]["relations"] == []

    # A relation added here to an event deleted there: no conflict, the relation is dropped and reported.
    mine = {**base, "relations": [], "events": [a, b, _event("e3", "wind")]}
    mine["relations"] = [
        {"first": "e1", "second": "e2", "kind": "before"},
        {"first": "e3", "second": "e2", "kind": "after"},
    ]
    theirs = {**base, "events": [a], "relations": []}
    result = page.evaluate(run, [base, mine, theirs, None])
    assert result["keys"] == []
    assert [e["label"] for e in result["draft"]["events"]] == ["rain", "wind"]
    assert result["draft"]["relations"] == []
    assert result["dropped"] == [{"first": "e3", "second": "e2", "kind": "after"}]

    # The same pair related differently on both sides, and both notes changed: choices per item.
    mine = {**base, "relations": [{"first": "e1", "second": "e2", "kind": "simultaneous"}], "note": "mine"}
    theirs = {**base, "relations": [{"first": "e2", "second": "e1", "kind": "before"}], "note": "theirs"}
    key = "relation:e1\u0000e2"
    result = page.evaluate(run, [base, mine, theirs, {key: "theirs", "note": "both"}])
    assert result["keys"] == [key, "note"]
    assert result["draft"]["relations"] == [{"first": "e2", "second": "e1", "kind": "before"}]
    assert result["draft"]["note"] == "theirs\nmine"

    # The same edit on both sides is no conflict; different edits of one event are.
    same_edit = {**base, "events": [{**a, "attributes": ["loud", "steady"]}, b]}
    assert page.evaluate(run, [base, same_edit, same_edit, None])["draft"]["events"][0]["attributes"] == [
        "loud",
        "steady",
    ]
    mine = {**base, "events": [{**a, "attributes": [], "sources": ["rain", "roof"]}, b]}
    theirs = {**base, "events": [{**a, "label": "drizzle"}, b]}
    words = page.evaluate(
        "([base, mine, theirs]) => { const c = DraftMerge.merge(base, mine, theirs).conflicts[0];"
        " return [DraftMerge.lostEvent(c.mine, c.theirs, c.base), DraftMerge.lostEvent(c.theirs, c.mine, c.base)]; }",
        [base, mine, theirs],
    )
    # Keeping this side loses the other's new name and the attribute it still has; keeping the other loses this
    # side's name, its new source and its removal of an attribute.
    assert words == ["name 'drizzle', attribute 'loud'", "name 'rain', source 'roof', its removal of 'loud'"]
    page.close()
