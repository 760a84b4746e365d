"""Quality control on hand-made data: agreement, deviation, straight-lining, gold, time, exclusion."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from ratings.models import AssignmentItem, PairwiseVote, ThumbsRating
from ratings.services.campaigns import campaign_setup
from ratings.services.quality import (
    Straightlining,
    campaign_rater_exclude,
    campaign_rater_quality,
    deviation_from_others,
    majority_agreement,
    straightlining,
)
from tests.ratings.campaign_data import corpus_build


def test_majority_agreement_by_hand():
    answers = {
        "p1": {"x": "a", "y": "a", "z": "a", "w": "b"},
        "p2": {"x": "b", "y": "b", "z": "none"},  # for y: others b/none tie -> skipped; for x: tie -> skipped
        "p3": {"x": "a", "y": "b"},  # one other each
    }
    result = majority_agreement(answers)
    # x: p1 (others y,z,w = a,a,b -> a) agrees; p2 others (y,z = b,none) tie; p3 others (y = b) disagrees.
    # y: p1 (x,z,w = a,a,b -> a) agrees; p2 tie (x,z = b,none); p3 (x = a) disagrees.
    # z: p1 (x,y,w = a,a,b -> a) agrees; p2 (x,y = b,b -> b) disagrees with none.
    # w: p1 (x,y,z = a,a,a) disagrees.
    assert result == {"x": (1, 2), "y": (1, 2), "z": (1, 2), "w": (0, 1)}


def test_majority_agreement_leaves_excluded_raters_out_of_the_majority():
    answers = {"p1": {"x": "a", "y": "b", "z": "b"}}
    assert majority_agreement(answers)["x"] == (0, 1)
    # With y and z excluded, x has no others; y and z are each compared with x alone.
    assert majority_agreement(answers, excluded={"y", "z"}) == {"y": (0, 1), "z": (0, 1)}
    result = majority_agreement(answers, excluded={"y"})
    assert result["x"] == (0, 1)  # only z left as "others": b
    assert result["z"] == (0, 1)  # x alone: a


def test_deviation_from_others_by_hand():
    scores = {
        "c1": {"x": 4.0, "y": 2.0, "z": 3.0},
        "c2": {"x": 1.0, "y": 3.0},
        "c3": {"x": 5.0, "y": 5.0, "z": 4.0},
        "c4": {"x": 2.0},
    }
    result = deviation_from_others(scores)
    # x vs others' mean: c1 |4 - 2.5| = 1.5, c2 |1 - 3| = 2, c3 |5 - 4.5| = 0.5 -> mean 4/3.
    assert result["x"].mean_absolute_difference == pytest.approx(4 / 3)
    assert result["x"].compared == 3
    assert result["x"].correlation == pytest.approx(0.5)  # by hand: 2.1667 / sqrt(8.6667 * 2.1667)
    # z: c1 |3 - 3| = 0, c3 |4 - 5| = 1 -> 0.5; only two captions: no correlation.
    assert result["z"].mean_absolute_difference == pytest.approx(0.5)
    assert result["z"].correlation is None
    assert "x" in result and deviation_from_others(scores, excluded={"y", "z"}).get("x") is None


def test_straightlining_by_hand():
    assert straightlining(["left", "left", "right", "left", "left", "left"]) == Straightlining(
        repeat_share=3 / 5, longest_run=3, all_same=False
    )
    assert straightlining(["a", "a", "a"]) == Straightlining(repeat_share=1.0, longest_run=3, all_same=True)
    assert straightlining(["a"]) == Straightlining(repeat_share=None, longest_run=1, all_same=False)
    assert straightlining([]) == Straightlining(repeat_share=None, longest_run=0, all_same=False)


@pytest.fixture
def pairwise_campaign(make_user):
    dataset, _, _ = corpus_build(clip_count=4)
    raters = [make_user(name, "rater") for name in ("ann", "bob", "cat", "dan")]
    campaign = campaign_setup(
        name="qc",
        dataset=dataset,
        task_type="pairwise",
        seed=2,
        split_counts={"HI": 2, "HC": 2},
        gold_from_hi=True,
        raters=raters,
    )
    return campaign, raters


def _vote_all(campaign, rater, choose, *, seconds: list[float]):
    """Complete the rater's items in order with `choose(pair, item)`; item k takes seconds[k]."""
    start = timezone.now() - timedelta(hours=1)
    for index, item in enumerate(
        AssignmentItem.objects.filter(assignment__campaign=campaign, assignment__rater=rater).order_by("position")
    ):
        choice = choose(item.pair, item)
        PairwiseVote.objects.create(
            rater=rater, pair=item.pair, campaign=campaign, choice=choice, left_side="a" if item.a_on_left else "b"
        )
        shown = start + timedelta(minutes=index)
        AssignmentItem.objects.filter(pk=item.pk).update(
            first_shown_at=shown, completed_at=shown + timedelta(seconds=seconds[index]), seconds_spent=seconds[index]
        )


