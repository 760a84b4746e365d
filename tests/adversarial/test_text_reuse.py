"""Attack: recognise an HI pair by its text, because the "incorrect" caption is one the rater met elsewhere.

Against the old main an HI pair's foreign caption was another clip's human caption that the same rater also
saw on that other clip's item (in the same campaign, or in a THumBS campaign on the dataset), so the gold
item was recognisable by its text. Here the rater collects every caption text shown on any of their items in
every study (API, pages and workbook alike give the same texts) and flags each pair one of whose texts also
appears on another item: no HI pair may be flagged. Campaigns that cannot guarantee this say so.
"""

import re

import pytest

from corpus.models import Caption, Clip
from ratings.models import AssignmentItem, Campaign
from ratings.services.campaigns import CampaignSetupError, campaign_add_raters, campaign_setup
from tests.ratings.campaign_data import corpus_build, headphone_pass_give
from tests.ratings.rater_api import api_rows, rater_client

pytestmark = pytest.mark.django_db


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _attack(rater) -> set[tuple[str, str]]:
    """(pair token, text) for every text of a pair that the rater also saw on an item of another clip.

    Which items play the same clip the rater tells by ear (here: the server's clip of each item), so a text
    met again on another clip's item marks it as borrowed from that clip: HI's tell-tale.
    """
    items = api_rows(rater_client(rater), "/api/assignment-items/")
    clip_of = dict(
        AssignmentItem.objects.filter(token__in=[row["token"] for row in items]).values_list("token", "clip_id")
    )
    texts_by_clip: dict[int, set[str]] = {}
    for row in items:
        texts_by_clip.setdefault(clip_of[row["token"]], set()).update(_normal(c["text"]) for c in row["captions"])
    flagged = set()
    for row in items:
        if row["task_type"] != "pairwise":
            continue
        elsewhere = set().union(*(texts for clip, texts in texts_by_clip.items() if clip != clip_of[row["token"]]))
        flagged |= {(row["token"], _normal(c["text"])) for c in row["captions"] if _normal(c["text"]) in elsewhere}
    return flagged


def _foreign_texts(campaign) -> set[tuple[str, str]]:
    """(item token, foreign text) of every HI item of the campaign: what the attack must never find."""
    return {
        (token, _normal(text))
        for token, text in AssignmentItem.objects.filter(assignment__campaign=campaign, pair__split="HI").values_list(
            "token", "pair__caption_b__text"
        )
    }


def test_no_hi_pair_shares_a_text_with_anything_else_the_rater_sees(make_user, repeatable_secrets):
    dataset, clips, systems = corpus_build(name="reuse", clip_count=14, reference_count=4)
    # Texts that repeat across clips, as real datasets have ("a dog barks"): must not make an HI pair stand out.
    for clip in clips[::3]:
        Caption.objects.filter(clip=clip, position=3).update(text="A dog barks.")
    raters = [make_user(f"reuser-{number}", "rater") for number in range(3)]
    for rater in raters:
        headphone_pass_give(rater)
    campaign_setup(
        name="reuse-thumbs",
        dataset=dataset,
        clips=clips[6:12],  # every human caption of these clips is shown to the raters
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=4,
        judgements_per_item=3,
        raters=raters,
    )
    pairwise = campaign_setup(
        name="reuse-pairs",
        dataset=dataset,
        clips=clips[:6],  # the other clips could give HI pairs their other caption, but 6-11 are known
        task_type="pairwise",
        split_counts={"HC": 4, "HI": 6, "HM": 4, "MM": 4},
        gold_from_hi=True,
        judgements_per_item=3,
        raters=raters,
    )
    foreign = _foreign_texts(pairwise)
    assert len(foreign) == 6 * 3
    found = set()
    for rater in raters:
        found |= _attack(rater)
    assert not found & foreign, "an HI pair's borrowed caption is recognisable: the rater met it elsewhere"
    # Where the foreign captions come from: clips none of the raters has as items.
    donors = set(pairwise.pairs.filter(split="HI").values_list("caption_b__copied_from__clip_id", flat=True))
    rated = set(AssignmentItem.objects.filter(assignment__rater__in=raters).values_list("clip_id", flat=True))
    assert donors and not donors & rated


