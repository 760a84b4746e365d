"""The THumBS, pairwise and headphone pages in headless Chromium: listening rule, shortcuts, autosave."""

from decimal import Decimal

import pytest

from ratings.models import AssignmentItem, HeadphoneCheck, PairwiseVote, ThumbsRating
from ratings.services.campaigns import campaign_setup
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CLIP_SECONDS = 1.5


def _audio_state(page) -> dict:
    return page.evaluate(
        "() => { const a = document.querySelector('#player audio');"
        " return {paused: a.paused, ended: a.ended, time: a.currentTime, duration: a.duration}; }"
    )


def _checked(page, name: str) -> str | None:
    return page.evaluate(f"() => (document.querySelector('input[name=\"{name}\"]:checked') || {{}}).value || null")


@pytest.fixture
def thumbs_setup(make_user, media_root):
    dataset, clips, systems = corpus_build(clip_count=2)
    for clip in clips:
        clip_audio_attach(clip, seconds=CLIP_SECONDS)
    rater = make_user("browser-rater", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="browser-thumbs",
        dataset=dataset,
        task_type="thumbs",
        systems=systems[:1],
        human_captions_per_clip=1,
        raters=[rater],
    )
    return rater, list(campaign.assignments.get().items.order_by("position"))


def test_thumbs_page_listening_shortcuts_autosave_and_submit(page_for, live_server, thumbs_setup, artifacts):
    rater, (first, second) = thumbs_setup
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{first.token}/")
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    submit = page.locator("#submit-button")
    assert submit.is_disabled()
    page.screenshot(path=str(artifacts / "thumbs_before_listening.png"), full_page=True)

    # Play with a click (a user gesture); while the clip runs, submitting stays locked.
    page.click(".clip-player-toggle")
    page.wait_for_function("() => document.querySelector('#player audio').currentTime > 0.2")
    state = _audio_state(page)
    assert not state["paused"] and state["time"] < CLIP_SECONDS
    assert submit.is_disabled()
    page.screenshot(path=str(artifacts / "thumbs_playing.png"))
    page.wait_for_function("() => !document.getElementById('submit-button').disabled", timeout=90_000)
    assert _audio_state(page)["ended"]
    assert AssignmentItem.objects.get(pk=first.pk).listened_at is not None
    page.screenshot(path=str(artifacts / "thumbs_after_listening.png"))

    # Keyboard: 4, 3 -> precision and recall of caption 1; 5, 2 -> caption 2; y -> synthesized.
    for key in ["4", "3", "5", "2", "y"]:
        page.keyboard.press(key)
    assert [_checked(page, name) for name in ("precision_1", "recall_1", "precision_2", "recall_2", "synthesized")] == [
        "4",
        "3",
        "5",
        "2",
        "yes",
    ]
    # Space plays and pauses (focus is on a score, not in a text field).
    page.keyboard.press(" ")
    page.wait_for_function("() => !document.querySelector('#player audio').paused")
    page.keyboard.press(" ")
    page.wait_for_function("() => document.querySelector('#player audio').paused")

    # A preset button and a comment, then wait for the autosave and reload.
    page.locator(".caption-block[data-number='2'] .penalty").nth(0).locator("button.preset[data-value='-0.5']").click()
    page.fill("textarea[name='comment_1']", "birds, not rain")
    page.wait_for_function("() => document.getElementById('rating-form').dataset.draftState === 'saved'")
    assert page.inner_text(".autosave-status").startswith("Draft saved at")
    draft = AssignmentItem.objects.get(pk=first.pk).draft
    assert draft["precision_1"] == "4" and draft["fluency_2"] == "-0.5" and draft["comment_1"] == "birds, not rain"
    page.reload()
    assert [_checked(page, name) for name in ("precision_1", "recall_1", "precision_2", "recall_2", "synthesized")] == [
        "4",
        "3",
        "5",
        "2",
        "yes",
    ]
    assert page.input_value("input[name='fluency_2']") == "-0.5"
    assert page.input_value("textarea[name='comment_1']") == "birds, not rain"
    assert page.locator("#submit-button").is_enabled(), "the clip was already heard"
    page.screenshot(path=str(artifacts / "thumbs_restored_draft.png"), full_page=True)

    # Ctrl+Enter submits and the next clip opens.
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    assert page.url.endswith(f"/ratings/items/{second.token}/")
    ratings = {rating.caption_id: rating for rating in ThumbsRating.objects.filter(rater=rater)}
    caption_1, caption_2 = first.caption_order
    assert (ratings[caption_1].precision, ratings[caption_1].recall, ratings[caption_1].comment) == (
        4,
        3,
        "birds, not rain",
    )
    assert (ratings[caption_2].precision, ratings[caption_2].recall, ratings[caption_2].fluency) == (
        5,
        2,
        Decimal("-0.5"),
    )
    assert ratings[caption_1].synthesized == "yes"
    assert "Clip 2 of 2" in page.content()
    page.screenshot(path=str(artifacts / "thumbs_second_clip.png"), full_page=True)


