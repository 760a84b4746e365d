"""Where the foreign caption of an HI pair may come from, so that no rater can recognise it.

An HI pair sets a caption of the pair's clip against a caption written for another clip (the "foreign"
one, copied onto the pair's clip). If a rater knows that other clip's captions, because the other clip
is one of their items in this or another campaign on the dataset, or the same text was shown to them as
an item's caption, the HI pair (a gold item, often) is recognisable by its text alone, without
listening. So, by construction:

- foreign captions come from *donor clips*, which are never items of the campaign (for anybody);
- donor clips are none of the clips any of the campaign's raters has as items in any campaign on the
  dataset, and no foreign text (compared trimmed, case- and space-insensitively) is a text shown to one
  of them, or a caption text of the campaign's own clips; each foreign caption is used once;
- a rater added to any campaign later is refused (with the reason) when either direction would break:
  the campaign's donors or foreign texts are known to them, or the campaign's items would show them a
  clip or a text an HI pair of theirs in an open campaign takes its foreign caption from.

Where the dataset cannot supply enough unseen foreign captions for every rater, campaign creation says
how many of its raters it can serve (`DonorShortageError`).
"""

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from corpus.models import Caption, Clip, Dataset
from ratings.models import AssignmentItem, Campaign, CaptionPair

# The share of a campaign's clips set aside as donors when the admin did not name the clips.
DONOR_SHARE = 4  # one clip in four, at most one donor per HI pair


class DonorShortageError(ValueError):
    """The dataset cannot supply unseen foreign captions (message says how many raters it can serve)."""


def text_key(text: str) -> str:
    """How texts are compared: trimmed, case-insensitive, runs of spaces as one."""
    return re.sub(r"\s+", " ", text).strip().casefold()


@dataclass
class Exposure:
    """What one rater has been given on one dataset."""

    clip_ids: set[int] = field(default_factory=set)  # clips of their items, any campaign
    texts: set[str] = field(default_factory=set)  # text keys of captions shown on their items
    open_donor_clip_ids: set[int] = field(default_factory=set)  # donors of their HI items in open campaigns
    open_foreign_texts: set[str] = field(default_factory=set)
    open_gold_clip_ids: set[int] = field(default_factory=set)  # clips of their gold items in open campaigns


def rater_exposure(*, rater, dataset: Dataset, exclude_campaign: Campaign | None = None) -> Exposure:
    """The clips and caption texts `rater` has items of on `dataset` (all campaigns but `exclude_campaign`)."""
    items = AssignmentItem.objects.filter(assignment__rater=rater, assignment__campaign__dataset=dataset)
    if exclude_campaign is not None:
        items = items.exclude(assignment__campaign=exclude_campaign)
    exposure = Exposure()
    caption_ids: set[int] = set()
    hi_pairs: list[tuple[int, bool]] = []
    rows = items.values_list("clip_id", "caption_order", "pair_id", "assignment__campaign__is_active")
    for clip_id, caption_order, pair_id, is_active in rows:
        exposure.clip_ids.add(clip_id)
        caption_ids.update(caption_order or [])
        if pair_id is not None:
            hi_pairs.append((pair_id, is_active))
    pair_rows = CaptionPair.objects.filter(pk__in={pair_id for pair_id, _ in hi_pairs}).values_list(
        "pk", "split", "caption_a_id", "caption_b_id", "caption_b__copied_from__clip_id", "caption_b__text",
        "clip_id", "gold_choice",
    )  # fmt: skip
    open_pairs = {pair_id for pair_id, is_active in hi_pairs if is_active}
    for pair_id, split, caption_a_id, caption_b_id, donor_clip_id, foreign_text, clip_id, gold in pair_rows:
        caption_ids.update((caption_a_id, caption_b_id))
        if gold and pair_id in open_pairs:
            exposure.open_gold_clip_ids.add(clip_id)
        if split == CaptionPair.Split.HI and pair_id in open_pairs:
            if donor_clip_id is not None:
                exposure.open_donor_clip_ids.add(donor_clip_id)
            exposure.open_foreign_texts.add(text_key(foreign_text))
    shown = Caption.objects.filter(pk__in=caption_ids).values_list("text", flat=True)
    exposure.texts = {text_key(text) for text in shown}
    return exposure


