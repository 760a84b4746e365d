"""A staff account signed in in the browser opens a crowd study's participant link: Chromium shows the page asking
to continue as the participant (signing out) or go back. Going back keeps the staff session and creates nobody;
continuing signs the staff account out and lands on the study as that one participant. Neither opening the link
(no click) nor a form another site submits on its own signs the staff account out. Screenshots at 1280 and 390 px.
"""

import re

import pytest

from ratings.models_study import Participant
from tests.browser.loopback_site import loopback_site
from tests.browser.timeouts import waits_generous
from tests.ratings.study_data import (
    arrival_url,
    pairwise_study,
    prolific_id,
    study_media,  # noqa: F401 (a fixture)
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("study_media"),
]

WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
CONTINUE = "Continue as the participant (signs you out)"
LOGIN_PATH = "/accounts/login/"


@pytest.fixture
def staff_context(browser, live_server):
    """staff_context(user, viewport) -> a browser context holding `user`'s session cookie."""
    from django.test import Client

    contexts = []

    def open_context(user, viewport):
        client = Client()
        client.force_login(user)
        context = browser.new_context(viewport=viewport)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
        waits_generous(context)
        contexts.append(context)
        return context

    yield open_context
    for context in contexts:
        context.close()


@pytest.fixture
def other_site():
    """Another site (127.0.0.1, the live server is localhost) whose page submits a form to a given URL on load:
    what a hostile page could do without the person clicking anything."""
    target = {}

    def page_html():
        return (
            f'<h1>Another site</h1><form id="f" method="post" action="{target["action"]}">'
            '<input type="hidden" name="continue_as_participant" value="1"></form>'
            '<script>document.getElementById("f").submit()</script>'
        )

    with loopback_site(page_html) as origin:
        yield origin, target


def _staff_page(page, live_server, study) -> str:
    """What the study's staff page does in this context: "opens" (signed in as staff), "login" (signed out) or
    "refused" (signed in as someone else: after continuing, the participant)."""
    response = page.goto(f"{live_server.url}/ratings/staff/studies/{study.pk}/")
    if page.url.startswith(f"{live_server.url}{LOGIN_PATH}"):
        return "login"
    assert page.url == f"{live_server.url}/ratings/staff/studies/{study.pk}/", page.url
    if response.status == 403:
        page.get_by_role("heading", name="You cannot open this page").wait_for()
        return "refused"
    # The staff page itself rendered (its heading), not an error page that happens to keep the address.
    assert response.status == 200, response.status
    page.get_by_role("heading", name=f"Study of {study.campaign.name}").wait_for()
    return "opens"


def _session_user_ids(context, live_server) -> list[int]:
    """Who the browser's session cookie signs in, read from the session store (independent of any page)."""
    from django.contrib.sessions.backends.db import SessionStore

    keys = [cookie["value"] for cookie in context.cookies(live_server.url) if cookie["name"] == "sessionid"]
    return [int(SessionStore(session_key=key).load().get("_auth_user_id", 0)) for key in keys]


def _assert_asked(page, staff) -> None:
    page.wait_for_selector("[data-switch-confirm]")
    heading = page.get_by_role("heading", name=f"You are signed in as {staff.get_username()}")
    assert heading.is_visible()
    assert page.get_by_role("button", name=CONTINUE).is_visible()
    go_back = page.get_by_role("link", name="Go back")
    assert go_back.is_visible()
    # The safe choice is the page's primary button, not a bare link beside the one that signs out.
    style = go_back.evaluate("e => [getComputedStyle(e).textDecorationLine, getComputedStyle(e).backgroundColor]")
    assert style[0] == "none" and style[1] not in ("rgba(0, 0, 0, 0)", "transparent"), style


def _assert_inside_viewport(page, width: int) -> None:
    """Nothing on the asking page sticks out sideways (a phone would have to scroll to reach a button)."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for locator in (page.get_by_role("button", name=CONTINUE), page.get_by_role("link", name="Go back")):
        box = locator.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


@pytest.mark.parametrize("width", WIDTHS)
def test_a_staff_user_is_asked_and_chooses_to_go_back_then_to_continue(
    live_server, staff_context, make_user, artifacts, width
):
    study = pairwise_study()
    staff = make_user("organiser", staff=True)
    page = staff_context(staff, WIDTHS[width]).new_page()
    assert _staff_page(page, live_server, study) == "opens", "signed in as staff to begin with"
    pid = prolific_id()
    link = live_server.url + arrival_url(study, PROLIFIC_PID=pid, STUDY_ID="a" * 24, SESSION_ID="b" * 24)

    # Opened with no click: the question only, the staff session untouched.
    page.goto(link)
    _assert_asked(page, staff)
    _assert_inside_viewport(page, WIDTHS[width]["width"])
    page.screenshot(path=str(artifacts / f"study-arrival-signed-in-asked-{width}.png"), full_page=True)
    assert not Participant.objects.exists(), "asking creates nobody"
    assert _staff_page(page.context.new_page(), live_server, study) == "opens", "the staff session is still valid"

    # Go back: still staff, still nobody.
    page.get_by_role("link", name="Go back").click()
    page.wait_for_url(re.compile(r"^(?!.*PROLIFIC_PID)"))
    assert _staff_page(page, live_server, study) == "opens", "going back keeps the staff session"
    assert not Participant.objects.exists(), "going back creates nobody"
    assert _session_user_ids(page.context, live_server) == [staff.pk]

    # The link again, and continue: signed out of staff, on the study as that one participant.
    page.goto(link)
    _assert_asked(page, staff)
    page.get_by_role("button", name=CONTINUE).click()
    page.wait_for_url(f"{live_server.url}/study/{study.slug}/")
    page.get_by_role("button", name="Start").wait_for()
    assert page.get_by_role("heading", name=study.campaign.rater_title).is_visible()
    page.screenshot(path=str(artifacts / f"study-arrival-signed-in-continued-{width}.png"), full_page=True)
    participant = Participant.objects.get()
    assert (participant.platform, participant.platform_id) == ("prolific", pid), "the participant of the link"
    # The browser is now the participant's: the staff page refuses them (a page for staff, not the login form,
    # since someone is signed in); the staff account's own session is gone.
    assert _staff_page(page.context.new_page(), live_server, study) == "refused", "the staff account is signed out"
    assert _session_user_ids(page.context, live_server) == [participant.user_id]


def test_a_form_another_site_submits_on_its_own_does_not_sign_the_staff_user_out(
    live_server, staff_context, make_user, other_site
):
    study = pairwise_study()
    staff = make_user("organiser", staff=True)
    page = staff_context(staff, WIDTHS["1280"]).new_page()
    link = live_server.url + arrival_url(study, PROLIFIC_PID=prolific_id(), STUDY_ID="a" * 24, SESSION_ID="b" * 24)
    origin, target = other_site
    target["action"] = link

    with page.expect_response(lambda response: response.url == link and response.request.method == "POST") as posted:
        page.goto(f"{origin}/")
    assert posted.value.status == 403, "the other site's POST is refused"
    assert not Participant.objects.exists()
    assert _staff_page(page, live_server, study) == "opens", "still signed in as staff"
    assert _session_user_ids(page.context, live_server) == [staff.pk]