def test_skipping_to_the_end_does_not_unlock_submit(page_for, live_server, make_user, media_root):
    dataset, clips, systems = corpus_build(clip_count=1)
    clip_audio_attach(clips[0], seconds=3.0)
    rater = make_user("skipper", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(name="skip", dataset=dataset, task_type="thumbs", systems=systems[:1], raters=[rater])
    item = campaign.assignments.get().items.get()
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{item.token}/")
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.click(".clip-player-toggle")
    page.wait_for_function("() => document.querySelector('#player audio').currentTime > 0.1")
    box = page.locator(".clip-player-waveform").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.97, box["y"] + box["height"] / 2)  # seek to the end
    page.wait_for_function("() => document.querySelector('#player audio').ended")
    # The player answers the end in its "ended" handler, which may run after the audio says it ended.
    page.locator(".clip-player-status", has_text="whole clip").wait_for()
    assert page.locator("#submit-button").is_disabled()
    assert AssignmentItem.objects.get(pk=item.pk).listened_at is None


def test_pairwise_page_keys_and_listening(page_for, live_server, make_user, media_root, artifacts):
    dataset, clips, _ = corpus_build(clip_count=2)
    for clip in clips:
        clip_audio_attach(clip, seconds=CLIP_SECONDS)
    rater = make_user("browser-voter", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="browser-pairs", dataset=dataset, task_type="pairwise", split_counts={"HC": 2}, raters=[rater]
    )
    first, second = campaign.assignments.get().items.order_by("position")
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{first.token}/")
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.keyboard.press("b")
    assert _checked(page, "side") == "right"
    page.keyboard.press("Enter")  # locked: nothing happens
    assert page.url.endswith(f"/ratings/items/{first.token}/") and page.locator("#submit-button").is_disabled()
    page.screenshot(path=str(artifacts / "pairwise_before_listening.png"), full_page=True)
    page.keyboard.press(" ")  # a key press is a user gesture too
    page.wait_for_function("() => !document.getElementById('submit-button').disabled", timeout=90_000)
    page.keyboard.press("ArrowDown")
    assert _checked(page, "side") == "none"
    page.keyboard.press("ArrowLeft")
    assert _checked(page, "side") == "left"
    page.wait_for_function("() => document.getElementById('rating-form').dataset.draftState === 'saved'")
    assert AssignmentItem.objects.get(pk=first.pk).draft == {"side": "left"}
    page.screenshot(path=str(artifacts / "pairwise_after_listening.png"), full_page=True)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(f"/ratings/items/{second.token}/")
    vote = PairwiseVote.objects.get(rater=rater)
    assert vote.choice == ("a" if first.a_on_left else "b")
    assert vote.left_side == ("a" if first.a_on_left else "b")


