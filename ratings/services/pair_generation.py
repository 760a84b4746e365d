"""Caption pairs for pairwise campaigns, in the four splits of the FENSE study.

- HC: two human references of the same clip (a/b order random).
- HI: a reference of the clip (a) against a human caption written for *another* clip (b).
  As in the FENSE data, that caption is copied onto this clip as a human *candidate*
  (source label `<other clip>_<label>`), because a pair, its votes and the metrics that
  score it all belong to one clip; the copy is reused if it already exists. The copy is a
  *pair artefact* (`Caption.pair_artefact`, `copied_from` the original): it exists for the
  pair only and every corpus reader leaves it out (`Caption.objects.corpus()`).
  The other clip is a *donor* (`foreign_clips`): never one of the clips pairs are made on,
  each foreign caption is used once and its text is none of `excluded_texts` nor any caption
  text of the clips pairs are made on (ratings/services/foreign_captions.py chooses donors
  that none of the campaign's raters knows).
- HM: a reference of the clip (a) against a machine caption of the clip (b).
- MM: machine captions of two different systems for the same clip (a/b order random).

Pairs are spread over the clips round-robin (every clip gets one pair of a split before
any gets a second) in a seeded order, so the same seed on the same data gives the same
pairs. Two captions with the same text are never paired.
"""

import itertools
import random
from collections import Counter
from collections.abc import Callable, Sequence

from django.db import transaction

from corpus.models import Caption, CaptioningSystem, Clip
from ratings.models import CaptionPair
from ratings.services.foreign_captions import text_key
from ratings.text_match import ContextIndex, differences, match_cost, profile_scales

# What each earlier use of a donor adds to a foreign caption's mismatch (in units of one feature's spread):
# two foreign captions of one donor read alike, and the gold rule gives a rater golds of distinct donors
# only where the campaign has several.
DONOR_REUSE_COST = 0.25
# At most this many clips' captions profile the HI pairs' captions (ratings/text_match.py).
CONTEXT_CLIPS = 120

SPLITS = (CaptionPair.Split.HC, CaptionPair.Split.HI, CaptionPair.Split.HM, CaptionPair.Split.MM)


class PairGenerationError(ValueError):
    """The clips cannot supply the requested number of pairs of a split."""


class _ClipCaptions:
    """The references and machine captions of one clip (corpus captions only), ordered by id."""

    def __init__(self, clip: Clip, captions: list[Caption], system_ids: set[int] | None):
        self.clip = clip
        self.references = [caption for caption in captions if caption.role == Caption.Role.REFERENCE]
        # A superseded caption no longer stands for its system (a newer submission replaced it): not paired.
        self.machine = [
            caption
            for caption in captions
            if caption.author_kind == Caption.AuthorKind.MACHINE
            and caption.superseded_at is None
            and (system_ids is None or caption.system_id in system_ids)
        ]


def _distinct_text(first: Caption, second: Caption) -> bool:
    return first.text.strip().lower() != second.text.strip().lower()


def _options(split: str, clip_captions: _ClipCaptions) -> list[tuple[Caption, Caption]]:
    """Every (a, b) a split can use on one clip (HI is drawn separately: its space is huge)."""
    if split == CaptionPair.Split.HC:
        combos = itertools.combinations(clip_captions.references, 2)
    elif split == CaptionPair.Split.HM:
        combos = itertools.product(clip_captions.references, clip_captions.machine)
    else:
        combos = (
            (first, second)
            for first, second in itertools.combinations(clip_captions.machine, 2)
            if first.system_id != second.system_id
        )
    return [(first, second) for first, second in combos if _distinct_text(first, second)]


def _round_robin(
    *, split: str, count: int, pool: list[_ClipCaptions], draw: Callable[[_ClipCaptions], tuple | None]
) -> list[tuple[_ClipCaptions, Caption, Caption]]:
    chosen: list[tuple[_ClipCaptions, Caption, Caption]] = []
    active = list(pool)
    while len(chosen) < count and active:
        still_active = []
        for clip_captions in active:
            if len(chosen) == count:
                break
            option = draw(clip_captions)
            if option is not None:
                chosen.append((clip_captions, *option))
                still_active.append(clip_captions)
        active = still_active
    if len(chosen) < count:
        raise PairGenerationError(
            f"only {len(chosen)} {split} pairs can be made from the chosen clips and systems, {count} were asked for"
        )
    return chosen


