"""Campaigns and assignments: who judges what, in which order, with which side on the left.

An *item* is a clip for THumBS campaigns (the rater scores every campaign caption of
that clip) and a caption pair for pairwise campaigns. Each item should get
`judgements_per_item` judgements; items are spread over raters so that every rater
gets about the same share, each in an order shuffled per rater.

Balance rule (`campaign_add_raters`): raters added in one call share the judgements
still missing, so every item reaches `judgements_per_item` (or as many as there are
raters in the call, since nobody judges an item twice) and their loads differ by at
most one. Raters already assigned are never changed (they may have started). A rater
added when every item already has its judgements still gets the average load, taken
from the least-covered items: those are extra judgements beyond `judgements_per_item`.
So add the raters of a campaign together (the create form does).
"""

import logging
import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import connections, transaction

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from ratings import projection
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, opaque_token
from ratings.services.foreign_captions import (
    DonorShortageError,
    campaign_exposure,
    donors_plan,
    rater_conflicts,
    rater_exposure,
)

logger = logging.getLogger(__name__)

DEFAULT_JUDGEMENTS = {Campaign.TaskType.PAIRWISE: 4, Campaign.TaskType.THUMBS: 3}


class CampaignSetupError(ValueError):
    """The requested campaign cannot be built from the chosen data (message says why)."""


def campaign_name_clash(name: str) -> str:
    """Why `name` cannot name a new campaign ("" when it can): names are compared without case, so "DEMO"
    is refused beside "demo" (two campaigns that read alike in every list and command)."""
    existing = Campaign.objects.filter(name__iexact=name).values_list("name", flat=True).first()
    if existing is None:
        return ""
    if existing == name:
        return f"a campaign named {name} already exists"
    return f"campaign name {name} differs only in case from the existing campaign {existing} (names ignore case)"


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
    title: str = "",
    requires_huggins: bool = False,
    origin: str = Campaign.Origin.APP,
) -> Campaign:
    clash = campaign_name_clash(name)
    if clash:
        raise CampaignSetupError(clash)
    campaign = Campaign.objects.create(
        name=name,
        dataset=dataset,
        task_type=task_type,
        seed=seed,
        judgements_per_item=judgements_per_item or DEFAULT_JUDGEMENTS[task_type],
        title=title,
        requires_huggins=requires_huggins,
        origin=origin,
    )
    if captions:
        campaign.captions.add(*captions)
    if pairs:
        campaign.pairs.add(*pairs)
    return campaign


def campaign_items(campaign: Campaign) -> list:
    """The campaign's items: clips (THumBS, ordered by id) or pairs (pairwise)."""
    if campaign.task_type == Campaign.TaskType.PAIRWISE:
        return list(campaign.pairs.select_related("clip").order_by("pk"))
    clip_ids = campaign.captions.values_list("clip_id", flat=True).distinct()
    return list(campaign.dataset.clips.filter(pk__in=clip_ids).order_by("pk"))


def _item_key(campaign: Campaign, clip_id: int, pair_id: int | None) -> int:
    """What an assignment item stands for in its campaign: the pair (pairwise) or the clip (THumBS)."""
    return pair_id if campaign.task_type == Campaign.TaskType.PAIRWISE else clip_id


class GoldPlacementError(ValueError):
    """Gold items cannot be placed so that no rater of one gets another item of its clip (message says why)."""


@dataclass(frozen=True)
class GoldRule:
    """Which items are gold checks and which clip each item plays, for `balanced_shares`.

    A gold check answered by its text alone (the HI pair's own reference reads like the other captions of the
    clip that rater was shown; the foreign one does not) proves nothing, so a rater who gets a gold item of a
    clip gets no other item of that clip: the gold is their only item of it, in this campaign and in every other
    campaign of theirs on the dataset.
    """

    clip_of: dict  # item key -> clip id
    gold: frozenset  # keys of gold items
    known_clips: Sequence[set]  # per rater: clips they have items of elsewhere (no gold of those)
    known_gold_clips: Sequence[set]  # per rater: clips of their gold items elsewhere (no item of those)
    # Item key -> the clip an HI gold's foreign caption comes from. Two foreign captions of one donor clip read
    # alike (they describe the same sound), which would mark both as the foreign ones: a rater gets golds of
    # distinct donors wherever the raters allowed for a gold leave that choice.
    donor_of: dict = field(default_factory=dict)