def _trial_labels(page) -> list[str]:
    return page.eval_on_selector_all(".trial-play", "buttons => buttons.map((button) => button.textContent.trim())")


def test_headphone_check_plays_each_trial_once_and_no_button_sticks(page_for, live_server, make_user, artifacts):
    rater = make_user("browser-ears", "rater")
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/")
    page.click("text=Start the headphone check")
    check = HeadphoneCheck.objects.get(rater=rater)
    assert page.locator("#headphone-submit").is_disabled()
    assert page.locator(".trial input:enabled").count() == 0, "answers unlock only after the sounds played"
    page.click("#calibration-button")
    page.wait_for_function("() => !document.getElementById('calibration-audio').paused")
    # Starting trial 1 stops the calibration sound; starting trial 2 while 1 plays stops 1: both end "Played".
    page.click(".trial[data-number='1'] .trial-play")
    page.wait_for_function(
        "() => document.querySelector(\".trial[data-number='1'] .trial-play\").textContent === 'Playing…'"
    )
    assert page.evaluate("() => document.getElementById('calibration-audio').paused")
    page.screenshot(path=str(artifacts / "headphone_trial_playing.png"), full_page=True)
    page.click(".trial[data-number='2'] .trial-play")
    page.wait_for_function(
        "() => document.querySelector(\".trial[data-number='2'] .trial-play\").textContent === 'Playing…'"
    )
    assert _trial_labels(page)[:2] == ["Played", "Playing…"]
    assert "another sound started" in page.inner_text(".trial[data-number='1'] .trial-status")
    # Trial 2 plays to its end (three 1 s tones with gaps: 5 s).
    page.wait_for_function(
        "() => document.querySelector(\".trial[data-number='2'] .trial-play\").textContent === 'Played'", timeout=90_000
    )
    for number in range(3, 7):  # started one after the other: each stops the one before
        page.click(f".trial[data-number='{number}'] .trial-play")
        page.wait_for_function(
            f"() => document.querySelector(\".trial[data-number='{number}'] .trial-play\").textContent === 'Playing…'"
        )
    page.click(".trial[data-number='1'] .trial-status")  # a click elsewhere changes nothing
    check.refresh_from_db()
    assert all(trial["fetched_at"] for trial in check.trials), "the server counted every trial as played"
    # A reload does not give the sounds again: every trial shows as played, its answers open.
    page.reload()
    assert _trial_labels(page) == ["Played"] * 6
    assert page.locator(".trial-play:enabled").count() == 0 and page.locator(".trial input:enabled").count() == 18
    for number, trial in enumerate(check.trials, start=1):
        page.check(f"input[name='trial_{number}'][value='{trial['quietest'] + 1}']")
    page.screenshot(path=str(artifacts / "headphone_check_answered.png"), full_page=True)
    with page.expect_navigation():
        page.click("#headphone-submit")
    check.refresh_from_db()
    assert check.passed and check.correct_count == 6
    assert "Headphone check passed (6 of 6)" in page.content()
    page.screenshot(path=str(artifacts / "rater_home_after_check.png"), full_page=True)


def test_must_listen_seconds_unlocks_before_the_end(page_for, live_server, make_user, media_root, settings):
    settings.MUST_LISTEN_SECONDS = 1
    dataset, clips, systems = corpus_build(clip_count=1)
    clip_audio_attach(clips[0], seconds=4.0)
    rater = make_user("hurried", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="short-listen", dataset=dataset, task_type="thumbs", systems=systems[:1], raters=[rater]
    )
    item = campaign.assignments.get().items.get()
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{item.token}/")
    assert "(or 1 s of it)" in page.inner_text(".listen-hint")
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.click(".clip-player-toggle")
    page.wait_for_function("() => !document.getElementById('submit-button').disabled", timeout=90_000)
    state = _audio_state(page)
    assert not state["ended"] and 0.7 < state["time"] < 3.5
    assert AssignmentItem.objects.get(pk=item.pk).listened_at is not None
