"""When the gold rule cannot be kept (too few clips or raters for the judgements asked), the campaign is still made
without it, and the experimenter is told so on the creation result and on the campaign's page, not only in a log."""

import pytest
from django.urls import reverse

from ratings.models import AssignmentItem, Campaign
from ratings.selectors import campaign_gold_rule_breaches
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db

WARNING = "The gold rule could not be kept:"


def _create(client, make_user, *, name: str, clip_count: int, raters: int, judgements: int):
    dataset, _, systems = corpus_build(name=f"{name}-data", clip_count=clip_count)
    accounts = [make_user(f"{name}-rater{number}", "rater") for number in range(raters)]
    data = {
        "name": name,
        "dataset": dataset.pk,
        "task_type": "pairwise",
        "seed": "3",
        "judgements_per_item": str(judgements),
        "title": "Sounds",
        "systems": [system.pk for system in systems],
        "count_hc": str(clip_count),
        "count_hi": "2",
        "gold_from_hi": "on",
        "raters": [rater.pk for rater in accounts],
    }
    response = client.post(reverse("ratings:campaign_create"), data, follow=True)
    assert response.status_code == 200 and f"Campaign {name} created." in response.content.decode()
    return Campaign.objects.get(name=name), response.content.decode()


def _gold_items_meeting_their_clip(campaign: Campaign) -> int:
    """Counted here from the items, independently of the selector: gold items whose rater has another item of
    the clip."""
    count = 0
    for item in AssignmentItem.objects.filter(assignment__campaign=campaign).exclude(pair__gold_choice=""):
        same = AssignmentItem.objects.filter(assignment__rater_id=item.assignment.rater_id, clip_id=item.clip_id)
        count += same.count() > 1
    return count


def test_a_campaign_that_cannot_keep_the_rule_says_so_where_it_is_made_and_on_its_page(client, make_user):
    client.force_login(make_user("admin", staff=True))
    # Three raters who must each judge every pair: a gold pair's raters meet its clip again on the HC pairs.
    campaign, created = _create(client, make_user, name="tight", clip_count=4, raters=3, judgements=3)
    breaches = _gold_items_meeting_their_clip(campaign)
    assert breaches > 0 and campaign_gold_rule_breaches(campaign=campaign) == breaches
    assert f"{WARNING} {breaches} gold items went to raters who also have another item of the same clip" in created
    page = client.get(reverse("ratings:campaign_detail", args=[campaign.pk])).content.decode()
    assert "<h2>Raters</h2>" in page and f"{WARNING} {breaches} gold items" in page


def test_a_campaign_that_keeps_the_rule_shows_no_warning(client, make_user):
    client.force_login(make_user("admin", staff=True))
    campaign, created = _create(client, make_user, name="roomy", clip_count=8, raters=6, judgements=2)
    assert _gold_items_meeting_their_clip(campaign) == 0 and campaign.pairs.exclude(gold_choice="").exists()
    page = client.get(reverse("ratings:campaign_detail", args=[campaign.pk])).content.decode()
    assert "<h2>Raters</h2>" in page and WARNING not in page and WARNING not in created
