"""Crowd studies in headless Chromium: the whole Prolific path, the MTurk path (top level and inside MTurk's
frame), resumption in a second browser, and the admin's study page; screenshots at 1280 and 390 px.

The platforms are not on the network here: their completion URL and externalSubmit endpoint are answered by
Playwright routes, which record what the study sent them.
"""

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from ratings.models import AssignmentItem, HeadphoneCheck, PairwiseVote
from ratings.models_study import Participant, Study
from ratings.services.campaigns import campaign_setup
from ratings.services.studies import study_publish
from tests.browser.loopback_site import loopback_site
from tests.browser.timeouts import waits_generous
from tests.ratings.campaign_data import clip_audio_attach, corpus_build
from tests.ratings.study_data import QUESTIONNAIRE, mturk_worker_id, prolific_id, study_media  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]

CLIP_SECONDS = 1.0
WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
MTURK_SUBMIT = "https://workersandbox.mturk.com"


@pytest.fixture
def study_settings(settings, media_root):
    settings.STUDY_END_REDIRECT_SECONDS = 1
    return settings


@pytest.fixture
def mturk_worker_site(settings):
    """MTurk's worker site (a stand-in): a page on 127.0.0.1 that shows a given URL in a frame, as MTurk shows an
    ExternalQuestion. Another site than the live server's (localhost), so the frame is cross-site as on MTurk;
    a real server, not a Playwright route, because Chromium refuses loopback frames inside routed "public" pages."""
    frames = {}

    def page_html():
        return f'<h1>MTurk (stand-in)</h1><iframe id="hit" src="{frames["src"]}" width="100%" height="700"></iframe>'

    with loopback_site(page_html) as origin:
        settings.MTURK_FRAME_ANCESTORS = [origin]
        yield origin, frames


def _pairwise_study(name: str, **settings) -> Study:
    dataset, clips, _ = corpus_build(name=f"{name}-data", clip_count=5)
    for clip in clips:
        clip_audio_attach(clip, seconds=CLIP_SECONDS)
    campaign = campaign_setup(
        name=name,
        dataset=dataset,
        task_type="pairwise",
        judgements_per_item=2,
        split_counts={"HC": 5, "HI": 3},
        gold_from_hi=True,
        title="Which description fits the sound?",
    )
    defaults = {
        "description": "Listen to short everyday sounds and pick the description that fits each one better.",
        "consent_text": "We study how people describe sounds.\n\nYour answers are kept under a random number.",
        "items_per_participant": 3,
        "attention_checks": 2,
        "estimated_minutes": 10,
        "reward": 1.5,
        "exclude_same_answer": False,
    }
    return study_publish(campaign=campaign, **{**defaults, **settings})


def _shots(page, artifacts, name: str) -> None:
    """Screenshots of the current page at both widths (then back to 1280)."""
    for width, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        page.screenshot(path=str(artifacts / f"study_{name}_{width}.png"), full_page=True)
    page.set_viewport_size(WIDTHS["1280"])


def _new_page(browser, *, width: str = "1280"):
    context = browser.new_context(viewport=WIDTHS[width])
    waits_generous(context)
    page = context.new_page()
    return context, page


def _gold_side_key(item: AssignmentItem) -> str:
    """What a listener who heard the clip presses on a gold pair: the side of the clip's own caption."""
    on_left = (item.pair.gold_choice == "a") == item.a_on_left
    return "a" if on_left else "b"


def _rate_current_item(page, *, key: str | None = None) -> None:
    """Play the clip with the space bar, wait for the server to accept the listening, choose, press Enter."""
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    item = AssignmentItem.objects.select_related("pair").get(token=token)
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.keyboard.press(" ")
    page.wait_for_function("() => !document.getElementById('submit-button').disabled")
    page.keyboard.press(key or (_gold_side_key(item) if item.pair.gold_choice else "a"))
    with page.expect_navigation():
        page.keyboard.press("Enter")


def _headphone_screen(page, participant: Participant) -> None:
    """Play each trial once (each start stops the one before), then answer what the server knows is right."""
    page.click("#calibration-button")
    for number in range(1, 7):
        page.click(f".trial[data-number='{number}'] .trial-play")
        page.wait_for_function(
            f"() => document.querySelector(\".trial[data-number='{number}'] .trial-play\").textContent !== "
            "'▶ Play the three sounds'"
        )
    page.wait_for_function("() => document.querySelectorAll('.trial input:enabled').length === 18")
    check = HeadphoneCheck.objects.get(rater=participant.user, completed_at__isnull=True)
    for number, trial in enumerate(check.trials, start=1):
        page.check(f"input[name='trial_{number}'][value='{trial['quietest'] + 1}']")
    with page.expect_navigation():
        page.click("#headphone-submit")


