"""The "Simulated study" banner shows on the demo's own pages only, never on a real dataset's or a real rater's."""

import pytest
from django.urls import reverse

from corpus.models import Dataset
from demo.dataset import DEMO_DATASET, DEMO_DESCRIPTION
from ratings.services.campaigns import campaign_add_raters
from tests.ratings.campaign_data import headphone_pass_give
from tests.ratings.workbook_helpers import thumbs_campaign

BANNER = 'class="simulated-banner"'

pytestmark = pytest.mark.django_db


@pytest.fixture
def studies(make_user):
    """The demo dataset (as `manage.py demo` names and describes it) and a real one, a THumBS campaign on each with
    the same real rater, who passed the headphone screening."""
    rater = make_user("real-rater", "rater")
    headphone_pass_give(rater)
    demo_campaign = thumbs_campaign(name="demo-thumbs")
    Dataset.objects.filter(pk=demo_campaign.dataset_id).update(name=DEMO_DATASET, description=DEMO_DESCRIPTION)
    real_campaign = thumbs_campaign(name="clotho-thumbs")
    for campaign in (demo_campaign, real_campaign):
        campaign_add_raters(campaign=campaign, raters=[rater])
    return {"rater": rater, "demo": demo_campaign, "real": real_campaign}


def _page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    assert "<main>" in response.content.decode()  # the site's layout rendered: the banner's place exists
    return response.content.decode()


def _first_item_url(campaign, rater) -> str:
    item = campaign.assignments.get(rater=rater).items.order_by("position").first()
    return reverse("ratings:item", kwargs={"token": item.token})


def test_the_demo_dataset_pages_say_simulated_and_the_real_ones_do_not(client, make_user, studies):
    client.force_login(make_user("staff-admin", "admin", staff=True))
    for name, expected in (("demo", True), ("real", False)):
        campaign = studies[name]
        for url in (
            reverse("metrics_bridge:leaderboard", kwargs={"dataset_id": campaign.dataset_id}),
            reverse("ratings:campaign_detail", kwargs={"campaign_id": campaign.pk}),
        ):
            page = _page(client, url)
            assert (BANNER in page) is expected, url
            assert ("Simulated study." in page) is expected, url


def test_a_real_rater_sees_the_banner_only_on_demo_items(client, studies):
    client.force_login(studies["rater"])
    demo_page = _page(client, _first_item_url(studies["demo"], studies["rater"]))
    assert BANNER in demo_page and "judgements of this demo dataset are simulated" in demo_page
    assert BANNER not in _page(client, _first_item_url(studies["real"], studies["rater"]))
    # the rater's list of campaigns is about no one dataset: a real rater is not told their work is simulated
    assert BANNER not in _page(client, reverse("ratings:home"))


def test_pages_about_no_dataset_carry_no_banner_even_with_the_demo_present(client, make_user, studies):
    client.force_login(make_user("staff-admin", "admin", staff=True))
    for url in (reverse("annotation:home"), reverse("metrics_bridge:home"), reverse("ratings:campaign_list")):
        assert BANNER not in _page(client, url), url
