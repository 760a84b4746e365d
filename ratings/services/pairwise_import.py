"""Import pairwise human judgements in the FENSE format (Clotho-Eval, AudioCaps-Eval) or BRACE's.

The layout is detected from the content (`brace_import.layout_of_items`); BRACE files are parsed by
`brace_import` into the same specs and written by the same code below. What follows is the FENSE layout.

The input is a list of items, one per clip:
    {"raw_name": "x.wav", "audio_id": "<youtube id>", "references": [...],
     "HC": [caption_a, caption_b, source_a, source_b, (extra fields...), [votes]], "HI": ..., "HM": ..., "MM_1": ...}
`audio_id` or `raw_name` may be missing (one is needed); pair keys may be missing or null (skipped);
the votes list is always the last element of a pair entry, one vote per judge: +1 a better,
-1 b better, 0 no preference.

Authorship comes from the split, never from how a source label is spelled (Clotho-Eval writes
`human_k`, other files of the format use opaque ids for people and `<method>_<number>` for models):
- HC: both captions are human captions of the clip; HI: caption a is a human caption of the clip and
  caption b a human caption of another clip; HM: a is human, b machine; MM: both machine.
- A human caption equal to one of the clip's references IS that reference: the slot a `human_k`
  label names when its text is equal, else the first reference with equal text (for caption b, never
  the reference caption a already is, so repeated references stay two captions). Otherwise it is a
  human candidate of THIS clip keyed by (clip, source label, text) (HI's caption b always is, unless
  its text equals one of this clip's references).
- A machine caption's system is its source label without a trailing `_<number>` of three or more
  digits (`acT_12345` -> `acT`; Clotho's `rl_dbs_3` stays whole); the full label is kept as the
  caption's source label. Machine candidates are keyed by (clip, system, text).

How rows are stored (natural keys make a second run change nothing):
- Clip: keyed by `audio_id` when the item has one, else by `raw_name`; `raw_name` goes to Clip.file_name.
- References: exactly as listed (duplicates included), keyed by (clip, position), labelled `human_<position+1>`.
- Pairs are keyed by (clip, JSON key) with split HC/HI/HM/MM; votes by (judge, pair), with judge
  accounts `<dataset>-judge-1..n` (n = longest votes list), one per vote column.

Re-importing a file that an earlier version of this importer filed by label spelling corrects it:
a caption a pair pointed at that is not what the split makes of it is merged into the right caption
(its pairs, ratings and campaign memberships move over; derived metric scores go with it), and
systems left without captions are deleted. Nothing is duplicated (see `_captions_correct`).
"""

import re
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from common.structured_log import logged_import
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.importing import (
    ImportDataError,
    ImportSummary,
    dataset_get_or_create,
    dataset_name_validate,
    import_account_get_or_create,
    json_file_load,
    json_nul_check,
    json_type_name,
    text_field_check,
)
from ratings.models import CaptionPair, PairwiseVote, Source
from ratings.services.brace_import import BRACE_LAYOUTS, LAYOUT_NAMES, brace_items_parse, layout_of_items
from ratings.services.caption_merge import caption_merge
from ratings.services.pairwise_specs import CaptionSpec, ItemSpec, PairSpec, machine_caption, votes_parse

__all__ = ["CaptionSpec", "ItemSpec", "PairSpec", "pairwise_judgements_import", "system_name_from_label"]

PAIR_KEY = re.compile(r"^(?:HC|HI|HM|MM_\d+)$")
HUMAN_SLOT = re.compile(r"(?:^|_)human_(?P<number>\d+)$")
SYSTEM_RUN_NUMBER = re.compile(r"^(?P<system>.+?)_\d{3,}$")
# Who wrote caption a and caption b in each split.
SPLIT_AUTHORS = {
    "HC": ("human", "human"),
    "HI": ("human", "human"),
    "HM": ("human", "machine"),
    "MM": ("machine", "machine"),
}
PAIR_SHAPE = "expected [caption_a, caption_b, source_a, source_b, votes]"
JUDGE_ROLE = "rater"

EXTERNAL_ID_LENGTH = Clip._meta.get_field("external_id").max_length
FILE_NAME_LENGTH = Clip._meta.get_field("file_name").max_length
SOURCE_LABEL_LENGTH = Caption._meta.get_field("source_label").max_length