# --- Choosing donors when a campaign is made ----------------------------------------------------------------


@dataclass
class DonorPlan:
    item_clips: list[Clip]
    donor_clips: list[Clip]
    excluded_texts: set[str]  # foreign texts must not be any of these


def _corpus_texts(clip_ids) -> tuple[dict[int, list[Caption]], dict[int, set[str]]]:
    """References by clip (the possible foreign captions) and every caption text key by clip, in one query."""
    references: dict[int, list[Caption]] = {}
    texts: dict[int, set[str]] = {}
    for caption in Caption.objects.corpus().filter(clip_id__in=clip_ids).order_by("pk"):
        texts.setdefault(caption.clip_id, set()).add(text_key(caption.text))
        if caption.role == Caption.Role.REFERENCE:
            references.setdefault(caption.clip_id, []).append(caption)
    return references, texts


def donors_plan(
    *,
    dataset: Dataset,
    chosen_clips: Sequence[Clip],
    clips_named: bool,
    hi_count: int,
    raters: Sequence,
    seed: int,
) -> DonorPlan:
    """Split the campaign's clips into items and donors for `hi_count` HI pairs (see the module docstring).

    `clips_named`: the admin named the clips to rate, so donors come from the dataset's other clips;
    otherwise one clip in DONOR_SHARE (more if the HI pairs need them) is set aside as a donor. Raises
    DonorShortageError saying how many of `raters` the dataset can serve when it cannot supply the pairs.
    """
    chosen = list(chosen_clips)
    if hi_count <= 0:
        return DonorPlan(item_clips=chosen, donor_clips=[], excluded_texts=set())
    exposures = {rater.pk: rater_exposure(rater=rater, dataset=dataset) for rater in raters}
    pool = list(dataset.clips.exclude(pk__in=[clip.pk for clip in chosen]).order_by("pk")) if clips_named else chosen
    references, texts = _corpus_texts({clip.pk for clip in [*chosen, *pool]})
    order = list(pool)
    random.Random(f"donors:{seed}").shuffle(order)

    def plan_for(rater_ids) -> DonorPlan | None:
        seen_clips = set().union(*(exposures[rater_id].clip_ids for rater_id in rater_ids))
        seen_texts = set().union(*(exposures[rater_id].texts for rater_id in rater_ids))
        candidates = [clip for clip in order if clip.pk not in seen_clips and references.get(clip.pk)]
        wanted = hi_count if clips_named else min(hi_count, max(1, math.ceil(len(chosen) / DONOR_SHARE)))
        # Texts the campaign's own clips show, counted so that a clip turned donor takes its texts out.
        item_texts = Counter(key for clip in chosen for key in texts.get(clip.pk, ()))
        donors: list[Clip] = []
        for clip in candidates:
            donors.append(clip)
            if not clips_named:
                item_texts.subtract(texts.get(clip.pk, ()))
            if len(donors) < min(wanted, len(candidates)):
                continue
            excluded = seen_texts | {key for key, count in item_texts.items() if count > 0}
            supply = {text_key(caption.text) for donor in donors for caption in references[donor.pk]} - excluded
            donor_ids = {donor.pk for donor in donors}
            items = chosen if clips_named else [each for each in chosen if each.pk not in donor_ids]
            if items and len(supply) >= hi_count:
                return DonorPlan(item_clips=items, donor_clips=list(donors), excluded_texts=excluded)
        return None

    plan = plan_for(list(exposures))
    if plan is not None:
        return plan
    raise DonorShortageError(_shortage_message(hi_count, raters, exposures, plan_for))


