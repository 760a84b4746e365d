"""Caption pairs for pairwise campaigns, in the four splits of the FENSE study.

- HC: two human references of the same clip (a/b order random).
- HI: a reference of the clip (a) against a human caption written for *another* clip (b).
  As in the FENSE data, that caption is copied onto this clip as a human *candidate*
  (source label `<other clip>_<label>`), because a pair, its votes and the metrics that
  score it all belong to one clip; the copy is reused if it already exists.
- HM: a reference of the clip (a) against a machine caption of the clip (b).
- MM: machine captions of two different systems for the same clip (a/b order random).

Pairs are spread over the clips round-robin (every clip gets one pair of a split before
any gets a second) in a seeded order, so the same seed on the same data gives the same
pairs. Two captions with the same text are never paired.
"""

import itertools
import random
from collections.abc import Callable, Sequence

from django.db import transaction

from annotation.models import Caption, CaptioningSystem, Clip
from ratings.models import CaptionPair

SPLITS = (CaptionPair.Split.HC, CaptionPair.Split.HI, CaptionPair.Split.HM, CaptionPair.Split.MM)
# Random draws tried per clip before an HI clip counts as exhausted.
HI_ATTEMPTS_PER_DRAW = 30


class PairGenerationError(ValueError):
    """The clips cannot supply the requested number of pairs of a split."""


class _ClipCaptions:
    """The references and machine captions of one clip, ordered by id."""

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


def _incorrect_draw(pool: list[_ClipCaptions], rng: random.Random) -> Callable[[_ClipCaptions], tuple | None]:
    donors = [clip_captions for clip_captions in pool if clip_captions.references]
    used: set[tuple[int, int]] = set()

    def draw(clip_captions: _ClipCaptions) -> tuple | None:
        others = [donor for donor in donors if donor.clip.pk != clip_captions.clip.pk]
        if not clip_captions.references or not others:
            return None
        for _ in range(HI_ATTEMPTS_PER_DRAW):
            own = rng.choice(clip_captions.references)
            foreign = rng.choice(rng.choice(others).references)
            if (own.pk, foreign.pk) not in used and _distinct_text(own, foreign):
                used.add((own.pk, foreign.pk))
                return own, foreign
        return None

    return draw


def _candidate_copy(*, clip: Clip, foreign: Caption) -> Caption:
    """The other clip's caption as a human candidate of `clip` (reused when already copied)."""
    label = f"{foreign.clip.external_id}_{foreign.source_label or f'reference_{foreign.position}'}"[:255]
    existing = Caption.objects.filter(
        clip=clip, role=Caption.Role.CANDIDATE, author_kind=Caption.AuthorKind.HUMAN, text=foreign.text
    ).first()
    if existing:
        return existing
    return Caption.objects.create(
        clip=clip,
        text=foreign.text,
        role=Caption.Role.CANDIDATE,
        author_kind=Caption.AuthorKind.HUMAN,
        source_label=label,
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
) -> list[CaptionPair]:
    """Create `counts[split]` new pairs per split over `clips`; source keys are `<key_prefix>-<split>-<n>`.

    `systems` limits the machine captions of HM and MM (None = every system). With
    `gold_from_hi` each HI pair becomes a gold item whose known answer is a (the clip's
    own reference). Raises PairGenerationError, writing nothing, when a split falls short.
    """
    unknown = set(counts) - set(SPLITS)
    if unknown:
        raise PairGenerationError(f"unknown split {sorted(unknown)[0]!r}; use one of {', '.join(SPLITS)}")
    negative = [split for split, count in counts.items() if count < 0]
    if negative:
        raise PairGenerationError(f"the {negative[0]} count must not be negative")
    system_ids = {system.pk for system in systems} if systems is not None else None
    ordered_clips = sorted(clips, key=lambda clip: clip.pk)
    captions_by_clip: dict[int, list[Caption]] = {clip.pk: [] for clip in ordered_clips}
    for caption in Caption.objects.filter(clip__in=ordered_clips).select_related("clip").order_by("pk"):
        captions_by_clip[caption.clip_id].append(caption)
    pool = [_ClipCaptions(clip, captions_by_clip[clip.pk], system_ids) for clip in ordered_clips]

    pairs: list[CaptionPair] = []
    for split in SPLITS:
        count = counts.get(split, 0)
        if not count:
            continue
        # One generator per split so changing one split's count leaves the others' pairs alone.
        rng = random.Random(f"pairs:{seed}:{split}")
        shuffled = list(pool)
        rng.shuffle(shuffled)
        draw = _incorrect_draw(pool, rng) if split == CaptionPair.Split.HI else _enumerated_draw(split, rng)
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