def pairwise_judgements_import_from_path(*, path: Path | str, dataset_name: str) -> ImportSummary:
    data, source_name = json_file_load(path=path)
    return pairwise_judgements_import(data=data, dataset_name=dataset_name, source_name=source_name)


@logged_import("pairwise_judgements")
def pairwise_judgements_import(*, data: Any, dataset_name: str, source_name: str) -> ImportSummary:
    """Validate everything, then write in one transaction. Raises ImportDataError before any write."""
    dataset_name_validate(name=dataset_name)
    layout = layout_of_items(data=data, source_name=source_name)
    items = pairwise_items_parse(data=data, source_name=source_name, layout=layout)
    summary = ImportSummary(source_name=source_name)
    with transaction.atomic():
        dataset = dataset_get_or_create(name=dataset_name, summary=summary)
        _layout_ensure(dataset, layout, source_name)
        judge_count = max((len(pair.choices) for item in items for pair in item.pairs), default=0)
        judges = [
            import_account_get_or_create(
                username=f"{dataset.name}-judge-{n}", role=JUDGE_ROLE, summary=summary, kind="judges"
            )
            for n in range(1, judge_count + 1)
        ]
        systems = _systems_ensure(items, summary)
        clips = _clips_ensure(dataset, items, summary)
        captions = _captions_ensure(dataset, items, clips, systems, summary)
        _captions_correct(dataset, items, clips, captions, summary)
        pairs = _pairs_ensure(dataset, items, clips, captions, summary)
        _votes_ensure(dataset, items, clips, pairs, judges, summary)
    return summary


# --- Validation (no database access) ------------------------------------------------------------


def pairwise_items_parse(*, data: Any, source_name: str, layout: str | None = None) -> list[ItemSpec]:
    """Items of a FENSE or BRACE file (`layout` detected from the content when not given)."""
    json_nul_check(data=data, source_name=source_name)
    layout = layout or layout_of_items(data=data, source_name=source_name)
    if layout in BRACE_LAYOUTS:
        return brace_items_parse(data=data, layout=layout, source_name=source_name)
    if not isinstance(data, list):
        raise ImportDataError(f"{source_name}: expected a list of items, got {json_type_name(data)}")
    items: list[ItemSpec] = []
    first_index: dict[str, int] = {}
    for index, raw_item in enumerate(data):
        item = _item_parse(raw_item, f"{source_name}: item {index}")
        if item.external_id in first_index:
            earlier = first_index[item.external_id]
            where = f"{source_name}: item {index}"
            raise ImportDataError(f'{where}: clip "{item.external_id}" already appears in item {earlier}')
        first_index[item.external_id] = index
        items.append(item)
    return items


def _item_parse(raw_item: Any, where: str) -> ItemSpec:
    if not isinstance(raw_item, dict):
        raise ImportDataError(f"{where}: expected an object, got {json_type_name(raw_item)}")
    audio_id = raw_item.get("audio_id")
    raw_name = raw_item.get("raw_name")
    if audio_id is not None:
        if isinstance(audio_id, int) and not isinstance(audio_id, bool):
            audio_id = str(audio_id)
        audio_id = text_field_check(value=audio_id, where=f'{where} key "audio_id"', max_length=EXTERNAL_ID_LENGTH)
    if raw_name is not None:
        raw_name = text_field_check(value=raw_name, where=f'{where} key "raw_name"', max_length=FILE_NAME_LENGTH)
    if audio_id is None and raw_name is None:
        raise ImportDataError(f'{where}: needs "audio_id" or "raw_name" to identify the clip')

    if "references" not in raw_item:
        raise ImportDataError(f'{where} key "references": missing')
    raw_references = raw_item["references"]
    if not isinstance(raw_references, list) or not raw_references:
        raise ImportDataError(
            f'{where} key "references": expected a non-empty list of captions, got {json_type_name(raw_references)}'
        )
    references = tuple(
        CaptionSpec(
            key=("reference", position),
            text=text_field_check(value=text, where=f'{where} key "references" index {position}', max_length=None),
            author_kind=Caption.AuthorKind.HUMAN,
            source_label=f"human_{position + 1}",
            position=position,
        )
        for position, text in enumerate(raw_references)
    )

    pairs = []
    for key in sorted(k for k in raw_item if PAIR_KEY.match(k)):
        if raw_item[key] is None:
            continue
        pairs.append(_pair_parse(raw_item[key], key, f'{where} key "{key}"', references))
    return ItemSpec(external_id=audio_id or raw_name, file_name=raw_name, references=references, pairs=tuple(pairs))