def balanced_shares(
    *,
    needs: dict[Hashable, int],
    rater_count: int,
    rng: random.Random,
    gold_rule: GoldRule | None = None,
    spare_keys: Sequence[Hashable] | None = None,
) -> list[list[Hashable]]:
    """Split the needed judgements over `rater_count` raters: loads differ by at most one, no item twice per rater.

    `needs[key]` is how many more judgements item `key` should get (capped at the rater
    count). Items go, most-needed first, to the raters with the most room left; this
    greedy choice always completes when the loads are this even (Gale-Ryser).

    With a `gold_rule` the rule holds first (see GoldRule) and the loads as far as it lets them
    (`_gold_shares`); GoldPlacementError when the rule cannot be kept. `spare_keys` (extra judgements, beyond
    what items need) makes the needs a wish: an item the rule keeps from every rater with room is left out and
    each rater's room is filled from `spare_keys`, in their order, with items the rule allows.
    """
    if rater_count <= 0:
        return []
    if gold_rule is not None:
        return _gold_shares(needs=needs, rater_count=rater_count, rng=rng, rule=gold_rule, spare_keys=spare_keys)
    capped = {key: min(need, rater_count) for key, need in needs.items() if need > 0}
    total = sum(capped.values())
    loads = [total // rater_count + (1 if index < total % rater_count else 0) for index in range(rater_count)]
    rng.shuffle(loads)
    room = list(loads)
    shares: list[list[Hashable]] = [[] for _ in range(rater_count)]
    for key in sorted(capped, key=lambda key: (-capped[key], rng.random())):
        chosen = sorted(range(rater_count), key=lambda index: (-room[index], rng.random()))[: capped[key]]
        for index in chosen:
            shares[index].append(key)
            room[index] -= 1
    assert not any(room), "balanced_shares left judgements unassigned"
    return shares


def _gold_shares(
    *, needs: dict, rater_count: int, rng: random.Random, rule: GoldRule, spare_keys: Sequence | None
) -> list[list[Hashable]]:
    """`balanced_shares` under a gold rule: gold items first (each to raters with no item of its clip), then the
    others, least slack first (fewest raters allowed for the judgements they need), each to the allowed raters
    with the most room left. A rater with no room is taken only when the allowed ones with room are too few,
    so loads stay as even as the rule allows."""
    capped = {key: min(need, rater_count) for key, need in needs.items() if need > 0}
    total = sum(capped.values())
    loads = [total // rater_count + (1 if index < total % rater_count else 0) for index in range(rater_count)]
    rng.shuffle(loads)
    room = list(loads)
    shares: list[list[Hashable]] = [[] for _ in range(rater_count)]
    clips_held = [set(rule.known_clips[index]) | set(rule.known_gold_clips[index]) for index in range(rater_count)]
    donors_held: list[set] = [set() for _ in range(rater_count)]
    gold_clips = [set(rule.known_gold_clips[index]) for index in range(rater_count)]

    def allowed(index: int, key) -> bool:
        clip = rule.clip_of[key]
        return clip not in (clips_held[index] if key in rule.gold else gold_clips[index])

    def place(key) -> None:
        candidates = [index for index in range(rater_count) if allowed(index, key)]
        if spare_keys is not None:
            candidates = [index for index in candidates if room[index] > 0]
        if spare_keys is not None and len(candidates) < capped[key]:
            return
        if len(candidates) < capped[key]:
            raise GoldPlacementError(
                f"a {'gold' if key in rule.gold else 'non-gold'} item of clip {rule.clip_of[key]} needs "
                f"{capped[key]} raters but only {len(candidates)} of the {rater_count} can take it: a rater who "
                "judges a gold item of a clip gets no other item of that clip (here or in another campaign on the "
                "dataset); ask for fewer gold pairs per clip, more raters or fewer judgements per item"
            )
        donor = rule.donor_of.get(key)

        def preference(index: int) -> tuple:
            return (room[index] <= 0, donor is not None and donor in donors_held[index], -room[index], rng.random())

        chosen = sorted(candidates, key=preference)[: capped[key]]
        for index in chosen:
            donors_held[index].add(donor)
            shares[index].append(key)
            room[index] -= 1
            clips_held[index].add(rule.clip_of[key])
            if key in rule.gold:
                gold_clips[index].add(rule.clip_of[key])

    golds = [key for key in capped if key in rule.gold]
    for key in sorted(golds, key=lambda key: (-capped[key], rng.random())):
        place(key)
    others = [key for key in capped if key not in rule.gold]
    slack = {key: sum(allowed(index, key) for index in range(rater_count)) - capped[key] for key in others}
    for key in sorted(others, key=lambda key: (slack[key], -capped[key], rng.random())):
        place(key)
    for index in range(rater_count):
        for key in spare_keys or ():
            if room[index] <= 0:
                break
            if key not in rule.gold and key not in shares[index] and allowed(index, key):
                shares[index].append(key)
                room[index] -= 1
                clips_held[index].add(rule.clip_of[key])
    return shares


def _late_rater_needs(
    *, keys: list[Hashable], coverage: Counter, quota: int, rater_count: int, rng: random.Random
) -> dict:
    """Needs for raters added after full coverage: `quota` items each, least-covered items first."""
    needs: Counter = Counter()
    slots = quota * rater_count
    ordered = sorted(keys, key=lambda key: (coverage[key], rng.random()))
    while slots > 0:
        for key in ordered:
            if slots == 0:
                break
            needs[key] += 1
            slots -= 1
    return dict(needs)


def raters_check(*, campaign: Campaign, raters: Sequence[AbstractBaseUser]) -> None:
    """Raise CampaignSetupError when a rater joining `campaign` could recognise an HI pair's foreign caption
    (in this campaign or in an open one of theirs on the dataset); see ratings/services/foreign_captions.py."""
    exposure = campaign_exposure(campaign)
    assigned = set(campaign.assignments.values_list("rater_id", flat=True))
    problems = [
        problem
        for rater in raters
        if rater.pk not in assigned
        for problem in rater_conflicts(campaign=campaign, rater=rater, exposure=exposure)
    ]
    if problems:
        raise CampaignSetupError("; ".join(problems))


def _gold_rule(campaign: Campaign, items: list, raters: list) -> GoldRule | None:
    """The gold rule for raters joining `campaign` (None when nothing constrains them: no gold item here and no
    gold item of theirs in another open campaign on the dataset)."""
    is_pairwise = campaign.task_type == Campaign.TaskType.PAIRWISE
    gold = frozenset(item.pk for item in items if is_pairwise and item.gold_choice)
    exposures = [rater_exposure(rater=rater, dataset=campaign.dataset, exclude_campaign=campaign) for rater in raters]
    if not gold and not any(exposure.open_gold_clip_ids for exposure in exposures):
        return None
    return GoldRule(
        clip_of={item.pk: item.clip_id if is_pairwise else item.pk for item in items},
        gold=gold,
        known_clips=[exposure.clip_ids for exposure in exposures],
        known_gold_clips=[exposure.open_gold_clip_ids for exposure in exposures],
        donor_of=gold_donors(gold),
    )


def gold_donors(pair_ids) -> dict[int, int]:
    """Pair id -> the donor clip of its foreign caption, for the gold HI pairs among `pair_ids`."""
    rows = CaptionPair.objects.filter(pk__in=list(pair_ids), caption_b__copied_from__isnull=False).order_by()
    return dict(rows.values_list("pk", "caption_b__copied_from__clip_id"))


@transaction.atomic
def campaign_add_raters(*, campaign: Campaign, raters: list[AbstractBaseUser]) -> list[Assignment]:
    """Give raters without an assignment a balanced share of the items (see the module docstring).

    Raises CampaignSetupError, assigning nobody, when a rater could recognise an HI pair (`raters_check`).
    """
    raters_check(campaign=campaign, raters=raters)
    items = campaign_items(campaign)
    items_by_key = {item.pk: item for item in items}
    existing_items = AssignmentItem.objects.filter(assignment__campaign=campaign).order_by()
    coverage = Counter(
        _item_key(campaign, clip_id, pair_id) for clip_id, pair_id in existing_items.values_list("clip_id", "pair_id")
    )
    assignments: list[Assignment] = []
    new_assignments: list[Assignment] = []
    seen_rater_ids: set[int] = set()
    for rater in raters:
        if rater.pk in seen_rater_ids:
            continue
        seen_rater_ids.add(rater.pk)
        assignment, created = Assignment.objects.get_or_create(campaign=campaign, rater=rater)
        assignments.append(assignment)
        if created:
            new_assignments.append(assignment)
    if not new_assignments or not items:
        return assignments
    batch_key = ",".join(str(assignment.rater_id) for assignment in new_assignments)
    rng_seed = f"shares:{campaign.seed}:{campaign.pk}:{batch_key}"
    rng = random.Random(rng_seed)
    needs = {key: max(0, campaign.judgements_per_item - coverage[key]) for key in items_by_key}
    spare_keys = None
    if not any(needs.values()):
        rater_total = campaign.assignments.count()
        quota = min(len(items), math.ceil(len(items) * campaign.judgements_per_item / rater_total))
        needs = _late_rater_needs(
            keys=list(items_by_key), coverage=coverage, quota=quota, rater_count=len(new_assignments), rng=rng
        )
        spare_keys = sorted(items_by_key, key=lambda key: coverage[key] + needs.get(key, 0))
    try:
        shares = balanced_shares(
            needs=needs,
            rater_count=len(new_assignments),
            rng=rng,
            gold_rule=_gold_rule(campaign, items, [assignment.rater for assignment in new_assignments]),
            spare_keys=spare_keys,
        )
    except GoldPlacementError as error:
        # Small campaigns where every rater judges every item cannot keep the rule at all; they are still made
        # (as before the rule). The log says why, and the campaign's page and its creation result warn the
        # experimenter (ratings/selectors.py, campaign_gold_rule_breaches).
        logger.warning("campaign %s: gold rule not kept: %s", campaign.name, error)
        shares = balanced_shares(needs=needs, rater_count=len(new_assignments), rng=random.Random(rng_seed))
    for assignment, share in zip(new_assignments, shares, strict=True):
        assignment_add_items(assignment=assignment, items=[items_by_key[key] for key in share])
    return assignments


@transaction.atomic
def assignment_add_items(*, assignment: Assignment, items: list, keep_order: bool = False) -> list[AssignmentItem]:
    """Append items (clips or pairs) the assignment lacks, shuffled, with per-rater caption order and sides.

    Every draw comes from the assignment's secret random source (ratings/projection.py), so no order a
    rater sees follows ids, splits or authors, and nothing the rater knows predicts it. `keep_order=True`
    keeps the order of `items`, for a caller that drew it from that same source itself.
    """
    campaign = assignment.campaign
    existing = list(assignment.items.order_by().values_list("clip_id", "pair_id", "position"))
    present = {_item_key(campaign, clip_id, pair_id) for clip_id, pair_id, _ in existing}
    next_position = max((position for _, _, position in existing), default=0) + 1
    wanted = [item for item in items if item.pk not in present]
    return _items_append(assignment, wanted, next_position=next_position, keep_order=keep_order)


def assignment_share_items_create(*, assignment: Assignment, items: list) -> list[AssignmentItem]:
    """The first items of an assignment that has none, in the order of `items` (drawn by the caller from the
    assignment's secret source): a crowd share (ratings/services/study_shares/allocation.py), which places its
    attention checks itself.

    The same rows as assignment_add_items would make (the same draws), without its read of the items already there
    (the caller found none, holding the participant's lock) or a savepoint of its own (the caller's transaction is
    the unit), and in one INSERT of only the columns a new item sets: the ORM's bulk insert prepared and bound every
    column of every row, half of a share start's CPU."""
    rows = _items_rows(assignment, items, next_position=1, keep_order=True)
    return _items_insert(assignment, rows)


@dataclass(frozen=True)
class _ItemRow:
    position: int
    clip_id: int
    pair_id: int | None
    a_on_left: bool
    caption_order: list[int]


def _items_rows(assignment: Assignment, items: list, *, next_position: int, keep_order: bool) -> list[_ItemRow]:
    """The new items' positions, sides (pairs) and caption orders (clips), drawn from the assignment's source."""
    campaign = assignment.campaign
    is_pairwise = campaign.task_type == Campaign.TaskType.PAIRWISE
    rng = projection.assignment_random(assignment, f"items-from-{next_position}")
    new_items = items if keep_order else projection.shuffled(items, rng)
    caption_ids_by_clip: dict[int, list[int]] = {}
    if not is_pairwise:
        wanted_clips = [item.pk for item in new_items]
        captions = campaign.captions.filter(clip_id__in=wanted_clips).order_by("pk").values_list("pk", "clip_id")
        for caption_id, clip_id in captions:
            caption_ids_by_clip.setdefault(clip_id, []).append(caption_id)
    rows = []
    for offset, item in enumerate(new_items):
        if is_pairwise:
            rows.append(_ItemRow(next_position + offset, item.clip_id, item.pk, rng.random() < 0.5, []))
        else:
            caption_order = list(caption_ids_by_clip.get(item.pk, []))
            rng.shuffle(caption_order)
            rows.append(_ItemRow(next_position + offset, item.pk, None, True, caption_order))
    return rows


def _items_append(assignment: Assignment, items: list, *, next_position: int, keep_order: bool) -> list[AssignmentItem]:
    rows = _items_rows(assignment, items, next_position=next_position, keep_order=keep_order)
    return AssignmentItem.objects.bulk_create(
        AssignmentItem(
            assignment=assignment,
            position=row.position,
            clip_id=row.clip_id,
            pair_id=row.pair_id,
            a_on_left=row.a_on_left,
            caption_order=row.caption_order,
        )
        for row in rows
    )


# The columns a new item sets; every other column takes the value a new AssignmentItem has (NULL times, empty
# drafts and audio records, version 0, no outside record id), written as constants in the statement.
_ITEM_SET = ("assignment", "token", "position", "clip", "pair", "a_on_left", "caption_order")
_ITEM_CONSTANTS = (("audio_served", "'{}'"), ("draft", "'{}'"), ("version", "0"), ("outside_record_id", "''"))


def _items_insert(assignment: Assignment, rows: list[_ItemRow]) -> list[AssignmentItem]:
    """Insert the rows in one statement and return their items, as bulk_create returns them (ids set, saved)."""
    if not rows:
        return []
    connection = connections[AssignmentItem.objects.db]
    quote = connection.ops.quote_name
    meta = AssignmentItem._meta
    columns = [meta.get_field(name).column for name in _ITEM_SET] + [
        meta.get_field(name).column for name, _ in _ITEM_CONSTANTS
    ]
    constants = ", ".join(value for _, value in _ITEM_CONSTANTS)
    one_row = "(" + ", ".join(["%s"] * len(_ITEM_SET)) + ", " + constants + ")"
    tokens = [opaque_token() for _ in rows]
    caption_order = meta.get_field("caption_order")  # the JSON as the backend binds it (psycopg's Jsonb, a str)
    params = []
    for row, token in zip(rows, tokens, strict=True):
        params += [assignment.pk, token, row.position, row.clip_id, row.pair_id, row.a_on_left]
        params.append(caption_order.get_db_prep_save(row.caption_order, connection))
    returned = f"{quote(meta.pk.column)}, {quote(meta.get_field('position').column)}"
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(column) for column in columns)}) "
        f"VALUES {', '.join([one_row] * len(rows))} RETURNING {returned}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # Matched by position (unique in a share), not by the order RETURNING gives, which no backend promises.
        id_of_position = {position: pk for pk, position in cursor.fetchall()}
    ids = [id_of_position[row.position] for row in rows]
    # Instances as from a read of the rows (from_db: no default computed per field and row, as the constructor does
    # with keywords; that was most of the insert's CPU): the drawn values, and a new item's own for the others.
    fields = AssignmentItem._meta.concrete_fields
    drawn = {"id", "assignment_id", "token", "position", "clip_id", "pair_id", "a_on_left", "caption_order"}
    defaults = {field.attname: field.get_default() for field in fields if field.attname not in drawn}
    attnames = [field.attname for field in fields]
    created = []
    for pk, row, token in zip(ids, rows, tokens, strict=True):
        values = {
            **defaults,
            "id": pk,
            "assignment_id": assignment.pk,
            "token": token,
            "position": row.position,
            "clip_id": row.clip_id,
            "pair_id": row.pair_id,
            "a_on_left": row.a_on_left,
            "caption_order": row.caption_order,
            "audio_served": {},
            "draft": {},
        }
        item = AssignmentItem.from_db(connection.alias, attnames, [values[name] for name in attnames])
        item.assignment = assignment
        created.append(item)
    return created


