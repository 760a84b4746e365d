"""Helpers of the whole crowd run (tests/browser/test_crowd_run.py): MTurk's requester API on loopback, and
participants walking a study in a real browser or over HTTP.

The fake MTurk speaks boto3's wire format (JSON 1.1, `X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>`),
so the real boto3 client builds, validates and signs every request; the server records operation and body.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

from django.test import Client
from django.urls import reverse

from ratings.models import AssignmentItem
from ratings.models_study import Participant
from tests.browser.timeouts import waits_generous
from tests.ratings.campaign_data import headphone_pass_give
from tests.ratings.study_data import (
    answer_share,
    arrival_url,
    item_answer_post,
    participant_of,
    share_items,
    walk_to_items,
)

MTURK_TARGET_PREFIX = "MTurkRequesterServiceV20170117."
MTURK_SUBMIT = "https://workersandbox.mturk.com"


class FakeMTurk:
    """MTurk's requester endpoint: answers per operation (a dict or a function of the body); records each call."""

    def __init__(self):
        self.answers: dict = {}
        self.calls: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                operation = (self.headers.get("X-Amz-Target") or "").removeprefix(MTURK_TARGET_PREFIX)
                fake.calls.append((operation, body))
                answer = fake.answers.get(operation, {})
                payload = json.dumps(answer(body) if callable(answer) else answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def of(self, operation: str) -> list[dict]:
        return [body for name, body in self.calls if name == operation]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --- Participants over HTTP ---------------------------------------------------------------------------------


def gold_side(item: AssignmentItem, *, right: bool) -> str:
    """The side of the clip's own caption on a gold pair (right=True), or the other side."""
    own_left = (item.pair.gold_choice == "a") == item.a_on_left
    return "left" if own_left == right else "right"


def side_chooser(wrong_golds: int):
    """Answers: HC pairs on the left; the first `wrong_golds` gold pairs wrong, the others right."""
    wrong = {"left": wrong_golds}

    def side_for(item: AssignmentItem) -> str:
        if not item.pair.gold_choice:
            return "left"
        if wrong["left"] > 0:
            wrong["left"] -= 1
            return gold_side(item, right=False)
        return gold_side(item, right=True)

    return side_for


def mturk_params(worker: str, assignment: str, hit: str) -> dict:
    return {"workerId": worker, "assignmentId": assignment, "hitId": hit, "turkSubmitTo": MTURK_SUBMIT}


def api_arrive(study, params: dict, address: str) -> tuple[Client, Participant]:
    client = Client(REMOTE_ADDR=address)
    response = client.get(arrival_url(study, **params))
    assert response.status_code in (200, 302), response.content[:300]
    return client, participant_of(client)


def api_complete(client: Client, study, *, wrong_golds: int = 0) -> Participant:
    participant = walk_to_items(client, study)
    answer_share(client, participant, side_for=side_chooser(wrong_golds))
    client.get(reverse("study:items", kwargs={"slug": study.slug}))
    participant.refresh_from_db()
    return participant


def api_answer_some(client: Client, study, count: int) -> Participant:
    """Reach the items and answer the first `count` HC items (no gold), leaving the rest open."""
    participant = walk_to_items(client, study)
    hc_items = [item for item in share_items(participant) if not item.pair.gold_choice][:count]
    for item in hc_items:
        assert item_answer_post(client, item, side="left").status_code == 302
    return participant


def api_decline(client: Client, study) -> None:
    slug = study.slug
    assert client.post(reverse("study:entry", kwargs={"slug": slug})).status_code == 302
    assert client.post(reverse("study:consent", kwargs={"slug": slug}), {"decision": "decline"}).status_code == 302


def api_leave(client: Client, study) -> None:
    assert client.post(reverse("study:leave", kwargs={"slug": study.slug})).status_code == 302


# --- Participants in a browser ------------------------------------------------------------------------------


def browser_arrive(browser, live_server, study, params: dict):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    waits_generous(context)
    page = context.new_page()
    landed = []
    context.route(
        "https://app.prolific.com/**",
        lambda route: (landed.append(route.request.url), route.fulfill(status=200, body="<h1>Prolific</h1>")),
    )

    def submit(route):
        landed.append(route.request.post_data or "")
        route.fulfill(status=200, content_type="text/html", body="<h1>HIT submitted</h1>")

    context.route(f"{MTURK_SUBMIT}/**", submit)
    page.goto(f"{live_server.url}/study/{study.slug}/?{urlencode(params)}")
    return context, page, landed


def browser_participant(page) -> Participant:
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.models import Session

    cookie = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    user_id = Session.objects.get(session_key=cookie["value"]).get_decoded()[SESSION_KEY]
    return Participant.objects.get(user_id=int(user_id))


def enter_on_focused(page, selector: str) -> None:
    """Press Enter on the page's autofocused button once it has the focus (the browser gives it after the load
    event, so a key pressed at once may reach nobody), and wait for the page it leads to."""
    page.wait_for_function("selector => document.activeElement?.matches(selector)", arg=selector)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def browser_to_items(page, study) -> Participant:
    """Landing -> consent -> (the headphone screen passed earlier) -> practice -> the first item."""
    from tests.browser.test_study_pages import _practice_and_start

    enter_on_focused(page, "#start-form button")
    participant = browser_participant(page)
    if study.screen_kinds:
        headphone_pass_give(participant.user, kind="antiphase")  # the screen itself is proven in the screen-out
    enter_on_focused(page, "button[value=agree]")  # "I agree" has the focus
    assert page.url.endswith("/instructions/"), page.url
    _practice_and_start(page)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/ratings/items/" in page.url, page.url
    return participant


def browser_rate(page, side_for) -> None:
    """Play the current item's clip, wait for the server to accept the listening, choose, submit."""
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    item = AssignmentItem.objects.select_related("pair").get(token=token)
    page.wait_for_function("() => document.querySelector('#player audio').readyState >= 1")
    page.keyboard.press(" ")
    page.wait_for_function("() => !document.getElementById('submit-button').disabled")
    page.keyboard.press("a" if side_for(item) == "left" else "b")
    with page.expect_navigation():
        page.keyboard.press("Enter")


def browser_rate_until_hc(page) -> None:
    """Answer items in the page's order until one HC item (not a check) is answered; checks answered right."""
    while True:
        token = page.url.rstrip("/").rsplit("/", 1)[1]
        is_check = bool(AssignmentItem.objects.select_related("pair").get(token=token).pair.gold_choice)
        browser_rate(page, side_chooser(0))
        if not is_check:
            return


def browser_rate_all(page, side_for) -> None:
    while "/ratings/items/" in page.url:
        browser_rate(page, side_for)


def browser_fail_screen(page, participant: Participant) -> None:
    """Play the calibration and each trial, then answer every trial wrongly (the quietest is known here)."""
    from ratings.models import HeadphoneCheck

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
        wrong = (trial["quietest"] + 1) % 3
        page.check(f"input[name='trial_{number}'][value='{wrong + 1}']")
    with page.expect_navigation():
        page.click("#headphone-submit")