def _pair_parse(entry: Any, key: str, where: str, references: tuple[CaptionSpec, ...]) -> PairSpec:
    if not isinstance(entry, list) or len(entry) < 5 or not isinstance(entry[-1], list):
        raise ImportDataError(f"{where}: {PAIR_SHAPE}")
    split = key.split("_")[0]
    author_a, author_b = SPLIT_AUTHORS[split]
    text_a = text_field_check(value=entry[0], where=f"{where} caption_a", max_length=None)
    text_b = text_field_check(value=entry[1], where=f"{where} caption_b", max_length=None)
    source_a = text_field_check(value=entry[2], where=f"{where} source_a", max_length=SOURCE_LABEL_LENGTH).strip()
    source_b = text_field_check(value=entry[3], where=f"{where} source_b", max_length=SOURCE_LABEL_LENGTH).strip()
    caption_a = _caption_resolve(text_a, source_a, author_a, references, f"{where} source_a")
    # Excluding caption a's reference keeps equal texts in a repeated reference list apart.
    caption_b = _caption_resolve(text_b, source_b, author_b, references, f"{where} source_b", taken=caption_a.key)
    if caption_a.key == caption_b.key:
        raise ImportDataError(f"{where}: caption_a and caption_b are the same caption")
    return PairSpec(
        source_key=key,
        split=split,
        caption_a=caption_a,
        caption_b=caption_b,
        choices=votes_parse(entry[-1], where, "+1, -1 or 0"),
        labels=(source_a, source_b),
    )


def system_name_from_label(label: str) -> str:
    """`acT_12345` -> `acT`: a trailing run number of three or more digits is not part of the system's name."""
    match = SYSTEM_RUN_NUMBER.match(label)
    return match.group("system") if match else label


def _caption_resolve(
    text: str, source: str, author: str, references: tuple[CaptionSpec, ...], where: str, taken: tuple = ()
) -> CaptionSpec:
    if author == "machine":
        return machine_caption(text, system_name_from_label(source), source, where)
    slot = HUMAN_SLOT.search(source)
    if slot is not None:
        index = int(slot.group("number")) - 1
        if 0 <= index < len(references) and references[index].text == text and references[index].key != taken:
            return references[index]
    for reference in references:
        if reference.text == text and reference.key != taken:
            return reference
    return CaptionSpec(
        key=("human", source, text), text=text, author_kind=Caption.AuthorKind.HUMAN, source_label=source
    )


# --- Writing (inside the import transaction) ----------------------------------------------------


def _layout_ensure(dataset: Dataset, layout: str, source_name: str) -> None:
    """A dataset holds pairs of one layout (its agreement protocol follows from it): set it, or refuse a file
    of another layout when the dataset already has pairs."""
    if dataset.judgement_layout == layout:
        return
    if CaptionPair.objects.filter(clip__dataset=dataset).exists():
        raise ImportDataError(
            f'{source_name}: a {LAYOUT_NAMES[layout]} file, but dataset "{dataset.name}" holds '
            f"{LAYOUT_NAMES[dataset.judgement_layout]} pairs: import it into another dataset"
        )
    dataset.judgement_layout = layout
    dataset.save(update_fields=["judgement_layout", "updated_at"])


def _systems_ensure(items: list[ItemSpec], summary: ImportSummary) -> dict[str, CaptioningSystem]:
    names = {c.system_name for item in items for c in item.candidates if c.system_name}
    systems = {s.name: s for s in CaptioningSystem.objects.filter(name__in=names)}
    missing = [CaptioningSystem(name=name) for name in sorted(names - systems.keys())]
    CaptioningSystem.objects.bulk_create(missing)
    systems.update({s.name: s for s in _with_primary_keys(missing)})
    summary.add("captioning systems", "created", len(missing))
    summary.add("captioning systems", "unchanged", len(names) - len(missing))
    return systems


