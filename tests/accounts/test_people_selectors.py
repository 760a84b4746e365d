"""Who can sign in (accounts/selectors.py), and the campaign forms that offer only them as raters."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import Invitation
from accounts.selectors import people_list, people_who_can_sign_in
from accounts.services import Invitee, account_deactivate, invitation_create
from corpus.models import Dataset
from corpus.services.importing import ImportSummary, import_account_get_or_create
from demo.dataset import simulated_users_ensure
from ratings.forms import CampaignRatersAddForm
from ratings.services.campaigns import campaign_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user, django_user_model):
    """One account of each kind; the names say which."""
    boss = make_user("boss", staff=True)
    make_user("rater-with-password", "rater")
    make_user("annotator-with-password", "annotator")
    account_deactivate(user=make_user("rater-deactivated", "rater"), by=boss)
    import_account_get_or_create(
        username="brace-sample-judge-1", role="rater", summary=ImportSummary(source_name="brace.csv"), kind="judges"
    )
    simulated_users_ensure(usernames=["sim-rater-01"], role="rater")
    django_user_model.objects.create(username="rater-empty-password").groups.add(
        *django_user_model.objects.get(username="rater-with-password").groups.all()
    )
    invitation_create(invitees=[Invitee("rater-invited", "")], role="rater", by=boss)
    [expired] = invitation_create(invitees=[Invitee("rater-invitation-expired", "")], role="rater", by=boss)
    Invitation.objects.filter(pk=expired.invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    return boss


def _offered_raters(html: str) -> list[str]:
    """The labels of the raters' checkboxes on a campaign page."""
    return sorted(re.findall(r'<input type="checkbox" name="raters" value="\d+"[^>]*>\s*([^<]+?)\s*</label>', html))


def test_people_who_can_sign_in_are_those_with_a_password_or_an_open_invitation(people):
    assert sorted(people_who_can_sign_in().values_list("username", flat=True)) == [
        "annotator-with-password",
        "boss",
        "rater-invited",
        "rater-with-password",
    ]


def test_the_campaign_form_offers_only_raters_who_can_sign_in(people, client, django_user_model):
    client.force_login(people)
    page = client.get(reverse("ratings:campaign_create")).content.decode()
    assert _offered_raters(page) == ["boss", "rater-invited", "rater-with-password"]
    # An account the page does not offer is refused if posted anyway.
    judge = django_user_model.objects.get(username="brace-sample-judge-1")
    response = client.post(reverse("ratings:campaign_create"), {"name": "c", "raters": [judge.pk]})
    assert f"Select a valid choice. {judge.pk} is not one of the available choices." in response.content.decode()


def test_adding_raters_to_a_campaign_offers_the_same_people(people):
    dataset = Dataset.objects.create(name="d")
    campaign = campaign_create(name="c", dataset=dataset, task_type="thumbs")
    offered = CampaignRatersAddForm(campaign=campaign).fields["raters"].queryset
    assert sorted(offered.values_list("username", flat=True)) == ["boss", "rater-invited", "rater-with-password"]


def test_the_people_list_shows_states_and_leaves_data_accounts_out(people):
    rows, data_only = people_list()
    states = {row.user.username: (row.state, row.roles) for row in rows}
    assert states == {
        "annotator-with-password": ("active", ["annotator"]),
        "boss": ("active", ["admin"]),
        "rater-deactivated": ("deactivated", ["rater"]),
        "rater-invitation-expired": ("invitation expired", ["rater"]),
        "rater-invited": ("invited", ["rater"]),
        "rater-with-password": ("active", ["rater"]),
    }
    assert data_only == 3  # the imported judge, the simulated rater, the account without any password
    assert [row.user.username for row in rows if row.token] == ["rater-invited"]
