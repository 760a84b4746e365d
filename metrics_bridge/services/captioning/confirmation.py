"""People confirm what the metrics say: a pairwise campaign of a system against the dataset's current best.

The best other system is the one people prefer most so far (highest pairwise win rate, if any system has
votes), else the one the headline metric ranks first: AudioCapBench's LLM judge when it was computed, else
the first of FENSE, SBERT, SPIDEr, CIDEr_D, METEOR with a value, else the leaderboard's first metric with one.
The campaign pairs, on every clip where both
systems have a current caption, the two systems' captions (MM) and each system's caption with one of the
clip's references (HM, one pair per system and clip), and assigns nobody yet: raters are added on its page.
Its title tells raters nothing about the systems (blinding).
"""

from django.db import transaction
from django.utils.text import slugify

from corpus.models import Caption, CaptioningSystem, Dataset
from metrics_bridge.services.evaluation.leaderboard import leaderboard_table
from ratings.models import Campaign, CaptionPair
from ratings.services.campaigns import CampaignSetupError, campaign_create
from ratings.services.pair_generation import PairGenerationError, pairs_generate

HEADLINE_METRICS = ("LLM_JUDGE_3D", "FENSE", "SBERT", "SPIDEr", "CIDEr_D", "METEOR")
RATER_TITLE = "Which caption describes the sound better?"


def best_other_system(*, dataset: Dataset, system: CaptioningSystem) -> tuple[CaptioningSystem, str]:
    """(the best other system of the dataset, why it counts as the best). CampaignSetupError when there is none."""
    table = leaderboard_table(dataset=dataset)
    others = [row for row in table["systems"] if row["system"] != system.name]
    if not others:
        raise CampaignSetupError(f"{system.name} is the only captioning system of {dataset.name}: nothing to compare")
    voted = [row for row in others if row["human"]["pairwise_win_rate"] is not None]
    if voted:
        best = max(voted, key=lambda row: (row["human"]["pairwise_win_rate"], row["system"]))
        basis = f"highest human pairwise win rate ({best['human']['pairwise_win_rate']:.3f})"
    else:
        candidates = [*HEADLINE_METRICS, *(name for name in table["rank_agreement"] if name not in HEADLINE_METRICS)]
        metric = next(
            (name for name in candidates if any(row["metrics"].get(name) is not None for row in others)), None
        )
        if metric is None:
            raise CampaignSetupError(
                f"no other system of {dataset.name} has votes or a score yet: compute the leaderboard first"
            )
        best = max(
            (row for row in others if row["metrics"].get(metric) is not None),
            key=lambda row: (row["metrics"][metric], row["system"]),
        )
        basis = f"highest {metric} ({best['metrics'][metric]:.4f}), no human votes yet"
    return CaptioningSystem.objects.get(name=best["system"]), basis


def _campaign_name(system: CaptioningSystem, best: CaptioningSystem) -> str:
    stem = slugify(f"confirm {system.name} vs {best.name}")[:88] or "confirm"
    taken = set(Campaign.objects.filter(name__startswith=stem).values_list("name", flat=True))
    if stem not in taken:
        return stem
    number = 2
    while f"{stem}-{number}" in taken:
        number += 1
    return f"{stem}-{number}"


@transaction.atomic
def confirmation_campaign_create(
    *, dataset: Dataset, system: CaptioningSystem, judgements_per_item: int = 3, seed: int = 0
) -> tuple[Campaign, CaptioningSystem, str]:
    """(the new pairwise campaign, the system it is compared with, why that one). CampaignSetupError when the
    two systems share no clip; nothing is written then."""
    best, basis = best_other_system(dataset=dataset, system=system)
    current = Caption.objects.filter(clip__dataset=dataset, role=Caption.Role.CANDIDATE, superseded_at__isnull=True)
    mine = set(current.filter(system=system).values_list("clip_id", flat=True))
    theirs = set(current.filter(system=best).values_list("clip_id", flat=True))
    shared = sorted(mine & theirs)
    if not shared:
        raise CampaignSetupError(f"{system.name} and {best.name} have no clip of {dataset.name} in common")
    clips = list(dataset.clips.filter(pk__in=shared).order_by("pk"))
    with_references = {
        clip_id
        for clip_id in Caption.objects.filter(clip_id__in=shared, role=Caption.Role.REFERENCE).values_list(
            "clip_id", flat=True
        )
    }
    campaign = campaign_create(
        name=_campaign_name(system, best),
        dataset=dataset,
        task_type=Campaign.TaskType.PAIRWISE,
        seed=seed,
        judgements_per_item=judgements_per_item,
        title=RATER_TITLE,
    )
    pairs: list[CaptionPair] = []
    try:
        pairs += _all_possible(clips, CaptionPair.Split.MM, [system, best], seed, f"campaign-{campaign.pk}-mm")
        for side, chosen in (("new", system), ("best", best)):
            eligible = [clip for clip in clips if clip.pk in with_references]
            pairs += _all_possible(eligible, CaptionPair.Split.HM, [chosen], seed, f"campaign-{campaign.pk}-hm-{side}")
    except PairGenerationError as error:
        raise CampaignSetupError(str(error)) from None
    if not pairs:
        raise CampaignSetupError(f"no pair can be made: {system.name} and {best.name} wrote the same captions")
    campaign.pairs.add(*pairs)
    return campaign, best, basis


def _all_possible(clips, split: str, systems, seed: int, key_prefix: str) -> list[CaptionPair]:
    """One pair of the split per clip where one can be made (identical texts cannot be paired)."""
    for count in range(len(clips), 0, -1):
        try:
            return pairs_generate(clips=clips, counts={split: count}, seed=seed, key_prefix=key_prefix, systems=systems)
        except PairGenerationError:
            continue
    return []