def _clips_ensure(dataset: Dataset, items: list[ItemSpec], summary: ImportSummary) -> dict[str, Clip]:
    clips = {clip.external_id: clip for clip in Clip.objects.filter(dataset=dataset)}
    new_clips, renamed = [], []
    for item in items:
        clip = clips.get(item.external_id)
        if clip is None:
            new_clips.append(Clip(dataset=dataset, external_id=item.external_id, file_name=item.file_name or ""))
        elif item.file_name is not None and clip.file_name != item.file_name:
            clip.file_name = item.file_name
            renamed.append(clip)
    Clip.objects.bulk_create(new_clips)
    _bulk_update(Clip, renamed, ["file_name"])
    clips.update({clip.external_id: clip for clip in _with_primary_keys(new_clips)})
    summary.add("clips", "created", len(new_clips))
    summary.add("clips", "updated", len(renamed))
    summary.add("clips", "unchanged", len(items) - len(new_clips) - len(renamed))
    return clips


def _caption_key_of(caption: Caption, system_names: dict[int, str]) -> tuple:
    if caption.role == Caption.Role.REFERENCE:
        return ("reference", caption.position)
    if caption.author_kind == Caption.AuthorKind.MACHINE:
        return ("machine", system_names.get(caption.system_id), caption.text)
    return ("human", caption.source_label, caption.text)


def _captions_ensure(dataset, items, clips, systems, summary) -> dict[tuple[int, tuple], Caption]:
    """(clip id, caption key) -> Caption for every caption the items mention."""
    system_names = {system.pk: name for name, system in systems.items()}
    system_names.update(
        CaptioningSystem.objects.filter(captions__clip__dataset=dataset).values_list("pk", "name").distinct()
    )
    existing: dict[tuple[int, tuple], Caption] = {}
    # Corpus captions only: an HI pair's copy of another clip's caption (a pair artefact) is never the
    # caption an imported entry stands for, even when its text and label match.
    for caption in Caption.objects.corpus().filter(clip__dataset=dataset).order_by("pk"):
        existing.setdefault((caption.clip_id, _caption_key_of(caption, system_names)), caption)

    new_captions, edited_references = [], []
    counts = {"reference captions": [0, 0], "candidate captions": [0, 0]}  # [unchanged, created]
    for item in items:
        clip = clips[item.external_id]
        for spec in [*item.references, *item.candidates]:
            kind = "reference captions" if spec.position is not None else "candidate captions"
            caption = existing.get((clip.pk, spec.key))
            if caption is None:
                caption = Caption(
                    clip=clip,
                    text=spec.text,
                    role=Caption.Role.REFERENCE if spec.position is not None else Caption.Role.CANDIDATE,
                    author_kind=spec.author_kind,
                    system=systems[spec.system_name] if spec.system_name else None,
                    position=spec.position,
                    source_label=spec.source_label,
                )
                new_captions.append(caption)
                existing[(clip.pk, spec.key)] = caption
                counts[kind][1] += 1
            elif spec.position is not None and caption.text != spec.text:
                # Same slot, new text: the reference list was corrected at its source.
                caption.text = spec.text
                edited_references.append(caption)
            else:
                counts[kind][0] += 1
    Caption.objects.bulk_create(new_captions)
    _with_primary_keys(new_captions)
    _bulk_update(Caption, edited_references, ["text"])
    for kind, (unchanged, created) in counts.items():
        summary.add(kind, "created", created)
        summary.add(kind, "unchanged", unchanged)
    summary.add("reference captions", "updated", len(edited_references))
    return existing


def _captions_correct(dataset, items, clips, captions, summary) -> None:
    """Merge captions an earlier import filed by label spelling into the caption the split makes them.

    Such a caption is recognisable: a pair of this file points at it, with the same text and the same
    source label as the entry, but it is not the caption the entry resolves to now (e.g. a human caption
    with an opaque label filed as a machine caption of a "system" named after the label, or a machine
    caption filed under `method_12345` instead of `method`). Captions a changed file no longer mentions
    are left alone.
    """
    pair_rows = CaptionPair.objects.filter(clip__dataset=dataset).values_list(
        "clip_id", "source_key", "caption_a_id", "caption_b_id"
    )
    old_ids = {(clip_id, key): (caption_a_id, caption_b_id) for clip_id, key, caption_a_id, caption_b_id in pair_rows}
    moves: dict[int, tuple[Caption, str]] = {}  # old caption id -> (the right caption, the entry's label)
    for item in items:
        clip = clips[item.external_id]
        for spec in item.pairs:
            for old_id, caption_spec, label in zip(
                old_ids.get((clip.pk, spec.source_key), ()), (spec.caption_a, spec.caption_b), spec.labels, strict=False
            ):
                right = captions[(clip.pk, caption_spec.key)]
                if old_id != right.pk:
                    moves.setdefault(old_id, (right, label))
    if not moves:
        return
    system_ids = set()
    for old in Caption.objects.filter(pk__in=moves, role=Caption.Role.CANDIDATE).order_by("pk"):
        right, label = moves[old.pk]
        if old.text != right.text or old.source_label != label:
            continue  # the file changed this pair's caption: not a misfiled copy
        if old.system_id:
            system_ids.add(old.system_id)
        caption_merge(duplicate=old, into=right)
        summary.add("misfiled captions", "updated")
    emptied = CaptioningSystem.objects.filter(pk__in=system_ids, captions__isnull=True)
    removed = emptied.count()
    if removed:
        summary.extra["systems removed (misfiled names)"] = removed
        emptied.delete()