def _practice_and_start(page) -> None:
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.keyboard.press(" ")
    page.wait_for_function("() => !document.getElementById('practice-submit').disabled")
    # The practice captions come in the participant's own order: answer for wherever the beeps' caption is.
    right_first = "beeps" in page.inner_text(".practice .caption-text >> nth=0")
    page.keyboard.press("a" if right_first else "b")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    right = "A" if right_first else "B"
    assert f"Right: caption {right} describes the three beeps" in page.inner_text(".practice-feedback")
    assert page.evaluate("() => document.activeElement.id") == "start-button"


def _walk_study_window(window) -> None:
    """From the consent page of a study window to its end page: consent, questionnaire, practice, every item."""
    with window.expect_navigation():
        window.keyboard.press("Enter")
    with window.expect_navigation():
        window.keyboard.press("Enter")
    _practice_and_start(window)
    with window.expect_navigation():
        window.keyboard.press("Enter")
    while "/ratings/items/" in window.url:
        _rate_current_item(window)


def test_the_whole_prolific_path_with_resumption_in_a_second_browser(browser, live_server, study_settings, artifacts):
    study = _pairwise_study("crowd-prolific", questionnaire=QUESTIONNAIRE, screens="antiphase")
    pid = prolific_id()
    arrival = f"{live_server.url}/study/{study.slug}/?" + urlencode(
        {"PROLIFIC_PID": pid, "STUDY_ID": "c" * 24, "SESSION_ID": "d" * 24}
    )
    context, page = _new_page(browser)
    landed = []
    context.route(
        "https://app.prolific.com/**",
        lambda route: (landed.append(route.request.url), route.fulfill(status=200, body="<h1>Prolific</h1>")),
    )
    page.goto(arrival)
    assert page.url == f"{live_server.url}/study/{study.slug}/", "the id left the address bar"
    assert "Which description fits the sound?" in page.inner_text("h1") and "1.50 GBP" in page.content()
    assert pid not in page.content()
    _shots(page, artifacts, "landing")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/consent/")
    _shots(page, artifacts, "consent")
    with page.expect_navigation():
        page.keyboard.press("Enter")  # "I agree" has the focus
    assert page.url.endswith("/questionnaire/")
    page.keyboard.press("Tab")  # from the first question, which has the focus, nothing is chosen yet
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "Please answer: Your age" in page.inner_text(".error-summary")
    page.select_option("#q-age_band", "25-34")
    page.fill("#q-device", "studio headphones")
    _shots(page, artifacts, "questionnaire")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url.endswith("/headphones/")
    participant = Participant.objects.get(platform_id=pid)
    _headphone_screen(page, participant)
    assert page.url.endswith("/instructions/")
    _shots(page, artifacts, "instructions")
    _practice_and_start(page)
    _shots(page, artifacts, "practice_feedback")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/ratings/items/" in page.url
    # 3 items and up to 2 gold checks: the gold rule gives a share no gold pair of a clip its items play, and in
    # this small campaign (HC pairs on 3 clips, each carrying a gold) a share may hold one check or none.
    share = AssignmentItem.objects.filter(assignment__rater=participant.user).select_related("pair")
    checks = sum(1 for item in share if item.pair.gold_choice)
    assert 0 <= checks <= 2 and len(share) == 3 + checks
    assert f"Pair 1 of {len(share)}" in page.inner_text("h1")
    assert page.locator("nav").count() == 0 and participant.user.username not in page.content()
    _shots(page, artifacts, "item")
    _rate_current_item(page)
    _rate_current_item(page)

    # A second browser, arriving by the same link, continues at the third item.
    other_context, other = _new_page(browser, width="390")
    other.goto(arrival)
    other.wait_for_url("**/ratings/items/**")
    assert other.url == page.url and f"Pair 3 of {len(share)}" in other.inner_text("h1")
    other.screenshot(path=str(artifacts / "study_resumed_390.png"), full_page=True)
    other_context.close()

    while "/ratings/items/" in page.url:
        _rate_current_item(page)
    assert page.url.endswith("/end/")
    assert page.inner_text("#completion-code") == study.completion_code
    _shots(page, artifacts, "end")
    page.wait_for_url("https://app.prolific.com/**")
    assert parse_qs(urlsplit(landed[0]).query) == {"cc": [study.completion_code]}
    participant.refresh_from_db()
    assert (participant.status, participant.is_excluded) == ("completed", False)
    assert PairwiseVote.objects.filter(rater=participant.user).count() == len(share)
    assert participant.questionnaire_answers == {"age_band": "25-34", "device": "studio headphones"}
    context.close()


def _mturk_capture(context, captured: list):
    def submit(route):
        captured.append(parse_qs(route.request.post_data or ""))
        route.fulfill(status=200, content_type="text/html", body="<h1>HIT submitted</h1>")

    context.route(f"{MTURK_SUBMIT}/**", submit)


