"""The campaign administration pages in headless Chromium: create a campaign, see progress and quality."""

import pytest

from ratings.models import Campaign
from ratings.services.judgements import pairwise_item_submit
from tests.ratings.campaign_data import corpus_build, listened_give

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_create_a_campaign_then_exclude_a_rater(page_for, live_server, make_user, artifacts, settings):
    settings.MUST_LISTEN_SECONDS = 0
    dataset, clips, systems = corpus_build(name="admin-demo", clip_count=5)
    raters = [make_user(name, "rater") for name in ("ana", "ben", "cho", "dev")]
    admin = make_user("organiser", staff=True)
    page = page_for(admin)
    page.goto(f"{live_server.url}/ratings/staff/campaigns/new/")
    page.fill("input[name='name']", "pilot-pairs")
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.select_option("select[name='task_type']", "pairwise")
    page.fill("input[name='seed']", "7")
    for name, count in (("count_hc", "5"), ("count_hi", "3"), ("count_hm", "5"), ("count_mm", "5")):
        page.fill(f"input[name='{name}']", count)
    page.check("input[name='gold_from_hi']")
    for rater in raters:
        page.check(f"input[name='raters'][value='{rater.pk}']")
    page.screenshot(path=str(artifacts / "campaign_create_form.png"), full_page=True)
    with page.expect_navigation():
        page.click("form.campaign-form button[type='submit']")
    campaign = Campaign.objects.get(name="pilot-pairs")
    assert page.url.endswith(f"/ratings/staff/campaigns/{campaign.pk}/")
    assert campaign.pairs.count() == 18 and campaign.assignments.count() == 4
    # Two raters vote on everything so the quality page has numbers.
    for rater, side in ((raters[0], "left"), (raters[1], "right")):
        for item in campaign.assignments.get(rater=rater).items.all():
            pairwise_item_submit(item=listened_give(item), side=side, seen_version=0)
    page.goto(f"{live_server.url}/ratings/staff/campaigns/")
    assert "36 / 72" in page.content()
    page.screenshot(path=str(artifacts / "campaign_list.png"), full_page=True)
    page.click("text=Quality")
    page.wait_for_url(f"**/ratings/staff/campaigns/{campaign.pk}/quality/")  # the list's page may still be shown
    page.screenshot(path=str(artifacts / "campaign_quality.png"), full_page=True)
    with page.expect_navigation():
        page.locator("tr", has_text="ben").locator("button", has_text="Exclude").click()
    assert list(campaign.excluded_raters.values_list("username", flat=True)) == ["ben"]
    assert "include again" in page.content()
    page.screenshot(path=str(artifacts / "campaign_quality_after_exclude.png"), full_page=True)
