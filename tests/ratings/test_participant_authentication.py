"""Crowd participants' sessions are read by ratings.authentication.ParticipantBackend: the account with its
participation in one query, nobody signed in by password through it, everyone else's sessions as before."""

from datetime import timedelta

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY, authenticate
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from ratings.authentication import PARTICIPANT_BACKEND, ParticipantBackend
from tests.ratings.study_data import (
    pairwise_study,
    participant_of,
    prolific_arrive,
    prolific_id,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]


def test_a_participant_is_signed_in_with_it_and_read_with_their_participation(django_assert_num_queries):
    study = pairwise_study()
    client = Client()
    prolific_arrive(study, client=client)
    participant = walk_to_items(client, study)
    assert client.session[BACKEND_SESSION_KEY] == PARTICIPANT_BACKEND

    with django_assert_num_queries(1):
        user = ParticipantBackend().get_user(participant.user_id)
        assert user._study_participant.pk == participant.pk
        assert user._study_participant.study.campaign.pk == study.campaign_id  # read in the same query

    item = share_items(participant)[0]
    page = client.get(reverse("ratings:item", kwargs={"token": item.token}))
    assert page.status_code == 200 and "caption-text" in page.content.decode()


def test_an_account_without_participation_reads_as_none_and_an_inactive_one_not_at_all(make_user):
    rater = make_user("in-house-rater", "rater")
    user = ParticipantBackend().get_user(rater.pk)
    assert user.pk == rater.pk and user._study_participant is None

    rater.is_active = False
    rater.save(update_fields=["is_active"])
    assert ParticipantBackend().get_user(rater.pk) is None
    assert ParticipantBackend().get_user(10**9) is None


def test_it_signs_nobody_in_by_password_while_the_model_backend_still_does(make_user):
    make_user("password-user", "rater")
    assert ParticipantBackend().authenticate(None, username="password-user", password="pass-password-user") is None
    signed_in = authenticate(None, username="password-user", password="pass-password-user")
    assert signed_in is not None and signed_in.backend == "django.contrib.auth.backends.ModelBackend"


def test_a_study_link_signs_in_with_a_fresh_session_and_records_the_sign_in_time():
    """participant_sign_in is login() without its signal: the sign-in time is still kept (written with the new
    account, then again when a link is opened a minute or more after the last sign-in), a browser signed in as
    someone else gets a new session key, and the session is valid for the participant's next page."""
    study = pairwise_study()
    pid = prolific_id()
    client, response = prolific_arrive(study, pid)
    participant = participant_of(client)
    arrived_at = participant.user.last_login
    assert arrived_at is not None and abs(arrived_at - participant.created_at) < timedelta(seconds=5)
    assert client.get(response["Location"]).status_code == 200  # the landing page, signed in

    User.objects.filter(pk=participant.user_id).update(last_login=arrived_at - timedelta(minutes=2))
    other_client, _ = prolific_arrive(study, address="10.9.9.9")
    old_key = other_client.session.session_key
    _, response = prolific_arrive(study, pid, client=other_client, address="10.9.9.9")
    assert response.status_code == 302
    assert other_client.session.session_key != old_key
    assert int(other_client.session[SESSION_KEY]) == participant.user_id
    assert User.objects.get(pk=participant.user_id).last_login > arrived_at - timedelta(seconds=1)
    assert other_client.get(response["Location"]).status_code == 200