def _shortage_message(hi_count: int, raters: Sequence, exposures: dict, plan_for) -> str:
    """Say how many of the raters the dataset can serve (greedily, least exposed raters first)."""
    servable = []
    for rater in sorted(raters, key=lambda rater: (len(exposures[rater.pk].clip_ids), rater.get_username())):
        if plan_for([*(each.pk for each in servable), rater.pk]) is not None:
            servable.append(rater)
    what = (
        f"the {hi_count} HI pairs need {hi_count} captions of other clips that are not rated in this campaign, "
        "that none of its raters has among their items on this dataset and whose texts none of them was shown"
    )
    if not raters:
        return f"{what}: the dataset does not have enough such clips; ask for fewer HI pairs or name fewer clips"
    names = ", ".join(rater.get_username() for rater in servable)
    served = f"{len(servable)} of the {len(raters)} raters" + (f" ({names})" if servable else "")
    return (
        f"{what}: with these raters the dataset can serve {served}; choose fewer raters, fewer HI pairs or fewer "
        "clips to rate"
    )


# --- Checking a rater who joins a campaign -----------------------------------------------------------------


@dataclass
class CampaignExposure:
    """What a campaign can show its raters, and where its HI pairs take their foreign captions from."""

    item_clip_ids: set[int]
    texts: set[str]
    donor_clip_ids: set[int]
    foreign_texts: set[str]


def campaign_exposure(campaign: Campaign) -> CampaignExposure:
    if campaign.task_type == Campaign.TaskType.PAIRWISE:
        pairs = list(campaign.pairs.order_by().values_list("clip_id", "split", "caption_a_id", "caption_b_id"))
        # The captions by id in a query of their own: joined to the pairs (three caption tables, the clip and, for
        # the default ordering, the dataset) PostgreSQL planned nested full scans when its statistics were taken
        # while the tables were still empty, and one call ran for over 16 minutes.
        caption_ids = {caption_id for _, _, a_id, b_id in pairs for caption_id in (a_id, b_id)}
        captions = {
            caption_id: (text, donor_clip_id)
            for caption_id, text, donor_clip_id in Caption.objects.filter(pk__in=caption_ids)
            .order_by()
            .values_list("pk", "text", "copied_from__clip_id")
        }
        hi = [b_id for _, split, _, b_id in pairs if split == CaptionPair.Split.HI]
        return CampaignExposure(
            item_clip_ids={clip_id for clip_id, _, _, _ in pairs},
            texts={text_key(captions[caption_id][0]) for caption_id in caption_ids},
            donor_clip_ids={captions[b_id][1] for b_id in hi if captions[b_id][1] is not None},
            foreign_texts={text_key(captions[b_id][0]) for b_id in hi},
        )
    rows = list(campaign.captions.values_list("clip_id", "text"))
    return CampaignExposure(
        item_clip_ids={clip_id for clip_id, _ in rows},
        texts={text_key(text) for _, text in rows},
        donor_clip_ids=set(),
        foreign_texts=set(),
    )


def rater_conflicts(*, campaign: Campaign, rater, exposure: CampaignExposure | None = None) -> list[str]:
    """Why `rater` cannot join `campaign` without recognising an HI pair's foreign caption ([] if they can)."""
    exposure = exposure or campaign_exposure(campaign)
    known = rater_exposure(rater=rater, dataset=campaign.dataset, exclude_campaign=campaign)
    name = rater.get_username()
    problems = []
    if exposure.donor_clip_ids & known.clip_ids or exposure.foreign_texts & known.texts:
        count = len(exposure.donor_clip_ids & known.clip_ids) + len(exposure.foreign_texts & known.texts)
        problems.append(
            f"{name} already rates clips (or saw caption texts) that this campaign's HI pairs take their other "
            f"caption from ({count} found): they would recognise those pairs"
        )
    if exposure.item_clip_ids & known.open_donor_clip_ids or exposure.texts & known.open_foreign_texts:
        problems.append(
            f"{name} judges HI pairs in an open campaign whose other captions come from clips this campaign "
            "shows: close that campaign first, or leave those clips out"
        )
    return problems
