"""The annotation workspace in headless Chromium: three annotators label one clip with the keyboard only
(reload, a lost connection and a stale second tab lose nothing; a contradiction is refused), a reviewer
merges their work into the gold annotation, the export carries it and the clip's X-ACE scores change."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import AnnotationTask, ExpertAnnotation
from annotation.services.annotation_campaigns import annotation_campaign_create
from annotation.services.audiocaps_f import audiocaps_f_import
from annotation.services.audiocaps_f_exporting import audiocaps_f_export
from metrics_bridge.models import MetricScore
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import execute_metric_run
from tests.ratings.campaign_data import clip_audio_attach, corpus_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Each annotator's keyboard session: events (label, sources, attributes typed with Enter, free attributes
# with Shift+Enter) and a relation made with x / b between the first two events.
SESSIONS = {
    "ann-a": [("barking", ["terrier"], ["loud"], ["yappy"]), ("door slam", ["door"], ["suddenly"], [])],
    "ann-b": [("barking", ["dog"], ["repeatedly"], []), ("door slamming", ["wooden door"], ["loud"], ["thuddy"])],
    "ann-c": [("bark", ["dog"], ["sharp"], ["growly"]), ("slam", ["door"], ["suddenly"], [])],
}


@pytest.fixture
def workspace(make_user, media_root):
    dataset, clips, _systems = corpus_build(
        name="acf-browser", clip_count=1, reference_count=2, system_names=("sys_x",)
    )
    clip = clip_audio_attach(clips[0], seconds=3.0)
    clip.captions.filter(role="candidate").update(text="a man speaks while rain falls")
    clip.captions.filter(role="reference").update(text="rain falls and a man talks")
    # The clip already has a gold annotation (imported, as AudioCaps-F's experts made it).
    audiocaps_f_import(
        data={
            f"Y{clip.external_id}.wav": {
                "talking": {"source": ["man"], "attr": ["loud"]},
                "falling": {"source": ["rain"], "attr": ["steady"]},
            }
        },
        dataset_name=dataset.name,
        source_name="gold.json",
    )
    clip.refresh_from_db()
    annotators = [make_user(name, "annotator") for name in SESSIONS]
    reviewer = make_user("rev", "reviewer")
    campaign = annotation_campaign_create(
        name="browser-acf", dataset=dataset, clips=[clip], annotators=annotators, reviewers=[reviewer], seed=3
    )
    return dataset, clip, campaign, annotators, reviewer


def _saved(page):
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'", timeout=90_000)


def _open_next_clip(page, live_server):
    page.goto(f"{live_server.url}/annotate/")
    page.focus("form[action*='/next/'] button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#annotation-page[data-ready=true]")


def _type_event(page, label, sources, attributes, free_attributes):
    keyboard = page.keyboard
    keyboard.type(label)
    keyboard.press("Enter")  # -> sources
    for source in sources:
        keyboard.type(source)
        keyboard.press("Shift+Enter")  # exactly as typed (Enter would take a dataset word it starts)
    keyboard.press("Enter")  # empty -> attributes
    for attribute in attributes:
        keyboard.type(attribute)
        keyboard.press("Tab")  # take the library tag it starts and stay for the next (Enter keeps what was typed)
    for attribute in free_attributes:
        keyboard.type(attribute)
        keyboard.press("Shift+Enter")
    keyboard.press("Enter")  # empty -> new event


def _annotate_with_keyboard(page, events):
    page.keyboard.press("n")
    for event in events:
        _type_event(page, *event)
    page.keyboard.press("Escape")  # new-event field -> last card
    for _ in events[1:]:
        page.keyboard.press("k")  # up to the first card
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("b")  # first before second


def _words(locator) -> str:
    return " ".join(locator.inner_text().split())


def _draft(task_id) -> dict:
    return AnnotationTask.objects.get(pk=task_id).draft


def _task_id(page) -> int:
    return json.loads(page.locator("#task-data").text_content())["id"]


def _submit_confirming_warnings(page):
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#submit-dialog[open]")
    assert page.locator("#submit-dialog .check.is-error").count() == 0
    page.keyboard.press("Enter")  # focus is on "Submit anyway"
    page.wait_for_url("**/annotate/?done=*")


def test_three_annotators_a_reviewer_gold_export_and_xace(page_for, live_server, workspace, artifacts):
    dataset, clip, campaign, (ann_a, ann_b, ann_c), reviewer = workspace
    before = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"]))
    assert before.status == "done"
    candidate_score_before = MetricScore.objects.get(metric="XACE", caption__clip=clip, caption__role="candidate").value

    # --- ann-a: two events, sources, a library and a free attribute, a relation: keyboard only.
    page = page_for(ann_a)
    page.set_viewport_size({"width": 1280, "height": 800})
    _open_next_clip(page, live_server)
    task_id = _task_id(page)
    _annotate_with_keyboard(page, SESSIONS["ann-a"])
    _saved(page)
    assert _words(page.locator("#relations-panel .relations-stated li").first).startswith(
        "'barking' before 'door slam'"
    )
    assert page.locator(".chip.is-free").filter(has_text="yappy").count() == 1  # flagged as free text
    assert page.locator(".chip:not(.is-free)").filter(has_text="loud").count() == 1
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "annotation_editor.png"))

    # Reload mid-way: the draft is there.
    page.reload()
    page.wait_for_selector("#annotation-page[data-ready=true]")
    assert page.locator(".event-card").count() == 2
    assert page.locator("#relations-panel .relations-stated li").count() == 1

    # The connection drops: the edit is kept in the browser, shown as offline, and sent after a reload.
    page.route("**/draft/", lambda route: route.abort() if route.request.method == "PUT" else route.continue_())
    page.locator(".event-card").nth(1).locator(".chip-input[data-kind=attributes]").focus()
    page.keyboard.type("in the distance")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'offline'")
    assert "in the distance" not in json.dumps(_draft(task_id))
    page.unroute("**/draft/")
    page.reload()
    page.wait_for_selector("#annotation-page[data-ready=true]")
    _saved(page)
    assert "in the distance" in _draft(task_id)["events"][1]["attributes"]

    # A second tab's stale save is refused with a message; the newer draft stays.
    second = page.context.new_page()
    second.goto(page.url)
    second.wait_for_selector("#annotation-page[data-ready=true]")
    page.locator(".event-card").nth(0).locator(".chip-input[data-kind=sources]").focus()
    page.keyboard.type("pupperino")
    page.keyboard.press("Shift+Enter")
    _saved(page)
    second.locator(".event-card").nth(0).locator(".event-label").fill("howling")
    second.wait_for_function("() => document.getElementById('save-status').dataset.state === 'conflict'")
    assert second.locator("#conflict-banner").is_visible()
    assert "another tab" in second.locator("#conflict-banner").inner_text()
    assert _draft(task_id)["events"][0]["label"] == "barking"
    assert "pupperino" in _draft(task_id)["events"][0]["sources"]
    second.close()

    # A contradiction (door slam before barking, against barking before door slam) is refused.
    page.locator(".event-card").nth(1).focus()
    page.keyboard.press("x")
    page.keyboard.press("k")
    page.keyboard.press("b")
    assert "Refused" in page.locator("#editor-message").inner_text()
    assert "contradicts" in page.locator("#editor-message").inner_text()
    assert page.locator("#relations-panel .relations-stated li").count() == 1

    # Delete on a card removes the event and its relation; Ctrl+Z brings both back.
    page.locator(".event-card").nth(1).focus()
    page.keyboard.press("Delete")
    assert page.locator(".event-card").count() == 1
    assert page.locator("#relations-panel .relations-stated li.relation").count() == 0
    page.keyboard.press("Control+z")
    assert [card.locator(".event-label").input_value() for card in page.locator(".event-card").all()] == [
        "barking",
        "door slam",
    ]
    assert page.locator("#relations-panel .relations-stated li.relation").count() == 1

    # Player: a waveform selection becomes a time span of the event (r); speed and loop from the keyboard;
    # the spectrogram image came from the server; Alt+Down / Alt+Up reorder events.
    assert page.evaluate("() => document.querySelector('.clip-player-spectrogram') !== null")
    page.wait_for_function("() => window.annotationPage.player.spectrogram.isLoaded", timeout=60_000)
    page.evaluate("() => window.annotationPage.player.setSelection(0.5, 1.75)")
    page.locator(".event-card").nth(1).focus()
    page.keyboard.press("r")
    for key in ("]", "]", "l"):
        page.keyboard.press(key)
    speed_and_loop = "() => [document.querySelector('#player audio').playbackRate, window.annotationPage.player.loop]"
    assert page.evaluate(speed_and_loop) == [1.5, True]
    page.keyboard.press("Alt+ArrowUp")
    labels = [card.locator(".event-label").input_value() for card in page.locator(".event-card").all()]
    assert labels == ["door slam", "barking"]
    page.keyboard.press("Alt+ArrowDown")
    _saved(page)
    second_event = _draft(task_id)["events"][1]
    assert (second_event["label"], second_event["spans"]) == ("door slam", [[0.5, 1.75]])

    _submit_confirming_warnings(page)
    assert AnnotationTask.objects.get(pk=task_id).status == "submitted"

    # --- ann-b and ann-c, each blind to the others' work on this clip.
    for user in (ann_b, ann_c):
        other = page_for(user)
        _open_next_clip(other, live_server)
        html = other.content()
        for word in ("terrier", "yappy", "pupperino"):
            assert word not in html  # ann-a's words appear nowhere on their page, suggestions included
        _annotate_with_keyboard(other, SESSIONS[user.username])
        _saved(other)
        _submit_confirming_warnings(other)
    assert AnnotationTask.objects.filter(campaign=campaign, status="submitted").count() == 3

    # --- The reviewer merges them into the gold annotation.
    review = page_for(reviewer)
    review.set_viewport_size({"width": 1280, "height": 800})
    review.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/clips/{clip.pk}/", wait_until="domcontentloaded")
    review.wait_for_selector("#review-page[data-ready=true]")
    review.wait_for_selector(".agreement-factors", timeout=60_000)
    assert review.locator(".submission").count() == 3
    assert review.locator("table.matching tbody tr").first.inner_text().count("bark") >= 2  # matched across annotators
    review.locator(".submission[data-annotator='ann-a'] >> text=Start gold from this").click()
    review.locator(".submission[data-annotator='ann-b'] .event-card").nth(0).locator(".add-to-gold").click()
    _saved(review)
    review.evaluate("window.scrollTo(0, 0)")
    review.screenshot(path=str(artifacts / "annotation_review.png"))
    review.screenshot(path=str(artifacts / "annotation_review_full.png"), full_page=True)
    review.locator("#publish-button").click()
    review.wait_for_selector("#submit-dialog[open]")
    review.locator("#submit-dialog [data-action=confirm-submit]").click()
    review.wait_for_function("() => document.getElementById('gold-state').textContent === 'Gold published'")

    gold = ExpertAnnotation.objects.get(clip=clip, status="gold")
    assert gold.annotator == reviewer and gold.campaign == campaign
    assert gold.merged_from.count() == 3
    assert ExpertAnnotation.objects.filter(clip=clip, status="superseded").count() == 1  # the imported one
    exported = audiocaps_f_export(dataset_name=dataset.name)[clip.external_id]  # "clip1.wav", the key it came in with
    assert list(exported) == ["barking", "door slam"]
    assert exported["barking"]["source"] == ["terrier", "pupperino", "dog"]  # ann-b's dog merged in
    assert exported["barking"]["relations"] == {"door slam": "before"}

    # The review overview shows the campaign's agreement per factor and per annotator, as the command prints it.
    review.goto(f"{live_server.url}/review/")
    review.wait_for_selector(".agreement-summary")
    review.screenshot(path=str(artifacts / "annotation_review_overview.png"))
    out = StringIO()
    options = ["--dataset", dataset.name, "--campaign", campaign.name, "--format", "json"]
    call_command("annotation_agreement", *options, stdout=out)
    printed = json.loads(out.getvalue())
    first_row = [cell.inner_text() for cell in review.locator(".agreement-summary tbody tr").first.locator("td").all()]
    assert first_row[1:3] == ["1", "3"]
    assert first_row[3:] == [f"{printed['factors'][f]:.3f}" for f in ("event", "source", "attribute", "relation")]
    assert review.locator(".agreement-summary tbody tr").count() == 4  # all, then ann-a, ann-b, ann-c

    # --- X-ACE: the clip's candidate is scored again, against the new gold, and its value changes.
    after = metric_run_create(dataset=dataset, metric_names=["XACE"])
    assert after.chunks_total == 1
    execute_metric_run(run=after)
    candidate_score_after = MetricScore.objects.get(
        metric="XACE", caption__clip=clip, caption__role="candidate", run=after
    ).value
    assert abs(candidate_score_after - candidate_score_before) > 0.05


def test_admin_creates_a_campaign_on_the_staff_page_and_sees_a_skip_with_its_reason(
    page_for, live_server, make_user, media_root, artifacts
):
    dataset, clips, _systems = corpus_build(name="acf-staff", clip_count=2, reference_count=1, system_names=("s",))
    for clip in clips:
        clip_audio_attach(clip, seconds=1.0)
    for name in ("ann-p", "ann-q"):
        make_user(name, "annotator")
    admin = page_for(make_user("boss", staff=True))
    admin.set_viewport_size({"width": 1280, "height": 800})
    admin.goto(f"{live_server.url}/annotate/staff/campaigns/")
    admin.fill("#id_name", "staff-made")
    admin.select_option("#id_dataset", label=dataset.name)
    admin.fill("#id_annotations_per_clip", "1")
    admin.check("input[name=annotators] >> nth=0")  # ann-p only: the form refuses 1 per clip with nobody
    admin.click("button.primary")
    admin.wait_for_url("**/annotate/staff/campaigns/*/")
    campaign_url = admin.url
    assert "created with 2 clips" in admin.content()

    # The annotator skips the first clip from the editor with a reason and a comment; the next one opens.
    annotator = page_for(_user("ann-p"))
    _open_next_clip(annotator, live_server)
    skipped_task = _task_id(annotator)
    annotator.click("#skip-button")
    annotator.check("#skip-dialog input[value=bad_audio]")
    annotator.fill("#skip-dialog textarea[name=comment]", "clipped and distorted from 2 s")
    annotator.click("#skip-dialog button[type=submit]")
    annotator.wait_for_function(
        "(skipped) => document.getElementById('annotation-page')?.dataset.ready === 'true'"
        " && JSON.parse(document.getElementById('task-data').textContent).id !== skipped",
        arg=skipped_task,
    )
    assert AnnotationTask.objects.get(pk=skipped_task).status == "skipped"

    admin.goto(campaign_url)
    skip_row = " ".join(admin.locator("table.skips tbody tr").first.inner_text().split())
    assert "ann-p" in skip_row and "Bad or broken audio" in skip_row and "clipped and distorted from 2 s" in skip_row
    admin.screenshot(path=str(artifacts / "annotation_staff_campaign.png"), full_page=True)
    admin.goto(f"{live_server.url}/annotate/staff/campaigns/")
    assert " ".join(admin.locator("tbody tr").first.inner_text().split()).startswith("staff-made acf-staff 2 1 1 0 1")
    admin.screenshot(path=str(artifacts / "annotation_staff_campaigns.png"))


def _user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)
