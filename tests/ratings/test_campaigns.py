"""Campaign setup and balanced, per-rater randomized assignments."""

import random
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import Caption
from ratings.models import AssignmentItem, Campaign, CaptionPair
from ratings.services.campaigns import (
    CampaignSetupError,
    assignment_sync_captions,
    balanced_shares,
    campaign_add_raters,
    campaign_create,
    campaign_setup,
)
from tests.ratings.campaign_data import corpus_build, secrets_made_repeatable

pytestmark = pytest.mark.django_db


@pytest.fixture
def repeatable_secrets(monkeypatch):
    """Orders, sides and late caption places come from each assignment's secret order key: seeded here, so a test
    that needs them to vary sees the same draws on every run (by chance they vary too little now and then)."""
    secrets_made_repeatable(monkeypatch, 29)


def _raters(make_user, count: int, prefix: str = "rater"):
    return [make_user(f"{prefix}{index}", "rater") for index in range(count)]


def _coverage(campaign: Campaign) -> Counter:
    items = AssignmentItem.objects.filter(assignment__campaign=campaign)
    if campaign.task_type == Campaign.TaskType.PAIRWISE:
        return Counter(item.pair_id for item in items)
    return Counter(item.clip_id for item in items)


def _loads(campaign: Campaign) -> list[int]:
    return [assignment.items.count() for assignment in campaign.assignments.all()]


@pytest.mark.parametrize("rater_count", [1, 3, 4, 5, 7, 8, 13])
def test_balanced_shares_give_every_item_its_judgements_and_even_loads(rater_count):
    for trial in range(40):
        rng = random.Random(trial)
        needs = {key: rng.randint(0, 6) for key in range(rng.randint(1, 40))}
        shares = balanced_shares(needs=needs, rater_count=rater_count, rng=random.Random(trial))
        assert len(shares) == rater_count
        loads = [len(share) for share in shares]
        assert max(loads) - min(loads) <= 1
        for share in shares:
            assert len(share) == len(set(share)), "an item twice for one rater"
        got = Counter(key for share in shares for key in share)
        assert {key: got[key] for key in needs} == {key: min(need, rater_count) for key, need in needs.items()}


@pytest.mark.parametrize("rater_count,expected_per_pair", [(3, 3), (4, 4), (6, 4), (9, 4)])
def test_raters_added_together_give_each_pair_four_votes_and_even_loads(make_user, rater_count, expected_per_pair):
    dataset, clips, _ = corpus_build(clip_count=7)
    campaign = campaign_setup(
        name="pw",
        dataset=dataset,
        task_type=Campaign.TaskType.PAIRWISE,
        seed=3,
        split_counts={"HC": 7, "HM": 4},
        raters=_raters(make_user, rater_count),
    )
    assert campaign.judgements_per_item == 4
    coverage = _coverage(campaign)
    assert sorted(coverage) == sorted(campaign.pairs.values_list("pk", flat=True))
    assert set(coverage.values()) == {expected_per_pair}
    loads = _loads(campaign)
    assert sum(loads) == 11 * expected_per_pair
    assert max(loads) - min(loads) <= 1


def test_the_old_one_at_a_time_quota_is_fixed_for_a_batch(make_user):
    # Eight raters, four judgements: the previous rule gave the first four raters everything and
    # then more to the next ones, so items got five or more judgements.
    dataset, _, _ = corpus_build(clip_count=10)
    campaign = campaign_setup(
        name="pw8", dataset=dataset, task_type="pairwise", split_counts={"HC": 10}, raters=_raters(make_user, 8)
    )
    assert set(_coverage(campaign).values()) == {4}
    assert sorted(_loads(campaign)) == [5] * 8


def test_each_rater_has_own_order_and_sides(make_user, repeatable_secrets):
    dataset, _, _ = corpus_build(clip_count=12)
    campaign = campaign_setup(
        name="order",
        dataset=dataset,
        task_type="pairwise",
        seed=1,
        split_counts={"HC": 24},
        raters=_raters(make_user, 2),
    )
    orders = [
        list(assignment.items.order_by("position").values_list("pair_id", flat=True))
        for assignment in campaign.assignments.all()
    ]
    assert sorted(orders[0]) == sorted(orders[1])  # two raters, four judgements: both get every pair
    assert orders[0] != orders[1]
    sides = list(AssignmentItem.objects.filter(assignment__campaign=campaign).values_list("a_on_left", flat=True))
    assert 0.25 < sum(sides) / len(sides) < 0.75
    positions = list(campaign.assignments.first().items.values_list("position", flat=True))
    assert sorted(positions) == list(range(1, 25))


