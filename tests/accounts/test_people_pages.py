"""The People page and the invitation link (accounts/views.py), through Django's test client."""

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from accounts.models import Invitation
from accounts.roles import user_roles

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-pass-phrase-42"


@pytest.fixture
def staff_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


def _links(page: str) -> dict[str, str]:
    """username -> invitation link, from the page's "Links to send" list."""
    listing = re.search(r'<textarea id="new-links-list"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    rows = [line.split("\t") for line in html.unescape(listing).strip().splitlines()]
    return {username: link for username, _email, link in rows}


def _sign_in(client, username: str, password: str) -> bool:
    client.post(reverse("login"), {"username": username, "password": password})
    return "_auth_user_id" in client.session


def test_invite_accept_sign_in_round_trip(staff_client):
    # Given staff inviting two raters in one go
    response = staff_client.post(
        reverse("accounts:invite"), {"people": "ada@example.org\nbob bob@example.org", "role": "rater"}
    )
    assert response.status_code == 302
    page = staff_client.get(response["Location"]).content.decode()
    links = _links(page)
    assert sorted(links) == ["ada@example.org", "bob"]
    assert "2 people invited as rater" in page

    # When Ada opens her link, first with passwords that differ, then properly
    ada = Client()
    path = links["ada@example.org"].removeprefix("http://testserver")
    opened = ada.get(path).content.decode()
    assert "Your username is <strong>ada@example.org</strong>" in opened
    assert "invited as <strong>rater</strong>" in opened
    refused = ada.post(path, {"new_password1": PASSWORD, "new_password2": PASSWORD + "x"})
    assert refused.status_code == 400 and "The two password fields didn’t match." in refused.content.decode()
    accepted = ada.post(path, {"new_password1": PASSWORD, "new_password2": PASSWORD})

    # Then she is signed in, her role works, and her password signs her in later
    assert accepted.status_code == 302 and accepted["Location"] == reverse("annotation:home")
    assert ada.get(reverse("ratings:home")).status_code == 200
    user = get_user_model().objects.get(username="ada@example.org")
    assert user.email == "ada@example.org" and user_roles(user) == {"rater"}
    ada.post(reverse("logout"))
    assert _sign_in(ada, "ada@example.org", PASSWORD)
    # The link is spent: opening it again says so, and Bob's still works.
    again = Client().get(path)
    assert again.status_code == 410 and "This link was already used" in again.content.decode()
    assert Client().get(links["bob"].removeprefix("http://testserver")).status_code == 200
    people = staff_client.get(reverse("accounts:people")).content.decode()
    assert re.search(r'id="person-\d+" class="state-active">\s*<td data-label="Person"><strong>ada@example.org', people)


def test_tampered_and_expired_links_say_so_without_an_error_page(staff_client, client):
    staff_client.post(reverse("accounts:invite"), {"people": "ada", "role": "annotator"})
    link = _links(
        staff_client.get(
            reverse("accounts:people") + "?new=" + str(get_user_model().objects.get(username="ada").pk)
        ).content.decode()
    )["ada"].removeprefix("http://testserver")
    staff_client.post(reverse("logout"))

    tampered = client.get(link[:-2] + "xx/")
    assert tampered.status_code == 400 and "This link is not valid" in tampered.content.decode()
    cut_short = client.get(link.rsplit(":", 1)[0] + "/")
    assert cut_short.status_code == 400
    assert client.get(reverse("accounts:invitation_accept", args=["garbage"])).status_code == 400

    Invitation.objects.update(expires_at=timezone.now() - timedelta(hours=1))
    expired = client.post(link, {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert expired.status_code == 410 and "This link has expired" in expired.content.decode()
    assert not get_user_model().objects.get(username="ada").has_usable_password()


def test_people_who_are_not_staff_cannot_invite_or_change_anyone(client, make_user):
    rater = make_user("rat", "rater")
    target = make_user("other", "rater")
    assert client.get(reverse("accounts:people")).status_code == 302  # to the login page
    client.force_login(rater)
    assert client.get(reverse("accounts:people")).status_code == 403
    assert client.post(reverse("accounts:invite"), {"people": "mallory", "role": "reviewer"}).status_code == 403
    assert client.post(reverse("accounts:person_deactivate", args=[target.pk])).status_code == 403
    assert client.post(reverse("accounts:person_roles", args=[target.pk]), {"roles": ["reviewer"]}).status_code == 403
    assert not get_user_model().objects.filter(username="mallory").exists() and not Invitation.objects.exists()
    target.refresh_from_db()
    assert target.is_active and user_roles(target) == {"rater"}
    assert ">People</a>" not in client.get("/").content.decode()  # and no way there in the navigation


def test_a_list_with_a_mistake_creates_nobody_and_names_the_line(staff_client, make_user):
    make_user("taken")
    response = staff_client.post(reverse("accounts:invite"), {"people": "ada\nbad name here", "role": "rater"})
    page = response.content.decode()
    assert response.status_code == 400 and "line 2 &quot;bad name here&quot;: write a username" in page
    response = staff_client.post(reverse("accounts:invite"), {"people": "ada\ntaken", "role": "rater"})
    assert "&quot;taken&quot; already has an account" in response.content.decode()
    response = staff_client.post(reverse("accounts:invite"), {"people": "ada", "role": "admin"})
    assert response.status_code == 400 and "Select a valid choice. admin is not one of" in response.content.decode()
    assert not get_user_model().objects.filter(username="ada").exists()


def test_a_deactivated_person_cannot_sign_in_until_reactivated(staff_client, make_user):
    person = make_user("dee", "rater")
    their_browser = Client()
    assert _sign_in(their_browser, "dee", "pass-dee")
    token = Token.objects.create(user=person).key
    assert Client().get("/api/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200

    response = staff_client.post(reverse("accounts:person_deactivate", args=[person.pk]), follow=True)
    assert "dee deactivated." in response.content.decode()

    # The open session stops working and the password no longer signs in.
    assert their_browser.get(reverse("ratings:home")).status_code == 302
    assert not _sign_in(Client(), "dee", "pass-dee")
    refused = Client().get("/api/", HTTP_AUTHORIZATION=f"Token {token}")
    assert refused.status_code == 403 and refused.json() == {"detail": "User inactive or deleted."}
    page = staff_client.get(reverse("accounts:people")).content.decode()
    assert re.search(rf'id="person-{person.pk}" class="state-deactivated"', page)
    staff_client.post(reverse("accounts:person_reactivate", args=[person.pk]))
    assert _sign_in(Client(), "dee", "pass-dee")


def test_staff_change_roles_but_not_their_own_account(staff_client, make_user):
    person = make_user("rho", "rater")
    staff_client.post(reverse("accounts:person_roles", args=[person.pk]), {"roles": ["annotator", "reviewer"]})
    assert user_roles(person) == {"annotator", "reviewer"}
    boss = get_user_model().objects.get(username="boss")
    response = staff_client.post(reverse("accounts:person_deactivate", args=[boss.pk]), follow=True)
    assert "You cannot change your own account here." in response.content.decode()
    boss.refresh_from_db()
    assert boss.is_active
    assert '<a href="/accounts/people/" class="is-active" aria-current="page">People</a>' in response.content.decode()


def test_a_new_link_replaces_the_old_one(staff_client, client):
    staff_client.post(reverse("accounts:invite"), {"people": "ada", "role": "reviewer"})
    ada = get_user_model().objects.get(username="ada")
    first = _links(staff_client.get(f"{reverse('accounts:people')}?new={ada.pk}").content.decode())["ada"]
    response = staff_client.post(reverse("accounts:person_invitation_renew", args=[ada.pk]))
    second = _links(staff_client.get(response["Location"]).content.decode())["ada"]
    replaced = client.get(first.removeprefix("http://testserver"))
    assert replaced.status_code == 410 and "A newer invitation replaced this link" in replaced.content.decode()
    assert client.get(second.removeprefix("http://testserver")).status_code == 200


def test_the_admin_site_lists_invitations_without_their_secret(client, make_user):
    boss = make_user("root", staff=True)
    boss.is_superuser = True
    boss.save()
    client.force_login(boss)
    client.post(reverse("accounts:invite"), {"people": "ada", "role": "rater"})
    invitation = Invitation.objects.get()
    listing = client.get(reverse("admin:accounts_invitation_changelist")).content.decode()
    assert "ada" in listing and invitation.key not in listing
    detail = client.get(reverse("admin:accounts_invitation_change", args=[invitation.pk]))
    assert detail.status_code == 200 and invitation.key not in detail.content.decode()
