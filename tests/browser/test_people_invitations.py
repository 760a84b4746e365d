"""Inviting people in headless Chromium: staff invite a list, one invitee sets a password and is signed in with
their role; the spent link says so; the page fits a phone."""

import pytest
from django.contrib.auth import get_user_model

from accounts.roles import user_roles
from tests.browser.timeouts import waits_generous

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
PASSWORD = "a-long-pass-phrase-42"


def _fits_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_invite_then_accept_and_sign_in(page_for, browser, live_server, make_user, artifacts):
    staff = page_for(make_user("organiser", staff=True))
    staff.goto(f"{live_server.url}/accounts/people/")
    staff.fill("textarea[name='people']", "ada@example.org\nbob bob@example.org")
    staff.check("input[name='role'][value='rater']")
    with staff.expect_navigation():
        staff.click("text=Create invitation links")
    assert "2 people invited as rater" in staff.inner_text(".messages")
    listing = staff.input_value("#new-links-list").strip().splitlines()
    links = {line.split("\t")[0]: line.split("\t")[2] for line in listing}
    assert sorted(links) == ["ada@example.org", "bob"] and links["bob"].startswith(live_server.url + "/accounts/")
    assert staff.locator("tr", has_text="ada@example.org").locator(".state").inner_text() == "invited"
    staff.screenshot(path=str(artifacts / "people_invited_desktop.png"), full_page=True)
    staff.set_viewport_size({"width": 390, "height": 844})
    staff.reload()
    assert _fits_width(staff)
    staff.screenshot(path=str(artifacts / "people_invited_390.png"), full_page=True)

    # Ada, in a browser of her own, on a phone.
    context = browser.new_context(viewport={"width": 390, "height": 844})
    waits_generous(context)
    ada = context.new_page()
    ada.goto(links["ada@example.org"])
    assert "Your username is ada@example.org" in ada.inner_text("main")
    assert _fits_width(ada)
    ada.screenshot(path=str(artifacts / "invitation_accept_390.png"), full_page=True)
    ada.fill("input[name='new_password1']", PASSWORD)
    ada.fill("input[name='new_password2']", PASSWORD + "!")
    with ada.expect_navigation():
        ada.click("text=Set password and sign in")
    assert "didn’t match" in ada.inner_text("[data-error-summary]")
    ada.fill("input[name='new_password1']", PASSWORD)
    ada.fill("input[name='new_password2']", PASSWORD)
    with ada.expect_navigation():
        ada.click("text=Set password and sign in")
    assert ada.url == f"{live_server.url}/"
    assert "your password is set and you are signed in" in ada.inner_text(".messages")
    assert "ada@example.org · rater" in ada.inner_text("header")
    ada.click("nav >> text=My ratings")  # the rater's own page opens: the role works
    ada.wait_for_url(f"{live_server.url}/ratings/")
    ada.screenshot(path=str(artifacts / "invitation_accepted_390.png"), full_page=True)
    ada.goto(links["ada@example.org"])
    assert ada.inner_text("h1") == "This link was already used"
    context.close()
    user = get_user_model().objects.get(username="ada@example.org")
    assert user.check_password(PASSWORD) and user_roles(user) == {"rater"}

    # Staff see her active, and deactivate Bob before he accepts: his link then says so.
    staff.set_viewport_size({"width": 1280, "height": 900})
    staff.reload()
    assert staff.locator("tr", has_text="ada@example.org").locator(".state").inner_text() == "active"
    with staff.expect_navigation():
        staff.locator("tr", has_text="bob@example.org").locator("button", has_text="Deactivate").click()
    assert staff.locator("tr", has_text="bob@example.org").locator(".state").inner_text() == "deactivated"
    staff.screenshot(path=str(artifacts / "people_after_deactivate_desktop.png"), full_page=True)
    staff.goto(links["bob"])
    assert staff.inner_text("h1") == "This account is deactivated"