def test_thumbs_items_are_clips_with_per_rater_caption_order(make_user, repeatable_secrets):
    dataset, clips, systems = corpus_build(clip_count=8)
    campaign = campaign_setup(
        name="th",
        dataset=dataset,
        task_type=Campaign.TaskType.THUMBS,
        judgements_per_item=2,
        seed=5,
        systems=systems[:2],
        human_captions_per_clip=1,
        raters=_raters(make_user, 3),
    )
    captions = list(campaign.captions.all())
    assert len(captions) == 8 * 3  # two systems and one human caption per clip
    assert Counter(caption.author_kind for caption in captions) == {"machine": 16, "human": 8}
    assert {caption.system_id for caption in captions if caption.system_id} == {systems[0].pk, systems[1].pk}
    coverage = _coverage(campaign)
    assert set(coverage.values()) == {2} and len(coverage) == 8
    assert sorted(_loads(campaign)) == [5, 5, 6]
    orders_by_clip: dict[int, list[list[int]]] = {}
    for item in AssignmentItem.objects.filter(assignment__campaign=campaign):
        expected = set(campaign.captions.filter(clip_id=item.clip_id).values_list("pk", flat=True))
        assert set(item.caption_order) == expected and len(item.caption_order) == 3
        orders_by_clip.setdefault(item.clip_id, []).append(item.caption_order)
    assert any(orders[0] != orders[1] for orders in orders_by_clip.values())


def test_a_rater_added_after_full_coverage_still_gets_the_average_load(make_user):
    dataset, _, _ = corpus_build(clip_count=6)
    campaign = campaign_setup(
        name="late", dataset=dataset, task_type="pairwise", split_counts={"HC": 6}, raters=_raters(make_user, 4)
    )
    assert set(_coverage(campaign).values()) == {4}
    late = make_user("late", "rater")
    campaign_add_raters(campaign=campaign, raters=[late])
    late_items = AssignmentItem.objects.filter(assignment__rater=late)
    assert late_items.count() == 5  # ceil(6 pairs * 4 / 5 raters)
    assert len({item.pair_id for item in late_items}) == 5


def test_adding_a_rater_twice_changes_nothing(make_user):
    dataset, _, _ = corpus_build(clip_count=4)
    rater = make_user("once", "rater")
    campaign = campaign_setup(
        name="twice", dataset=dataset, task_type="pairwise", split_counts={"HC": 4}, raters=[rater]
    )
    before = list(AssignmentItem.objects.filter(assignment__campaign=campaign).values_list("pk", "pair_id", "position"))
    campaign_add_raters(campaign=campaign, raters=[rater, rater])
    after = list(AssignmentItem.objects.filter(assignment__campaign=campaign).values_list("pk", "pair_id", "position"))
    assert before == after


def test_setup_that_cannot_be_satisfied_writes_nothing(make_user):
    dataset, clips, _ = corpus_build(clip_count=2, system_names=("only",))
    with pytest.raises(CampaignSetupError, match="MM pairs"):
        campaign_setup(
            name="short",
            dataset=dataset,
            task_type="pairwise",
            split_counts={"HC": 2, "MM": 1},
            raters=_raters(make_user, 2),
        )
    assert not Campaign.objects.exists()
    assert not CaptionPair.objects.exists()


def test_clips_of_another_dataset_are_refused():
    dataset, _, _ = corpus_build(name="one", clip_count=1)
    _, other_clips, _ = corpus_build(name="two", clip_count=1)
    with pytest.raises(CampaignSetupError, match="not in dataset one"):
        campaign_setup(name="x", dataset=dataset, task_type="thumbs", clips=other_clips)


def test_sync_captions_places_late_captions_at_random_unless_the_item_was_opened(make_user, repeatable_secrets):
    """A late caption (say a newly submitted system's) must not always come last: in items the rater has not
    opened it goes anywhere; in opened ones at the end, so the numbers the rater saw stay the same."""
    dataset, clips, systems = corpus_build(clip_count=12)
    rater = make_user("sync", "rater")
    first_two = [caption for system in systems[:2] for caption in Caption.objects.filter(system=system)]
    campaign = campaign_create(name="sync", dataset=dataset, task_type="thumbs", captions=first_two)
    campaign_add_raters(campaign=campaign, raters=[rater])
    assignment = campaign.assignments.get()
    opened = assignment.items.get(clip=clips[0])
    opened.first_shown_at, before = timezone.now(), list(opened.caption_order)
    opened.save(update_fields=["first_shown_at"])
    late = list(Caption.objects.filter(system=systems[2]))
    campaign.captions.add(*late)
    assignment_sync_captions(assignment=assignment)
    opened.refresh_from_db()
    assert opened.caption_order == [*before, late[0].pk], "opened: appended, earlier numbers kept"
    places = []
    for item in assignment.items.exclude(pk=opened.pk):
        late_id = next(caption.pk for caption in late if caption.clip_id == item.clip_id)
        assert len(item.caption_order) == 3 and late_id in item.caption_order
        places.append(item.caption_order.index(late_id))
    assert len(set(places)) > 1 and places.count(2) < len(places), places