@transaction.atomic
def assignment_sync_captions(*, assignment: Assignment) -> None:
    """Add campaign captions that arrived after the assignment was made to each THumBS item's caption order.

    An item the rater has not opened gets them at random places (appended, late captions, say a newly
    submitted system's, would always come last); an opened one gets them at the end, so the numbers of
    the captions the rater saw (and drafted answers for) stay the same.
    """
    campaign = assignment.campaign
    for item in assignment.items.filter(pair__isnull=True):
        wanted = list(campaign.captions.filter(clip_id=item.clip_id).order_by("pk").values_list("pk", flat=True))
        missing = [caption_id for caption_id in wanted if caption_id not in item.caption_order]
        if not missing:
            continue
        rng = projection.assignment_random(assignment, f"sync:{item.token}:{len(item.caption_order)}")
        missing = projection.shuffled(missing, rng)
        order = list(item.caption_order)
        if item.first_shown_at is None and item.completed_at is None and not item.draft:
            for caption_id in missing:
                order.insert(rng.randrange(len(order) + 1), caption_id)
        else:
            order += missing
        item.caption_order = order
        item.save(update_fields=["caption_order"])


def thumbs_captions_select(
    *, clips: Sequence[Clip], systems: Sequence[CaptioningSystem] | None, human_captions_per_clip: int, seed: int
) -> list[Caption]:
    """THumBS captions for the clips: machine captions of `systems` (None = every system) and
    `human_captions_per_clip` human captions per clip drawn with the seed."""
    rng = random.Random(f"thumbs-captions:{seed}")
    clip_ids = [clip.pk for clip in clips]
    # corpus(): never an HI pair's copy of another clip's caption (it would be that other clip's caption).
    machine = Caption.objects.corpus().filter(clip_id__in=clip_ids, author_kind=Caption.AuthorKind.MACHINE)
    if systems is not None:
        machine = machine.filter(system__in=list(systems))
    chosen = list(machine.order_by("pk"))
    if human_captions_per_clip > 0:
        human_by_clip: dict[int, list[Caption]] = {}
        humans = Caption.objects.corpus().filter(clip_id__in=clip_ids, author_kind=Caption.AuthorKind.HUMAN)
        for caption in humans.order_by("pk"):
            human_by_clip.setdefault(caption.clip_id, []).append(caption)
        for clip_id in sorted(human_by_clip):
            captions = human_by_clip[clip_id]
            chosen.extend(rng.sample(captions, min(human_captions_per_clip, len(captions))))
    return chosen