def test_the_attack_works_when_the_foreign_caption_comes_from_a_rated_clip(make_user, repeatable_secrets):
    """The control: an HI pair whose other caption is a rated clip's (as the old generator made) is found."""
    dataset, clips, _ = corpus_build(name="reuse-old", clip_count=6, reference_count=3)
    rater = make_user("old-reuser", "rater")
    headphone_pass_give(rater)
    pairwise = campaign_setup(
        name="reuse-old-pairs",
        dataset=dataset,
        clips=clips[:4],
        task_type="pairwise",
        split_counts={"HC": 4, "HI": 2},
        gold_from_hi=True,
        judgements_per_item=1,
        raters=[rater],
    )
    for pair in pairwise.pairs.filter(split="HI"):  # what the old generator did: a rated clip's caption
        shown_elsewhere = pairwise.pairs.filter(split="HC").exclude(clip=pair.clip).first().caption_a
        Caption.objects.filter(pk=pair.caption_b_id).update(text=shown_elsewhere.text)
    assert _attack(rater) & _foreign_texts(pairwise) == _foreign_texts(pairwise)


def test_a_rater_who_knows_the_donor_clips_is_refused_with_the_reason(make_user, repeatable_secrets):
    dataset, clips, systems = corpus_build(name="reuse-late", clip_count=10, reference_count=3)
    first, late = make_user("first-rater", "rater"), make_user("late-rater", "rater")
    pairwise = campaign_setup(
        name="late-pairs",
        dataset=dataset,
        clips=clips[:6],
        task_type="pairwise",
        split_counts={"HI": 3},
        gold_from_hi=True,
        judgements_per_item=1,
        raters=[first],
    )
    donors = list(Clip.objects.filter(pk__in=pairwise.pairs.values_list("caption_b__copied_from__clip_id", flat=True)))
    campaign_setup(
        name="late-thumbs",
        dataset=dataset,
        clips=donors,
        task_type="thumbs",
        systems=systems,
        judgements_per_item=1,
        raters=[late],
    )
    with pytest.raises(CampaignSetupError, match="late-rater already rates clips"):
        campaign_add_raters(campaign=pairwise, raters=[late])
    assert not pairwise.assignments.filter(rater=late).exists()
    # The other direction: the first rater's open HI pairs take captions from the donors; a campaign showing
    # those clips cannot take the first rater while the pairwise campaign is open, and can once it is closed.
    other = campaign_setup(
        name="late-thumbs-2", dataset=dataset, clips=donors, task_type="thumbs", systems=systems, judgements_per_item=1
    )
    with pytest.raises(CampaignSetupError, match="first-rater judges HI pairs in an open campaign"):
        campaign_add_raters(campaign=other, raters=[first])
    Campaign.objects.filter(pk=pairwise.pk).update(is_active=False)
    campaign_add_raters(campaign=other, raters=[first])


def test_a_dataset_too_small_for_every_rater_says_how_many_it_can_serve(make_user, repeatable_secrets):
    dataset, clips, systems = corpus_build(name="reuse-small", clip_count=8, reference_count=2)
    raters = [make_user(f"small-{number}", "rater") for number in range(4)]
    # Raters 0 and 1 already rate clips 4-7 (the only clips outside the campaign's), rater 2 clips 4-5.
    campaign_setup(
        name="small-a",
        dataset=dataset,
        clips=clips[4:],
        task_type="thumbs",
        systems=systems,
        judgements_per_item=2,
        raters=raters[:2],
    )
    campaign_setup(
        name="small-b",
        dataset=dataset,
        clips=clips[4:6],
        task_type="thumbs",
        systems=systems,
        judgements_per_item=1,
        raters=raters[2:3],
    )
    with pytest.raises(CampaignSetupError) as refused:
        campaign_setup(
            name="small-pairs",
            dataset=dataset,
            clips=clips[:4],
            task_type="pairwise",
            split_counts={"HI": 4},
            judgements_per_item=1,
            raters=raters,
        )
    message = str(refused.value)
    assert "can serve 2 of the 4 raters (small-3, small-2)" in message, message
    assert not Campaign.objects.filter(name="small-pairs").exists()