@pytest.mark.django_db
def test_pairwise_quality_figures(pairwise_campaign):
    campaign, (ann, bob, cat, dan) = pairwise_campaign
    assert campaign.assignments.get(rater=ann).items.count() == 4  # four raters, four votes per pair
    _vote_all(campaign, ann, lambda pair, item: "a", seconds=[10, 20, 30, 40])
    _vote_all(campaign, bob, lambda pair, item: "a", seconds=[5, 5, 5, 5])
    _vote_all(campaign, cat, lambda pair, item: "a" if pair.split == "HI" else "b", seconds=[1, 2, 3, 4])
    # dan always picks the left caption: straight-lining by side, and wrong on gold when b is on the left.
    _vote_all(campaign, dan, lambda pair, item: "a" if item.a_on_left else "b", seconds=[7, 8, 9, 100])
    rows = {row.username: row for row in campaign_rater_quality(campaign=campaign)}
    assert rows["ann"].median_seconds == 25 and rows["dan"].median_seconds == 8.5
    assert (rows["ann"].completed, rows["ann"].assigned) == (4, 4)
    assert (rows["ann"].gold_passed, rows["ann"].gold_compared) == (2, 2)
    assert (rows["cat"].gold_passed, rows["cat"].gold_compared) == (2, 2)
    dan_left_a = AssignmentItem.objects.filter(assignment__rater=dan, pair__split="HI", a_on_left=True).count()
    assert rows["dan"].gold_passed == dan_left_a
    assert rows["dan"].straightlining.all_same and rows["dan"].straightlining.repeat_share == 1.0
    votes = {}
    for vote in PairwiseVote.objects.all():
        votes.setdefault(vote.pair_id, {})[vote.rater.username] = vote.choice
    expected = majority_agreement(votes)
    for name in ("ann", "bob", "cat", "dan"):
        agreeing, compared = expected[name]
        assert rows[name].agreement_compared == compared
        assert rows[name].agreement == (agreeing / compared if compared else None)
    assert rows["ann"].agreement is not None and not rows["ann"].is_excluded


@pytest.mark.django_db
def test_exclusion_changes_the_others_and_the_reports_but_keeps_data(pairwise_campaign):
    campaign, (ann, bob, cat, dan) = pairwise_campaign
    _vote_all(campaign, ann, lambda pair, item: "a", seconds=[1] * 4)
    _vote_all(campaign, bob, lambda pair, item: "a", seconds=[1] * 4)
    _vote_all(campaign, cat, lambda pair, item: "b", seconds=[1] * 4)
    _vote_all(campaign, dan, lambda pair, item: "b", seconds=[1] * 4)
    before = {row.username: row.agreement for row in campaign_rater_quality(campaign=campaign)}
    assert before["ann"] == 0.0  # others: bob a, cat b, dan b -> majority b
    campaign_rater_exclude(campaign=campaign, rater=dan, excluded=True)
    after = {row.username: row for row in campaign_rater_quality(campaign=campaign)}
    assert after["dan"].is_excluded
    assert after["ann"].agreement is None  # others now bob a, cat b: tie, nothing compared
    assert after["cat"].agreement == 0.0  # others ann a, bob a
    assert PairwiseVote.objects.filter(rater=dan).count() == 4
    campaign_rater_exclude(campaign=campaign, rater=dan, excluded=False)
    again = {row.username: row for row in campaign_rater_quality(campaign=campaign)}
    assert not again["dan"].is_excluded and again["ann"].agreement == 0.0  # back in: majority b again


@pytest.mark.django_db
def test_thumbs_quality_figures(make_user):
    dataset, _, systems = corpus_build(clip_count=3)
    raters = [make_user(name, "rater") for name in ("eve", "fay", "gus")]
    campaign = campaign_setup(
        name="tq", dataset=dataset, task_type="thumbs", systems=systems[:1], judgements_per_item=3, raters=raters
    )
    # eve scores 4/4, fay 2/2, gus 3/3 on every caption: each overall is constant per rater.
    for rater, score in zip(raters, (4, 2, 3), strict=True):
        for item in campaign.assignments.get(rater=rater).items.all():
            for caption_id in item.caption_order:
                ThumbsRating.objects.create(
                    rater=rater,
                    caption_id=caption_id,
                    campaign=campaign,
                    precision=score,
                    recall=score,
                    fluency=Decimal("0"),
                )
            AssignmentItem.objects.filter(pk=item.pk).update(completed_at=timezone.now(), seconds_spent=12)
    rows = {row.username: row for row in campaign_rater_quality(campaign=campaign)}
    assert rows["eve"].mean_absolute_difference == pytest.approx(1.5)  # 4 vs mean(2, 3)
    assert rows["fay"].mean_absolute_difference == pytest.approx(1.5)  # 2 vs mean(4, 3)
    assert rows["gus"].mean_absolute_difference == pytest.approx(0.0)
    assert rows["eve"].correlation is None  # constant scores
    assert rows["eve"].straightlining.all_same and rows["eve"].straightlining.longest_run == 3
    assert rows["eve"].median_seconds == 12


@pytest.mark.django_db
def test_quality_page_is_for_admins_and_the_exclude_button_works(client, make_user, pairwise_campaign):
    campaign, (ann, *_rest) = pairwise_campaign
    url = reverse("ratings:campaign_quality", args=[campaign.pk])
    client.force_login(ann)
    assert client.get(url).status_code == 403
    assert (
        client.post(
            reverse("ratings:campaign_rater_exclusion", args=[campaign.pk, ann.pk]), {"excluded": "1"}
        ).status_code
        == 403
    )
    client.force_login(make_user("admin1", staff=True))
    html = client.get(url).content.decode()
    assert "ann" in html and "Gold passed" in html and "Exclude" in html
    response = client.post(reverse("ratings:campaign_rater_exclusion", args=[campaign.pk, ann.pk]), {"excluded": "1"})
    assert response.status_code == 302
    assert list(campaign.excluded_raters.all()) == [ann]
    assert "include again" in client.get(url).content.decode()
