"""Known-answer checks placed in a share: gold HI pairs (pairwise) under the gold rule, catch captions (THumBS)."""

import random
import re
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce

from common.compiled_reads import CompiledRead
from corpus.models import Caption
from ratings.models import Assignment, AssignmentItem, CaptionPair
from ratings.models_study import AttentionCheck, Study
from ratings.services.study_shares.slots import spread_positions

# Catch captions are drawn from at most this many other clips (the least similar one wins).
CATCH_CANDIDATE_CLIPS = 200
WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class GoldPool:
    pairs: list[CaptionPair]
    used: dict[int, int]  # gold pair -> shares that have it as a check
    donors: dict[int, int]


def _gold_pool_read(campaign_id: int):
    """The campaign's gold pairs, each with the clip of its foreign caption's donor and the shares that have it as a
    check so far (a count per pair, by the database)."""
    uses = (
        AttentionCheck.objects.filter(
            campaign_id=campaign_id, kind=AttentionCheck.Kind.GOLD_PAIR, pair_id=OuterRef("pk")
        )
        .order_by()
        .values("pair_id")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return (
        CaptionPair.objects.filter(campaigns=campaign_id)
        .exclude(gold_choice="")
        .order_by("pk")
        .values("pk", "clip_id")
        .annotate(donor=F("caption_b__copied_from__clip_id"), used=Coalesce(Subquery(uses), 0))
    )


# Read on every share start of a pairwise study with checks: one statement, compiled once per process. Its use and
# the pairs were two queries, and compiling them (the pairs join four tables) a good part of each start's CPU. Not
# cached across starts: each start's checks change the use the next start balances.
_GOLD_POOL = CompiledRead(_gold_pool_read, campaign_id=-2_100_000_601)


def gold_pool(study: Study) -> GoldPool:
    """The study's gold pairs with their use so far and donors, read once per share (one query).

    Only what a share uses of a pair (its id and clip): the pairs' other columns were a good part of the read."""
    pairs, used, donors = [], {}, {}
    for row in _GOLD_POOL.rows(campaign_id=study.campaign_id):
        pairs.append(CaptionPair.from_db(None, ["id", "clip_id"], [row["pk"], row["clip_id"]]))
        if row["used"]:
            used[row["pk"]] = row["used"]
        if row["donor"] is not None:
            donors[row["pk"]] = row["donor"]
    return GoldPool(pairs=pairs, used=used, donors=donors)


def gold_pairs_choose(
    study: Study,
    rng: random.Random,
    *,
    avoid_clip_ids: set[int],
    free_by_clip: dict | None = None,
    pool: GoldPool | None = None,
) -> list[CaptionPair]:
    """The study's least-used gold pairs (ties at random) for one share: none of `avoid_clip_ids`, no two of one
    clip, and of distinct donors while the least-used allow (two foreign captions of one donor read alike).
    With `free_by_clip` (clip -> items with a free slot), golds of the clips with the fewest come first."""
    pool = pool or gold_pool(study)
    used, donors = pool.used, pool.donors
    gold = [pair for pair in pool.pairs if pair.clip_id not in avoid_clip_ids]
    gold.sort(key=lambda pair: ((free_by_clip or {}).get(pair.clip_id, 0), used.get(pair.pk, 0), rng.random()))
    chosen: list[CaptionPair] = []
    for allow_donor_again in (False, True):
        for pair in gold:
            if len(chosen) == study.attention_checks:
                return chosen
            clips = {each.clip_id for each in chosen}
            chosen_donors = {donors.get(each.pk) for each in chosen} - {None}
            if pair in chosen or pair.clip_id in clips:
                continue
            if not allow_donor_again and donors.get(pair.pk) in chosen_donors:
                continue
            chosen.append(pair)
    return chosen


def _words(texts) -> set[str]:
    return {word for text in texts for word in WORD.findall(text.lower())}


def catch_captions_place(study: Study, assignment: Assignment, items: list[AssignmentItem], rng: random.Random) -> None:
    """Put a catch caption in place of one caption of `attention_checks` items, spread through the share.

    In place of, not beside: an item with a check then shows as many captions as every other item of the
    share (a check item with one caption more would be found by counting). The caption it displaces gets one
    rating fewer from this participant; items with a single caption carry no check (it would displace the
    clip's only caption)."""
    if not study.attention_checks or not items:
        return
    items = [item for item in items if len(item.caption_order) >= 2]
    share_clip_ids = {item.clip_id for item in items}
    other_clip_ids = list(
        study.campaign.dataset.clips.exclude(pk__in=share_clip_ids).order_by("pk").values_list("pk", flat=True)
    )
    candidates = rng.sample(other_clip_ids, min(CATCH_CANDIDATE_CLIPS, len(other_clip_ids)))
    references: dict[int, list[tuple[int, str]]] = defaultdict(list)
    rows = (
        Caption.objects.corpus()
        .filter(clip_id__in=[*candidates, *share_clip_ids], role=Caption.Role.REFERENCE)
        .order_by("clip_id", "position", "pk")
    )
    for caption_id, clip_id, text in rows.values_list("pk", "clip_id", "text"):
        references[clip_id].append((caption_id, text))
    donors = [clip_id for clip_id in candidates if references.get(clip_id)]
    checks = []
    for index in spread_positions(count=study.attention_checks, length=len(items), rng=rng):
        if not donors:
            break
        item = items[index]
        own = _words(text for _, text in references.get(item.clip_id, []))
        donor = min(donors, key=lambda clip_id: (len(own & _words(t for _, t in references[clip_id])), rng.random()))
        donors.remove(donor)  # one catch caption per donor clip: the same caption never appears twice in a share
        caption_id = rng.choice(references[donor])[0]
        order = list(item.caption_order)
        order[rng.randrange(len(order))] = caption_id
        item.caption_order = order
        item.save(update_fields=["caption_order"])
        checks.append(
            AttentionCheck(
                item=item,
                campaign=study.campaign,
                rater=assignment.rater,
                kind=AttentionCheck.Kind.CATCH_CAPTION,
                caption_id=caption_id,
            )
        )
    AttentionCheck.objects.bulk_create(checks)
