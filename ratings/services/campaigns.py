"""Campaigns and assignments: who judges what, in which order, with which side on the left.

An *item* is a clip for THumBS campaigns (the rater scores every campaign caption of
that clip) and a caption pair for pairwise campaigns. Each item should get
`judgements_per_item` judgements; items are spread over raters so that every rater
gets about the same share, each in an order shuffled per rater.
"""
import math
import random
from collections import Counter

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.models import Caption, Dataset
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair

DEFAULT_JUDGEMENTS = {Campaign.TaskType.PAIRWISE: 4, Campaign.TaskType.THUMBS: 3}


@transaction.atomic
def campaign_create(
    *,
    name: str,
    dataset: Dataset,
    task_type: str,
    seed: int = 0,
    judgements_per_item: int | None = None,
    captions: list[Caption] | None = None,
    pairs: list[CaptionPair] | None = None,
) -> Campaign:
    campaign = Campaign.objects.create(
        name=name,
        dataset=dataset,
        task_type=task_type,
        seed=seed,
        judgements_per_item=judgements_per_item or DEFAULT_JUDGEMENTS[task_type],
    )
    if captions:
        campaign.captions.add(*captions)
    if pairs:
        campaign.pairs.add(*pairs)
    return campaign


def _rater_random(campaign: Campaign, rater: AbstractBaseUser) -> random.Random:
    # Seeded per (campaign, rater) so an assignment can be rebuilt identically.
    return random.Random(f"{campaign.seed}:{campaign.pk}:{rater.pk}")


def campaign_items(campaign: Campaign) -> list:
    """The campaign's items: clips (THumBS, ordered by id) or pairs (pairwise)."""
    if campaign.task_type == Campaign.TaskType.PAIRWISE:
        return list(campaign.pairs.select_related("clip").order_by("pk"))
    clip_ids = campaign.captions.values_list("clip_id", flat=True).distinct()
    return list(campaign.dataset.clips.filter(pk__in=clip_ids).order_by("pk"))


def _item_key(campaign: Campaign, assignment_item: AssignmentItem) -> int:
    return assignment_item.pair_id if campaign.task_type == Campaign.TaskType.PAIRWISE else assignment_item.clip_id


@transaction.atomic
def campaign_add_raters(*, campaign: Campaign, raters: list[AbstractBaseUser]) -> list[Assignment]:
    """Give each new rater a balanced share of the items; raters already assigned are left as they are."""
    items = campaign_items(campaign)
    existing_items = AssignmentItem.objects.filter(assignment__campaign=campaign)
    coverage = Counter(_item_key(campaign, item) for item in existing_items)
    rater_count = campaign.assignments.count()
    assignments = []
    for rater in raters:
        assignment, created = Assignment.objects.get_or_create(campaign=campaign, rater=rater)
        assignments.append(assignment)
        if not created:
            continue
        rater_count += 1
        rng = _rater_random(campaign, rater)
        quota = min(len(items), math.ceil(len(items) * campaign.judgements_per_item / rater_count)) if items else 0
        least_covered = sorted(items, key=lambda item: (coverage[item.pk], rng.random()))[:quota]
        for item in least_covered:
            coverage[item.pk] += 1
        assignment_add_items(assignment=assignment, items=least_covered)
    return assignments


@transaction.atomic
def assignment_add_items(*, assignment: Assignment, items: list) -> list[AssignmentItem]:
    """Append items (clips or pairs) the assignment lacks, shuffled, with per-rater caption order and sides."""
    campaign = assignment.campaign
    is_pairwise = campaign.task_type == Campaign.TaskType.PAIRWISE
    present = {_item_key(campaign, item) for item in assignment.items.all()}
    new_items = [item for item in items if item.pk not in present]
    rng = _rater_random(campaign, assignment.rater)
    rng.shuffle(new_items)
    next_position = (assignment.items.order_by("-position").values_list("position", flat=True).first() or 0) + 1
    caption_ids_by_clip: dict[int, list[int]] = {}
    if not is_pairwise:
        for caption_id, clip_id in campaign.captions.order_by("pk").values_list("pk", "clip_id"):
            caption_ids_by_clip.setdefault(clip_id, []).append(caption_id)
    rows = []
    for offset, item in enumerate(new_items):
        if is_pairwise:
            rows.append(
                AssignmentItem(assignment=assignment, position=next_position + offset, clip_id=item.clip_id, pair=item, a_on_left=rng.random() < 0.5)
            )
        else:
            caption_order = list(caption_ids_by_clip.get(item.pk, []))
            rng.shuffle(caption_order)
            rows.append(AssignmentItem(assignment=assignment, position=next_position + offset, clip=item, caption_order=caption_order))
    return AssignmentItem.objects.bulk_create(rows)


@transaction.atomic
def assignment_sync_captions(*, assignment: Assignment) -> None:
    """Add campaign captions that arrived after the assignment was made to each THumBS item's caption order."""
    campaign = assignment.campaign
    for item in assignment.items.filter(pair__isnull=True):
        wanted = list(campaign.captions.filter(clip_id=item.clip_id).order_by("pk").values_list("pk", flat=True))
        missing = [caption_id for caption_id in wanted if caption_id not in item.caption_order]
        if missing:
            _rater_random(campaign, assignment.rater).shuffle(missing)
            item.caption_order = item.caption_order + missing
            item.save(update_fields=["caption_order"])
