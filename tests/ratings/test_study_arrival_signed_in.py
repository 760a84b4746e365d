"""A participant link opened by a signed-in account of the app (an admin, a rater) never replaces that session
without asking: a page offers to continue as the participant (signing the account out) or to go back."""

import pytest
from django.test import Client
from django.urls import reverse

from ratings.models_study import Participant
from ratings.services.participants import preview_participant_create
from ratings.views_study import enter_token
from tests.ratings.study_data import (
    arrival_url,
    pairwise_study,
    prolific_id,
    study_media,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]

ASKED = "This is a participant's link. Continuing signs you out of"


def _signed_in_as(client: Client) -> int | None:
    value = client.session.get("_auth_user_id")
    return int(value) if value is not None else None


@pytest.mark.parametrize("role", ["admin", "rater"])
def test_an_account_opening_a_participant_link_is_asked_first(make_user, role):
    study = pairwise_study()
    account = make_user(f"someone-{role}", staff=True) if role == "admin" else make_user("someone-rater", "rater")
    client = Client()
    client.force_login(account)
    url = arrival_url(study, PROLIFIC_PID=prolific_id(), STUDY_ID="a" * 24, SESSION_ID="b" * 24)
    asked = client.get(url)
    page = asked.content.decode()
    assert asked.status_code == 200 and "data-switch-confirm" in page
    assert f"You are signed in as {account.get_username()}" in page and ASKED in page
    assert 'href="/">Go back</a>' in page and 'name="continue_as_participant" value="1"' in page
    assert _signed_in_as(client) == account.pk, "still signed in as the account"
    assert not Participant.objects.exists(), "nobody arrived yet"

    going_on = client.post(url, {"continue_as_participant": "1"})
    assert going_on.status_code == 302
    participant = Participant.objects.get()
    assert _signed_in_as(client) == participant.user_id != account.pk, "now the participant, the account signed out"


def test_someone_not_signed_in_arrives_without_a_question():
    study = pairwise_study()
    client = Client()
    arrived = client.get(arrival_url(study, PROLIFIC_PID=prolific_id(), STUDY_ID="a" * 24, SESSION_ID="b" * 24))
    assert arrived.status_code == 302 and _signed_in_as(client) == Participant.objects.get().user_id


def test_an_admin_opening_a_preview_link_in_their_own_window_is_asked_first(make_user):
    study = pairwise_study()
    admin = make_user("organiser", staff=True)
    preview = preview_participant_create(study=study, by=admin)
    client = Client()
    client.force_login(admin)
    url = reverse("study:enter", kwargs={"slug": study.slug, "token": enter_token(preview)})
    asked = client.get(url)
    assert asked.status_code == 200 and ASKED in asked.content.decode()
    assert _signed_in_as(client) == admin.pk
    going_on = client.post(url, {"continue_as_participant": "1"})
    assert going_on.status_code == 302 and _signed_in_as(client) == preview.user_id