# --- admin pages -------------------------------------------------------------------


def test_campaign_pages_are_for_admins_only(client, make_user):
    client.force_login(make_user("plain-rater", "rater"))
    assert client.get(reverse("ratings:campaign_list")).status_code == 403
    assert client.get(reverse("ratings:campaign_create")).status_code == 403


def test_create_form_builds_the_campaign_and_lists_its_progress(client, make_user):
    dataset, clips, systems = corpus_build(clip_count=4)
    raters = _raters(make_user, 3, prefix="form")
    client.force_login(make_user("admin", staff=True))
    form = client.get(reverse("ratings:campaign_create")).content.decode()
    assert "form0" in form and "sys_a" in form
    data = {
        "name": "from-form",
        "dataset": dataset.pk,
        "task_type": "pairwise",
        "seed": "11",
        "judgements_per_item": "3",
        "title": "Spring study",
        "human_captions_per_clip": "4",  # a THumBS field: hidden for pairwise and ignored
        "clip_ids": f"{clips[0].external_id}, {clips[1].external_id}\n{clips[2].external_id}",
        "systems": [systems[0].pk, systems[1].pk],
        "count_hc": "3",
        "count_hi": "2",
        "count_mm": "3",
        "gold_from_hi": "on",
        "raters": [rater.pk for rater in raters],
    }
    too_many = client.post(reverse("ratings:campaign_create"), {**data, "judgements_per_item": "4"})
    assert too_many.status_code == 400
    assert "4 judgements per item need at least 4 raters (nobody judges an item twice), and 3 are ticked" in (
        too_many.content.decode()
    )
    response = client.post(reverse("ratings:campaign_create"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(name="from-form")
    assert response["Location"] == reverse("ratings:campaign_detail", args=[campaign.pk])
    assert (campaign.seed, campaign.judgements_per_item, campaign.task_type) == (11, 3, "pairwise")
    assert campaign.title == "Spring study" and not campaign.captions.exists()
    assert Counter(campaign.pairs.values_list("split", flat=True)) == {"HC": 3, "HI": 2, "MM": 3}
    assert set(campaign.pairs.values_list("clip_id", flat=True)) <= {clips[0].pk, clips[1].pk, clips[2].pk}
    assert set(campaign.pairs.filter(split="HI").values_list("gold_choice", flat=True)) == {"a"}
    assert set(_coverage(campaign).values()) == {3}
    detail = client.get(response["Location"]).content.decode()
    assert "Campaign from-form created." in detail and "3 of its clips have no audio yet" in detail
    assert "Clips giving the HI pairs their other caption: 1 (not rated in this campaign" in detail
    donor = campaign.pairs.filter(split="HI").values_list("caption_b__copied_from__clip_id", flat=True).first()
    assert donor == clips[3].pk, "the clip the admin did not name"
    listing = client.get(reverse("ratings:campaign_list")).content.decode()
    assert "from-form" in listing and "0 / 24" in listing


def test_create_form_reports_unknown_clips_and_impossible_counts(client, make_user):
    dataset, _, _ = corpus_build(clip_count=2, system_names=("lonely",))
    client.force_login(make_user("admin2", staff=True))
    rater = make_user("solo", "rater")
    base = {"name": "bad", "dataset": dataset.pk, "task_type": "pairwise", "seed": "0", "judgements_per_item": "1"}
    base["raters"] = [rater.pk]
    response = client.post(reverse("ratings:campaign_create"), {**base, "clip_ids": "nope.wav", "count_hc": "1"})
    assert response.status_code == 400 and "not in demo: nope.wav" in response.content.decode()
    response = client.post(reverse("ratings:campaign_create"), {**base, "count_mm": "1"})
    assert response.status_code == 400 and "only 0 MM pairs can be made" in response.content.decode()
    response = client.post(reverse("ratings:campaign_create"), base)
    assert response.status_code == 400 and "at least one split" in response.content.decode()
    assert not Campaign.objects.exists()
