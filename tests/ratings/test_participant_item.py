"""A crowd participant's item is read without joining their campaign again (selectors.participant_item): the same
answer as rater_item, its own item in an open campaign or nothing, and the campaign it carries is the one read with
the participant."""

import pytest
from django.test import Client
from django.urls import reverse

from ratings import selectors
from ratings.models import Campaign
from ratings.models_study import Participant
from tests.ratings.study_data import (
    pairwise_study,
    prolific_arrive,
    share_items,
    study_media,  # noqa: F401 (a fixture)
    walk_to_items,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("study_media")]


def _rating_participant(study) -> Participant:
    client = Client()
    prolific_arrive(study, client=client)
    return walk_to_items(client, study)


def _fresh(participant: Participant) -> Participant:
    return Participant.objects.select_related("study__campaign").get(pk=participant.pk)


def test_the_participant_gets_their_own_item_as_rater_item_gives_it(django_assert_num_queries):
    study = pairwise_study(judgements=2)
    participant = _fresh(_rating_participant(study))
    item = share_items(participant)[0]

    with django_assert_num_queries(1):
        found = selectors.participant_item(participant=participant, token=item.token)
        assert found.assignment.campaign is participant.study.campaign  # not read again
        assert found.clip.pk == item.clip_id and found.pair.pk == item.pair_id
    reference = selectors.rater_item(rater=participant.user, token=item.token)
    assert (found.pk, found.assignment_id, found.assignment.campaign_id) == (
        reference.pk,
        reference.assignment_id,
        reference.assignment.campaign_id,
    )


def test_another_participants_item_is_nobodys(django_assert_num_queries):
    study = pairwise_study(judgements=2)
    first, second = _fresh(_rating_participant(study)), _fresh(_rating_participant(study))
    others = share_items(second)[0]

    assert selectors.participant_item(participant=first, token=others.token) is None
    assert selectors.rater_item(rater=first.user, token=others.token) is None
    assert selectors.participant_item(participant=first, token="no-such-token") is None


def test_an_item_of_a_closed_campaign_is_not_found_and_its_page_not_shown():
    study = pairwise_study(judgements=2)
    client = Client()
    prolific_arrive(study, client=client)
    participant = walk_to_items(client, study)
    item = share_items(participant)[0]
    url = reverse("ratings:item", kwargs={"token": item.token})
    assert client.get(url).status_code == 200, "the page opens while the campaign is active"

    Campaign.objects.filter(pk=study.campaign_id).update(is_active=False)

    assert selectors.participant_item(participant=_fresh(participant), token=item.token) is None
    assert selectors.rater_item(rater=participant.user, token=item.token) is None
    closed = client.get(url)
    assert closed.status_code == 302, "the participant's study sends them on (the study is closed with its campaign)"
    assert reverse("ratings:item", kwargs={"token": item.token}) not in closed["Location"]