def test_the_mturk_path_submits_the_hit_with_the_assignment(browser, live_server, study_settings, artifacts):
    study = _pairwise_study("crowd-mturk", platforms=["mturk"], reward_currency="USD", screens="none", questionnaire=[])
    context, page = _new_page(browser)
    page.goto(f"{live_server.url}/study/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={'H' * 30}")
    assert "Accept the HIT to start" in page.content() and page.locator("#start-form").count() == 0
    _shots(page, artifacts, "mturk_preview")
    assert not Participant.objects.exists()
    captured = []
    _mturk_capture(context, captured)
    worker, assignment = mturk_worker_id(), "A" * 10 + "3" * 20
    page.goto(
        f"{live_server.url}/study/{study.slug}/?"
        + urlencode({"workerId": worker, "assignmentId": assignment, "hitId": "H" * 30, "turkSubmitTo": MTURK_SUBMIT})
    )
    assert page.locator("#mturk-frame").is_hidden(), "at the top level the study runs here"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/instructions/")
    _practice_and_start(page)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    while "/ratings/items/" in page.url:
        _rate_current_item(page)
    assert page.inner_text("#completion-code") == study.completion_code
    _shots(page, artifacts, "mturk_end")
    page.wait_for_url(f"{MTURK_SUBMIT}/mturk/externalSubmit")
    assert captured == [{"assignmentId": [assignment], "completion_code": [study.completion_code]}]
    assert Participant.objects.get(platform_id=worker).status == "completed"
    context.close()


def test_inside_mturks_frame_the_study_opens_in_a_window_and_the_frame_submits(
    browser, live_server, study_settings, mturk_worker_site, artifacts
):
    """MTurk shows the HIT in a frame on its own site, where the study's cookie may be refused: the frame offers
    the study in a window of its own and submits the HIT itself once that window reached the end."""
    study = _pairwise_study("crowd-frame", platforms=["mturk"], reward_currency="USD", screens="none", questionnaire=[])
    assignment = "F" * 30
    src = f"{live_server.url}/study/{study.slug}/?" + urlencode(
        {"workerId": mturk_worker_id(), "assignmentId": assignment, "hitId": "H" * 30, "turkSubmitTo": MTURK_SUBMIT}
    )
    origin, frames = mturk_worker_site
    frames["src"] = src
    context, page = _new_page(browser)
    captured = []
    _mturk_capture(context, captured)
    page.goto(f"{origin}/projects/1/tasks/1")
    frame = page.frame_locator("#hit")
    frame.locator("#mturk-frame").wait_for(state="visible")
    assert frame.locator("#start-form").is_hidden()
    page.screenshot(path=str(artifacts / "study_mturk_framed_1280.png"), full_page=True)
    with context.expect_page() as opened:
        frame.locator("#mturk-frame a.button").click()
    window = opened.value
    window.wait_for_load_state()
    _walk_study_window(window)
    assert "the HIT submits itself there" in window.inner_text("#manual-submit")
    page.wait_for_url(f"{MTURK_SUBMIT}/mturk/externalSubmit")
    assert captured == [{"assignmentId": [assignment], "completion_code": [study.completion_code]}]
    context.close()


def test_the_admin_study_page_shows_the_participants_live(
    browser, live_server, study_settings, page_for, make_user, artifacts
):
    from django.test import Client

    from tests.ratings.study_data import answer_share, prolific_arrive, walk_to_items

    study = _pairwise_study("crowd-admin", screens="none", questionnaire=[], minimum_hourly_pay=999999)
    admin = make_user("organiser", staff=True)
    page = page_for(admin)
    page.set_viewport_size(WIDTHS["1280"])
    page.goto(f"{live_server.url}/ratings/staff/studies/{study.pk}/")
    assert page.inner_text("[data-count=arrivals]") == "0"
    client, _ = prolific_arrive(study, address="10.8.0.1")
    participant = walk_to_items(client, study)
    gold_side = {"a": "left", "b": "right"}
    answer_share(
        client,
        participant,
        side_for=lambda item: (gold_side[_gold_side_key(item)] if item.pair.gold_choice else "left"),
    )
    client.get(f"/study/{study.slug}/items/")
    Client(REMOTE_ADDR="10.8.0.2").get(f"/study/{study.slug}/?PROLIFIC_PID={prolific_id()}")
    page.wait_for_function("() => document.querySelector('[data-count=arrivals]').textContent === '2'")
    assert page.inner_text("[data-count=completed]") == "1"
    assert "below the minimum you set" in page.inner_text(".pay-warning")
    page.click("button[value=preview]")
    assert "/enter/" in page.input_value("#preview-link")
    _shots(page, artifacts, "admin")
    page.goto(f"{live_server.url}/ratings/staff/campaigns/{study.campaign.pk}/publish/")
    assert page.url.endswith(f"/ratings/staff/studies/{study.pk}/"), "a published campaign opens its study"
    page.goto(f"{live_server.url}/ratings/staff/studies/{study.pk}/settings/")
    _shots(page, artifacts, "admin_settings")