@transaction.atomic
def campaign_setup(
    *,
    name: str,
    dataset: Dataset,
    task_type: str,
    seed: int = 0,
    judgements_per_item: int | None = None,
    clips: Sequence[Clip] | None = None,
    systems: Sequence[CaptioningSystem] | None = None,
    human_captions_per_clip: int = 0,
    split_counts: dict[str, int] | None = None,
    gold_from_hi: bool = False,
    raters: Sequence[AbstractBaseUser] = (),
    title: str = "",
    requires_huggins: bool = False,
) -> Campaign:
    """Create a campaign with its captions (THumBS) or generated pairs (pairwise) and assign the raters.

    Raises CampaignSetupError (nothing written) when the data cannot supply what was asked.
    """
    from ratings.services.pair_generation import PairGenerationError, pairs_generate

    chosen_clips = list(clips) if clips is not None else list(dataset.clips.order_by("pk"))
    foreign = [clip for clip in chosen_clips if clip.dataset_id != dataset.pk]
    if foreign:
        raise CampaignSetupError(f"clip {foreign[0]} is not in dataset {dataset.name}")
    if not chosen_clips:
        raise CampaignSetupError(f"dataset {dataset.name} has no clips to rate")
    hi_count = (split_counts or {}).get(CaptionPair.Split.HI, 0) if task_type == Campaign.TaskType.PAIRWISE else 0
    try:
        # HI pairs take their other caption from donor clips no rater of the campaign knows.
        donors = donors_plan(
            dataset=dataset,
            chosen_clips=chosen_clips,
            clips_named=clips is not None,
            hi_count=hi_count,
            raters=list(raters),
            seed=seed,
        )
    except DonorShortageError as error:
        raise CampaignSetupError(str(error)) from None
    campaign = campaign_create(
        name=name,
        dataset=dataset,
        task_type=task_type,
        seed=seed,
        judgements_per_item=judgements_per_item,
        title=title,
        requires_huggins=requires_huggins,
    )
    if task_type == Campaign.TaskType.THUMBS:
        captions = thumbs_captions_select(
            clips=donors.item_clips, systems=systems, human_captions_per_clip=human_captions_per_clip, seed=seed
        )
        if not captions:
            raise CampaignSetupError("no captions match the chosen clips and systems")
        campaign.captions.add(*captions)
    else:
        try:
            pairs = pairs_generate(
                clips=donors.item_clips,
                counts=split_counts or {},
                seed=seed,
                key_prefix=f"campaign-{campaign.pk}",
                systems=systems,
                gold_from_hi=gold_from_hi,
                foreign_clips=donors.donor_clips,
                excluded_texts=donors.excluded_texts,
            )
        except PairGenerationError as error:
            raise CampaignSetupError(str(error)) from None
        if not pairs:
            raise CampaignSetupError("no pairs requested: give a count for at least one split")
        campaign.pairs.add(*pairs)
    campaign_add_raters(campaign=campaign, raters=list(raters))
    return campaign


@transaction.atomic
def campaign_settings_update(*, campaign: Campaign, title: str, is_active: bool, requires_huggins: bool) -> Campaign:
    """What an admin may change once a campaign runs: the raters' title, open/closed, the second screen."""
    campaign.title = title
    campaign.is_active = is_active
    campaign.requires_huggins = requires_huggins
    campaign.save(update_fields=["title", "is_active", "requires_huggins", "updated_at"])
    return campaign