def _enumerated_draw(split: str, rng: random.Random) -> Callable[[_ClipCaptions], tuple | None]:
    remaining: dict[int, list[tuple[Caption, Caption]]] = {}

    def draw(clip_captions: _ClipCaptions) -> tuple | None:
        if clip_captions.clip.pk not in remaining:
            options = _options(split, clip_captions)
            rng.shuffle(options)
            remaining[clip_captions.clip.pk] = options
        options = remaining[clip_captions.clip.pk]
        if not options:
            return None
        first, second = options.pop()
        if split in (CaptionPair.Split.HC, CaptionPair.Split.MM) and rng.random() < 0.5:
            first, second = second, first
        return first, second

    return draw


def _incorrect_draw(
    *, foreign: list[Caption], excluded_texts: set[str], context: ContextIndex, rng: random.Random
) -> Callable[[_ClipCaptions], tuple | None]:
    """HI: the clip's own reference against the unused foreign caption that reads most like it (ratings/
    text_match.py): as long, as near to some other caption and as near to the middle of the others' captions,
    with what differs leaning neither way over the campaign, so that none of these comparisons tells the two
    apart. A donor already used costs a little, so the foreign captions of a campaign spread over its donor
    clips where the match allows."""
    used_texts = set(excluded_texts)
    candidates = [caption for caption in foreign if text_key(caption.text) not in used_texts]
    rng.shuffle(candidates)  # ties go to a random candidate, not the lowest id
    donor_uses: Counter = Counter()
    running = [0.0, 0.0, 0.0]  # the chosen pairs' differences, summed per feature
    # The features' spreads over the foreign captions (none of them is a caption of the clips profiled against).
    scales = profile_scales([context.profile(caption.text, outside_clip=None) for caption in candidates])

    def draw(clip_captions: _ClipCaptions) -> tuple | None:
        clip_id = clip_captions.clip.pk
        best: tuple | None = None
        for candidate in candidates:
            if text_key(candidate.text) in used_texts:
                continue
            for own in clip_captions.references:
                if not _distinct_text(own, candidate):
                    continue
                # Both against the captions of the other clips: a rater of the gold sees none of this clip's.
                pair_differences = differences(
                    context.profile(own.text, outside_clip=clip_id),
                    context.profile(candidate.text, outside_clip=clip_id),
                    scales,
                )
                cost = match_cost(pair_differences, running) + DONOR_REUSE_COST * donor_uses[candidate.clip_id]
                if best is None or cost < best[0]:
                    best = (cost, own, candidate, pair_differences)
        if best is None:
            return None
        _, own, candidate, pair_differences = best
        used_texts.add(text_key(candidate.text))
        donor_uses[candidate.clip_id] += 1
        running[:] = [total + difference for total, difference in zip(running, pair_differences, strict=True)]
        return own, candidate

    return draw


def _candidate_copy(*, clip: Clip, foreign: Caption) -> Caption:
    """The other clip's caption as a human candidate of `clip`, marked as a pair artefact (reused when copied)."""
    label = f"{foreign.clip.external_id}_{foreign.source_label or f'reference_{foreign.position}'}"[:255]
    existing = Caption.objects.filter(clip=clip, pair_artefact=True, text=foreign.text).first()
    if existing:
        return existing
    return Caption.objects.create(
        clip=clip,
        text=foreign.text,
        role=Caption.Role.CANDIDATE,
        author_kind=Caption.AuthorKind.HUMAN,
        source_label=label,
        pair_artefact=True,
        copied_from=foreign,
    )


