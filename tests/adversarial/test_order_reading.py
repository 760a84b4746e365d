"""Attack: read which items are gold, or which caption is human, from the order of the rater's own lists.

Against the old main: `GET /api/pairwise-votes/?study=N` listed votes by pair id, and pairs were generated
split by split, so rows 5-8 of 16 were the HI (gold) pairs; `GET /api/thumbs-ratings/` listed each item's
captions by id, so the human caption came first. A rater voted quickly, read the order, then used "change my
answer" on the gold items. Here three raters try it; their guesses must do no better than chance.
"""

from collections import Counter

import pytest

from corpus.models import Caption
from ratings.models import AssignmentItem, campaign_rater_code
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import CaptionScores, pairwise_item_submit, thumbs_item_submit
from tests.ratings.campaign_data import corpus_build, headphone_pass_give, listened_give
from tests.ratings.rater_api import api_rows, rater_client

pytestmark = pytest.mark.django_db

RATERS = 3


@pytest.fixture
def voted(make_user, repeatable_secrets):
    dataset, clips, systems = corpus_build(
        name="attack-order", clip_count=16, reference_count=3, system_names=[f"attack-order-{n}" for n in range(4)]
    )
    raters = [make_user(f"order-attacker-{number}", "rater") for number in range(RATERS)]
    for rater in raters:
        headphone_pass_give(rater)
    pairwise = campaign_setup(
        name="attack-pairs",
        dataset=dataset,
        clips=clips[:12],
        task_type="pairwise",
        split_counts={"HC": 4, "HI": 4, "HM": 4, "MM": 4},
        gold_from_hi=True,
        judgements_per_item=RATERS,
        raters=raters,
    )
    thumbs = campaign_setup(
        name="attack-thumbs",
        dataset=dataset,
        clips=clips[:12],
        task_type="thumbs",
        systems=systems,
        human_captions_per_clip=1,
        judgements_per_item=RATERS,
        raters=raters,
    )
    for rater in raters:
        for item in AssignmentItem.objects.filter(assignment__rater=rater):
            item = listened_give(item)
            if item.pair_id:
                pairwise_item_submit(item=item, side="none", seen_version=0)
            else:
                scores = [
                    CaptionScores(caption_id=caption_id, precision=3, recall=3) for caption_id in item.caption_order
                ]
                thumbs_item_submit(item=item, scores=scores, synthesized="no", seen_version=0)
    return pairwise, thumbs, raters


def test_reading_gold_items_off_the_vote_order_fails(voted):
    pairwise, _, raters = voted
    hits = guesses = 0
    for rater in raters:
        rows = api_rows(rater_client(rater), "/api/pairwise-votes/", study=campaign_rater_code(pairwise.pk))
        assert len(rows) == 16, "the rater sees every vote (the attack has its data)"
        # The attacker's rule: pairs were made HC, HI, HM, MM in turn, so rows 5-8 are the gold HI pairs.
        guessed = [row["item"] for row in rows[4:8]]
        gold = set(
            AssignmentItem.objects.filter(token__in=[row["item"] for row in rows], pair__gold_choice="a").values_list(
                "token", flat=True
            )
        )
        assert len(gold) == 4
        hits += len(set(guessed) & gold)
        guesses += len(guessed)
    rate = hits / guesses
    print(f"\ngold guessed from the vote order: {hits} of {guesses} ({rate:.2f}; chance 0.25)")
    # Chance is 0.25 (4 gold items among 16); the old order gave 1.0. Above 0.6 by chance: under 0.3 %.
    assert rate <= 0.6, "the order tells the gold items"


def test_reading_the_human_caption_off_the_rating_order_fails(voted):
    _, thumbs, raters = voted
    hits = items = 0
    shapes = Counter()  # (captions, human captions, number listed first) per item: what chance is for the guess
    for rater in raters:
        rows = api_rows(rater_client(rater), "/api/thumbs-ratings/", study=campaign_rater_code(thumbs.pk))
        first_of_item = {}
        for row in rows:
            first_of_item.setdefault(row["item"], row["caption"])
        # The attacker's rule: the first caption listed for an item is the human one.
        for token, number in first_of_item.items():
            item = AssignmentItem.objects.get(token=token)
            caption = Caption.objects.get(pk=item.caption_order[number - 1])
            hits += caption.author_kind == "human"
            items += 1
            humans = Caption.objects.filter(pk__in=item.caption_order, author_kind="human").count()
            shapes[(len(item.caption_order), humans, number)] += 1
    rate = hits / items
    print(f"\nhuman caption guessed as the first listed: {hits} of {items} ({rate:.2f}; chance 0.20)")
    # Chance is 0.2 (one human caption among five); the old order gave 1.0. Above 0.45 by chance: under 0.1 %.
    assert items == RATERS * 12 and rate <= 0.45, f"(captions, human captions, first number listed): {dict(shapes)}"
