"""Judgement side of the demo: HC/HM/MM pairs and two small campaigns for the demo rater.

Builds on annotation.services.demo (the `demo` dataset and accounts). Safe to run again:
pairs are generated only when the dataset has no demo pairs yet, campaigns are looked up
by name and raters are added only once.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Caption, Dataset
from ratings.models import Campaign, CaptionPair
from ratings.services.campaigns import campaign_add_raters, campaign_create
from ratings.services.pair_generation import pairs_generate

PAIR_KEY_PREFIX = "demo"
PAIR_COUNTS = {CaptionPair.Split.HC: 3, CaptionPair.Split.HM: 3, CaptionPair.Split.MM: 3}
THUMBS_CAMPAIGN = "demo-thumbs"
PAIRWISE_CAMPAIGN = "demo-pairwise"
# What the demo rater sees instead of the names (which carry the dataset's name).
TITLES = {THUMBS_CAMPAIGN: "Caption quality study", PAIRWISE_CAMPAIGN: "Which caption is better?"}
# THumBS clips: the first few demo clips, each with its first reference and every candidate.
THUMBS_CLIP_COUNT = 4
DEMO_RATER = "rater"


@transaction.atomic
def demo_pairs_ensure(*, dataset: Dataset) -> list[CaptionPair]:
    existing = list(CaptionPair.objects.filter(clip__dataset=dataset, source_key__startswith=f"{PAIR_KEY_PREFIX}-"))
    if existing:
        return existing
    clips = list(dataset.clips.order_by("pk"))
    return pairs_generate(clips=clips, counts=PAIR_COUNTS, seed=7, key_prefix=PAIR_KEY_PREFIX)


def _thumbs_captions(dataset: Dataset) -> list[Caption]:
    clip_ids = list(dataset.clips.order_by("pk").values_list("pk", flat=True)[:THUMBS_CLIP_COUNT])
    # One human reference per clip among the machine captions: raters judge both without knowing which is which.
    references = Caption.objects.corpus().filter(clip_id__in=clip_ids, role=Caption.Role.REFERENCE, position=0)
    candidates = Caption.objects.corpus().filter(clip_id__in=clip_ids, role=Caption.Role.CANDIDATE)
    return list(references) + list(candidates)


@transaction.atomic
def demo_campaigns_ensure(*, dataset: Dataset, pairs: list[CaptionPair]) -> list[Campaign]:
    rater = get_user_model().objects.get(username=DEMO_RATER)
    campaigns = []
    for name, task_type in (
        (THUMBS_CAMPAIGN, Campaign.TaskType.THUMBS),
        (PAIRWISE_CAMPAIGN, Campaign.TaskType.PAIRWISE),
    ):
        campaign = Campaign.objects.filter(name=name).first()
        if campaign is None:
            is_thumbs = task_type == Campaign.TaskType.THUMBS
            campaign = campaign_create(
                name=name,
                dataset=dataset,
                task_type=task_type,
                seed=1,
                judgements_per_item=1,
                captions=_thumbs_captions(dataset) if is_thumbs else None,
                pairs=None if is_thumbs else pairs,
                title=TITLES[name],
            )
        campaign_add_raters(campaign=campaign, raters=[rater])
        campaigns.append(campaign)
    return campaigns