@transaction.atomic
def pairs_generate(
    *,
    clips: Sequence[Clip],
    counts: dict[str, int],
    seed: int,
    key_prefix: str,
    systems: Sequence[CaptioningSystem] | None = None,
    gold_from_hi: bool = False,
    foreign_clips: Sequence[Clip] = (),
    excluded_texts: set[str] = frozenset(),
) -> list[CaptionPair]:
    """Create `counts[split]` new pairs per split over `clips`; source keys are `<key_prefix>-<split>-<n>`.

    `systems` limits the machine captions of HM and MM (None = every system). HI pairs take their
    other caption from the references of `foreign_clips` (none of `clips`), never one whose text is in
    `excluded_texts`. With `gold_from_hi` each HI pair becomes a gold item whose known answer is a
    (the clip's own reference). Raises PairGenerationError, writing nothing, when a split falls short.
    """
    unknown = set(counts) - set(SPLITS)
    if unknown:
        raise PairGenerationError(f"unknown split {sorted(unknown)[0]!r}; use one of {', '.join(SPLITS)}")
    negative = [split for split, count in counts.items() if count < 0]
    if negative:
        raise PairGenerationError(f"the {negative[0]} count must not be negative")
    system_ids = {system.pk for system in systems} if systems is not None else None
    ordered_clips = sorted(clips, key=lambda clip: clip.pk)
    clip_ids = {clip.pk for clip in ordered_clips}
    if counts.get(CaptionPair.Split.HI) and not foreign_clips:
        raise PairGenerationError("HI pairs need donor clips (outside the rated clips) to take the other caption from")
    if any(clip.pk in clip_ids for clip in foreign_clips):
        raise PairGenerationError("a donor clip of the HI pairs is also a clip the pairs are made on")
    captions_by_clip: dict[int, list[Caption]] = {clip.pk: [] for clip in ordered_clips}
    for caption in Caption.objects.corpus().filter(clip__in=ordered_clips).select_related("clip").order_by("pk"):
        captions_by_clip[caption.clip_id].append(caption)
    pool = [_ClipCaptions(clip, captions_by_clip[clip.pk], system_ids) for clip in ordered_clips]
    foreign = list(
        Caption.objects.corpus()
        .filter(clip__in=list(foreign_clips), role=Caption.Role.REFERENCE)
        .select_related("clip")
        .order_by("pk")
    )
    # No foreign text may be one the pairs' own clips show (it would be recognisable there too).
    shown_texts = {text_key(caption.text) for captions in captions_by_clip.values() for caption in captions}

    pairs: list[CaptionPair] = []
    for split in SPLITS:
        count = counts.get(split, 0)
        if not count:
            continue
        # One generator per split so changing one split's count leaves the others' pairs alone.
        rng = random.Random(f"pairs:{seed}:{split}")
        shuffled = list(pool)
        rng.shuffle(shuffled)
        if split == CaptionPair.Split.HI:
            # A rater is shown a sample of the campaign's clips; a seeded sample of them profiles as well and keeps
            # the profiles' cost bounded on large campaigns.
            context_clips = sorted(captions_by_clip)
            if len(context_clips) > CONTEXT_CLIPS:
                context_clips = sorted(random.Random(f"context:{seed}").sample(context_clips, CONTEXT_CLIPS))
            context = ContextIndex(
                {clip_id: [caption.text for caption in captions_by_clip[clip_id]] for clip_id in context_clips},
                extra_texts=[caption.text for caption in foreign],
            )
            draw = _incorrect_draw(
                foreign=foreign, excluded_texts=set(excluded_texts) | shown_texts, context=context, rng=rng
            )
        else:
            draw = _enumerated_draw(split, rng)
        for index, (clip_captions, first, second) in enumerate(
            _round_robin(split=split, count=count, pool=shuffled, draw=draw), start=1
        ):
            clip = clip_captions.clip
            if split == CaptionPair.Split.HI:
                second = _candidate_copy(clip=clip, foreign=second)
            gold = CaptionPair.Choice.A if split == CaptionPair.Split.HI and gold_from_hi else ""
            pairs.append(
                CaptionPair.objects.create(
                    clip=clip,
                    caption_a=first,
                    caption_b=second,
                    split=split,
                    source_key=f"{key_prefix}-{split}-{index}",
                    gold_choice=gold,
                )
            )
    return pairs