def _pairs_ensure(dataset, items, clips, captions, summary) -> dict[tuple[int, str], CaptionPair]:
    existing = {(pair.clip_id, pair.source_key): pair for pair in CaptionPair.objects.filter(clip__dataset=dataset)}
    new_pairs, changed_pairs, unchanged = [], [], 0
    for item in items:
        clip = clips[item.external_id]
        for spec in item.pairs:
            caption_a = captions[(clip.pk, spec.caption_a.key)]
            caption_b = captions[(clip.pk, spec.caption_b.key)]
            pair = existing.get((clip.pk, spec.source_key))
            references = list(spec.references)
            if pair is None:
                pair = CaptionPair(
                    clip=clip,
                    caption_a=caption_a,
                    caption_b=caption_b,
                    split=spec.split,
                    source_key=spec.source_key,
                    references=references,
                    gold_choice=spec.gold_choice,
                )
                new_pairs.append(pair)
                existing[(clip.pk, spec.source_key)] = pair
            elif (pair.caption_a_id, pair.caption_b_id, pair.split, pair.references, pair.gold_choice) != (
                caption_a.pk,
                caption_b.pk,
                spec.split,
                references,
                spec.gold_choice,
            ):
                pair.caption_a, pair.caption_b, pair.split = caption_a, caption_b, spec.split
                pair.references, pair.gold_choice = references, spec.gold_choice
                changed_pairs.append(pair)
            else:
                unchanged += 1
    CaptionPair.objects.bulk_create(new_pairs)
    _with_primary_keys(new_pairs)
    _bulk_update(CaptionPair, changed_pairs, ["caption_a", "caption_b", "split", "references", "gold_choice"])
    summary.add("pairs", "created", len(new_pairs))
    summary.add("pairs", "updated", len(changed_pairs))
    summary.add("pairs", "unchanged", unchanged)
    return existing


def _votes_ensure(dataset, items, clips, pairs, judges, summary) -> None:
    existing = {
        (vote.rater_id, vote.pair_id): vote
        # Imported votes belong to no campaign; a judge's votes made in campaigns are separate rows, never touched.
        for vote in PairwiseVote.objects.filter(pair__clip__dataset=dataset, rater__in=judges, campaign__isnull=True)
    }
    new_votes, changed_votes, unchanged = [], [], 0
    for item in items:
        clip = clips[item.external_id]
        for spec in item.pairs:
            pair = pairs[(clip.pk, spec.source_key)]
            for judge, choice in zip(judges, spec.choices, strict=False):
                vote = existing.get((judge.pk, pair.pk))
                if vote is None:
                    new_votes.append(PairwiseVote(rater=judge, pair=pair, choice=choice, source=Source.IMPORT))
                elif vote.choice != choice:
                    vote.choice = choice
                    changed_votes.append(vote)
                else:
                    unchanged += 1
    PairwiseVote.objects.bulk_create(new_votes)
    _bulk_update(PairwiseVote, changed_votes, ["choice"])
    summary.add("votes", "created", len(new_votes))
    summary.add("votes", "updated", len(changed_votes))
    summary.add("votes", "unchanged", unchanged)


def _bulk_update(model, objects: list, fields: list[str]) -> None:
    """bulk_update skips auto_now, so updated_at is set here."""
    if not objects:
        return
    now = timezone.now()
    for obj in objects:
        obj.updated_at = now
    model.objects.bulk_update(objects, [*fields, "updated_at"])


def _with_primary_keys(objects: list) -> list:
    """bulk_create sets primary keys on PostgreSQL and SQLite >= 3.35; later steps rely on them."""
    if any(obj.pk is None for obj in objects):
        raise RuntimeError("this database does not return primary keys from bulk inserts")
    return objects
