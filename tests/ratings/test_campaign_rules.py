"""The rules of a requested campaign (ratings/services/campaign_rules.py): the campaign form and
POST /api/campaigns/ refuse the same breach with the same message on the same field, write nothing when they do,
and build the same campaign (donors planned, raters given their shares) when the request is sound.

No management command creates or staffs a campaign, so the form and the API are the entry points.
"""

from collections import Counter

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.models import Caption
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair
from ratings.services import campaigns as campaigns_module
from ratings.services.campaign_rules import CampaignRuleError, campaign_request_setup
from ratings.services.campaigns import CampaignSetupError
from tests.ratings.campaign_data import corpus_build

pytestmark = pytest.mark.django_db

SPLIT_RULE = "a pairwise campaign needs a count for at least one split"
FOUR_FOR_THREE = "4 judgements per item need at least 4 raters (nobody judges an item twice), and 3 are ticked"
CROWD_WITH_RATERS = "a crowd-only campaign has no in-house raters, and 3 are ticked"
NOT_A_RATER = "not in the rater group: ann"


@pytest.fixture
def world(make_user, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    dataset, clips, systems = corpus_build(clip_count=4)
    admin = make_user("boss", staff=True)
    raters = [make_user(f"r{index}", "rater") for index in range(3)]
    annotator = make_user("ann", "annotator")
    return dataset, clips, systems, admin, raters, annotator


def _written() -> dict:
    """What a campaign request may write: compared before and after a refused one."""
    return {
        "campaigns": Campaign.objects.count(),
        "pairs": CaptionPair.objects.count(),
        "captions": Caption.objects.count(),
        "assignments": Assignment.objects.count(),
        "items": AssignmentItem.objects.count(),
    }


def _form_errors(client, world, **fields) -> dict:
    """POST the campaign form (a pairwise request of three raters, unless `fields` say otherwise); its errors."""
    dataset, _, _, admin, raters, _ = world
    client.force_login(admin)
    data = {
        "name": "asked",
        "dataset": dataset.pk,
        "task_type": "pairwise",
        "seed": "0",
        "judgements_per_item": "3",
        "raters": [rater.pk for rater in raters],
        **fields,
    }
    response = client.post(reverse("ratings:campaign_create"), data)
    assert response.status_code == 400, response.status_code
    return response.context["form"].errors


def _api(world) -> APIClient:
    api = APIClient()
    api.force_authenticate(user=world[3])
    return api


def _api_errors(world, **fields) -> dict:
    """POST /api/campaigns/ (the same request as `_form_errors`, in the API's terms); its errors."""
    dataset, _, _, _, raters, _ = world
    data = {
        "name": "asked",
        "dataset": dataset.name,
        "task_type": "pairwise",
        "judgements_per_item": 3,
        "raters": [rater.username for rater in raters],
        **fields,
    }
    response = _api(world).post("/api/campaigns/", data, format="json")
    assert response.status_code == 400, response.content
    return response.json()


# --- a pairwise campaign needs a split count ------------------------------------------------------------------


def test_form_refuses_a_pairwise_campaign_without_split_counts(client, world):
    errors = _form_errors(client, world)
    assert errors["count_hc"] == [SPLIT_RULE]
    assert _written()["campaigns"] == 0


def test_api_refuses_a_pairwise_campaign_without_split_counts(world):
    before = _written()
    assert _api_errors(world) == {"count_hc": [SPLIT_RULE]}
    assert _written() == before


def test_service_refuses_a_pairwise_campaign_without_split_counts(world):
    dataset, _, _, _, raters, _ = world
    with pytest.raises(CampaignRuleError, match=SPLIT_RULE) as caught:
        campaign_request_setup(
            name="asked", dataset=dataset, task_type="pairwise", split_counts={"HC": 0}, raters=raters,
            judgements_per_item=3,
        )  # fmt: skip
    assert caught.value.field == "count_hc"


# --- N judgements need N raters ------------------------------------------------------------------------------


def test_form_refuses_more_judgements_than_raters(client, world):
    errors = _form_errors(client, world, judgements_per_item="4", count_hc="2")
    assert errors["judgements_per_item"] == [f"{FOUR_FOR_THREE}: lower the number, tick more raters, or make the " \
        "campaign crowd-only (for a study)."]  # fmt: skip
    # Blank asks for the pairwise default, 4: the same refusal.
    assert _form_errors(client, world, judgements_per_item="", count_hc="2")["judgements_per_item"][0].startswith(
        FOUR_FOR_THREE
    )
    errors = _form_errors(client, world, crowd_only="on", count_hc="2")
    assert errors["raters"][0].startswith(CROWD_WITH_RATERS)
    assert _written()["campaigns"] == 0


def test_api_refuses_more_judgements_than_raters(world):
    before = _written()
    errors = _api_errors(world, judgements_per_item=4, count_hc=2)
    assert list(errors) == ["judgements_per_item"] and errors["judgements_per_item"][0].startswith(FOUR_FOR_THREE)
    assert _api_errors(world, judgements_per_item=None, count_hc=2)["judgements_per_item"][0].startswith(FOUR_FOR_THREE)
    errors = _api_errors(world, crowd_only=True, count_hc=2)
    assert list(errors) == ["raters"] and errors["raters"][0].startswith(CROWD_WITH_RATERS)
    assert _written() == before


# --- only raters judge -----------------------------------------------------------------------------------------


def test_form_refuses_a_rater_without_the_rater_role(client, world):
    _, _, _, _, raters, annotator = world
    errors = _form_errors(client, world, count_hc="2", raters=[raters[0].pk, raters[1].pk, annotator.pk])
    # The form never offers an account without the role, so the choice itself is refused, on the same field.
    assert list(errors) == ["raters"] and str(annotator.pk) in errors["raters"][0]
    assert _written()["campaigns"] == 0


def test_api_refuses_a_rater_without_the_rater_role_at_creation_and_when_adding(world):
    _, _, _, _, raters, annotator = world
    before = _written()
    errors = _api_errors(world, count_hc=2, raters=[raters[0].username, raters[1].username, annotator.username])
    assert errors == {"raters": [NOT_A_RATER]}
    assert _written() == before
    api = _api(world)
    created = api.post(
        "/api/campaigns/",
        {"name": "staffed", "dataset": "demo", "task_type": "pairwise", "count_hc": 2, "judgements_per_item": 3,
         "raters": [rater.username for rater in raters]},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    added = api.post(f"/api/campaigns/{created.json()['id']}/raters/", {"raters": ["ann"]}, format="json")
    assert (added.status_code, added.json()) == (400, {"raters": [NOT_A_RATER]})
    assert not Assignment.objects.filter(rater=annotator).exists()


def test_add_raters_form_refuses_a_rater_without_the_rater_role(client, world):
    dataset, _, _, admin, raters, annotator = world
    campaign = campaign_request_setup(
        name="staffed", dataset=dataset, task_type="pairwise", split_counts={"HC": 2}, judgements_per_item=3,
        raters=raters,
    )  # fmt: skip
    client.force_login(admin)
    url = reverse("ratings:campaign_detail", args=[campaign.pk])
    response = client.post(url, {"form": "raters", "raters": [annotator.pk]})
    assert response.status_code == 400 and list(response.context["raters_form"].errors) == ["raters"]
    assert not Assignment.objects.filter(rater=annotator).exists()


# --- the accepted request: the same campaign from either entry point --------------------------------------------


def _request_from_form(client, world) -> Campaign:
    dataset, clips, systems, admin, raters, _ = world
    client.force_login(admin)
    data = {
        "name": "asked",
        "dataset": dataset.pk,
        "task_type": "pairwise",
        "seed": "5",
        "judgements_per_item": "3",
        "clip_ids": " ".join(clip.external_id for clip in clips[:3]),
        "systems": [systems[0].pk, systems[1].pk],
        "count_hc": "2",
        "count_hi": "1",
        "count_mm": "2",
        "gold_from_hi": "on",
        "raters": [rater.pk for rater in raters],
    }
    response = client.post(reverse("ratings:campaign_create"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Campaign.objects.get(name="asked")


def _request_from_api(client, world) -> Campaign:
    dataset, clips, systems, _, raters, _ = world
    data = {
        "name": "asked",
        "dataset": dataset.name,
        "task_type": "pairwise",
        "seed": 5,
        "judgements_per_item": 3,
        "clip_ids": [clip.external_id for clip in clips[:3]],
        "systems": [systems[0].name, systems[1].name],
        "count_hc": 2,
        "count_hi": 1,
        "count_mm": 2,
        "gold_from_hi": True,
        "raters": [rater.username for rater in raters],
    }
    response = _api(world).post("/api/campaigns/", data, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["pair_count"], body["assignment_count"], body["judgements_per_item"]) == (5, 3, 3)
    return Campaign.objects.get(pk=body["id"])


@pytest.mark.parametrize("request_campaign", [_request_from_form, _request_from_api], ids=["form", "api"])
def test_a_sound_request_builds_pairs_donors_and_shares(client, world, request_campaign):
    _, clips, _, _, raters, _ = world
    campaign = request_campaign(client, world)
    assert (campaign.task_type, campaign.seed, campaign.judgements_per_item) == ("pairwise", 5, 3)
    assert Counter(campaign.pairs.values_list("split", flat=True)) == {"HC": 2, "HI": 1, "MM": 2}
    assert set(campaign.pairs.values_list("clip_id", flat=True)) <= {clip.pk for clip in clips[:3]}
    hi = campaign.pairs.get(split="HI")
    # Donor planning: the HI pair's foreign caption comes from the clip nobody named, which no rater hears.
    assert (hi.gold_choice, hi.caption_b.copied_from.clip_id) == ("a", clips[3].pk)
    items = AssignmentItem.objects.filter(assignment__campaign=campaign)
    assert not items.filter(clip=clips[3]).exists()
    assert sorted(campaign.assignments.values_list("rater__username", flat=True)) == [r.username for r in raters]
    assert Counter(items.values_list("pair_id", flat=True)) == {pair.pk: 3 for pair in campaign.pairs.all()}


def test_api_builds_a_thumbs_campaign_of_the_named_clips_and_systems(world):
    dataset, clips, systems, _, raters, _ = world
    data = {
        "name": "scores",
        "dataset": dataset.name,
        "task_type": "thumbs",
        "judgements_per_item": 1,
        "clip_ids": [clips[1].external_id],
        "systems": [systems[2].name],
        "human_captions_per_clip": 1,
        "raters": [raters[0].username],
    }
    response = _api(world).post("/api/campaigns/", data, format="json")
    assert response.status_code == 201, response.content
    campaign = Campaign.objects.get(pk=response.json()["id"])
    captions = list(campaign.captions.order_by("author_kind"))
    assert [(caption.clip_id, caption.author_kind) for caption in captions] == [
        (clips[1].pk, "human"),
        (clips[1].pk, "machine"),
    ]
    assert captions[1].system == systems[2]
    assert list(AssignmentItem.objects.filter(assignment__campaign=campaign).values_list("clip_id", flat=True)) == [
        clips[1].pk
    ]


# --- all or nothing ----------------------------------------------------------------------------------------------


def test_api_campaign_creation_is_atomic(world, monkeypatch):
    """A failure at the last step of setup (the raters' shares, after the campaign, its pairs and the HI copies
    were written) leaves nothing: no campaign, pair, caption copy or assignment."""
    _, clips, _, _, _, _ = world

    def late_failure(**_):
        raise CampaignSetupError("late failure")

    monkeypatch.setattr(campaigns_module, "campaign_add_raters", late_failure)
    before = _written()
    errors = _api_errors(world, count_hc=2, count_hi=1, clip_ids=[clip.external_id for clip in clips[:3]])
    assert errors == {"non_field_errors": ["late failure"]}
    assert _written() == before

    def crash(**_):
        raise RuntimeError("crash")

    monkeypatch.setattr(campaigns_module, "campaign_add_raters", crash)
    with pytest.raises(RuntimeError, match="crash"):
        _api(world).post(
            "/api/campaigns/",
            {"name": "asked", "dataset": "demo", "task_type": "pairwise", "count_hi": 1, "judgements_per_item": 3,
             "raters": ["r0", "r1", "r2"], "clip_ids": [clip.external_id for clip in clips[:3]]},
            format="json",
        )  # fmt: skip
    assert _written() == before
    monkeypatch.undo()
    # Control: the same request, nothing failing, writes the campaign and its pairs.
    _api(world).post(
        "/api/campaigns/",
        {"name": "asked", "dataset": "demo", "task_type": "pairwise", "count_hi": 1, "judgements_per_item": 3,
         "raters": ["r0", "r1", "r2"], "clip_ids": [clip.external_id for clip in clips[:3]]},
        format="json",
    )  # fmt: skip
    after = _written()
    assert (after["campaigns"], after["pairs"], after["captions"]) == (1, before["pairs"] + 1, before["captions"] + 1)
