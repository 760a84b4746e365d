"""Parse pairwise judgements in BRACE's two layouts (protocols.md §6) into the importer's specs.

BRACE-Main: a list of items, one per clip::

    {"file_name": "x.wav", "references": [...],
     "Human-Human": [caption_0, caption_1, type_0, type_1, [votes]],
     "Human-Machine_1": [...], "Machine-Machine_2": [...]}

`Human-Human` -> HC, `Human-Machine_<n>` -> HM, `Machine-Machine_<n>` -> MM. Types `human` and
`caption_<n>` are human captions; any other type is a captioning system, kept as written (`LTU` and
`LTU_broken` are two systems). Votes are +1 (caption_0 preferred) or -1 (caption_1), three per pair
(0 is accepted as "no preference", as in the FENSE files). A human caption whose text is one of the
clip's references is that reference (the first equal one caption_0 did not take), as for FENSE files.

BRACE-Hallucination: items with `file_name` and keys `caption_<n>`, each
`[caption_0, caption_1, type_0, type_1, {"references": [...]}]`; one type is `human` (the original)
and the other `hallucination` (one word replaced), either side first. Each becomes a HALLU pair whose
known answer (`gold_choice`) is the original's side, with its own references and no votes. The
clip's reference list is the smallest list holding every pair's original and references (a caption
repeated within one pair's list stays repeated), in order of first appearance; the originals are
those references, the hallucinated captions are machine-made candidates without a system.

Captions are whitespace-normalised (the released files have captions that start with a newline);
clips are keyed by `file_name`. Anything that is not one of these layouts is refused naming the
file, item and key. Plain parsing: no database access.
"""

import re
from collections import Counter
from typing import Any

from corpus.models import Caption, Clip
from corpus.services.importing import ImportDataError, json_type_name, text_field_check
from ratings.models import CaptionPair
from ratings.services.pairwise_specs import CaptionSpec, ItemSpec, PairSpec, machine_caption, votes_parse

FENSE = "fense"
BRACE_MAIN = "brace-main"
BRACE_HALLUCINATION = "brace-hallucination"
BRACE_LAYOUTS = (BRACE_MAIN, BRACE_HALLUCINATION)
LAYOUT_NAMES = {FENSE: "FENSE", BRACE_MAIN: "BRACE-Main", BRACE_HALLUCINATION: "BRACE-Hallucination"}

MAIN_KEY = re.compile(r"^(?P<kind>Human-Human|Human-Machine|Machine-Machine)(?:_(?P<number>\d+))?$")
HALLUCINATION_KEY = re.compile(r"^caption_(?P<number>\d+)$")
HUMAN_TYPE = re.compile(r"^(?:human|caption_\d+)$")
SPLIT_OF_MAIN_KEY = {"Human-Human": "HC", "Human-Machine": "HM", "Machine-Machine": "MM"}
#: how many of the pair's two captions a split wants written by people
HUMANS_IN_SPLIT = {"HC": 2, "HM": 1, "MM": 0}
ORIGINAL, HALLUCINATION = "human", "hallucination"
MAIN_SHAPE = "expected [caption_0, caption_1, type_0, type_1, [votes]]"
HALLUCINATION_SHAPE = 'expected [caption_0, caption_1, type_0, type_1, {"references": [...]}]'

CLIP_KEY_LENGTH = min(Clip._meta.get_field("external_id").max_length, Clip._meta.get_field("file_name").max_length)
SOURCE_LABEL_LENGTH = Caption._meta.get_field("source_label").max_length


def normalise_whitespace(text: str) -> str:
    """Runs of whitespace (newlines included) become one space; leading and trailing ones go."""
    return " ".join(text.split())


# --- which layout --------------------------------------------------------------------------------


def _item_layout(item: Any, where: str) -> str | None:
    """The layout an item is written in; None for a non-object (the parser says what is wrong with it)."""
    if not isinstance(item, dict):
        return None
    if "file_name" not in item or "raw_name" in item or "audio_id" in item:
        return FENSE
    if any(MAIN_KEY.match(str(key)) for key in item):
        return BRACE_MAIN
    if any(HALLUCINATION_KEY.match(str(key)) for key in item):
        return BRACE_HALLUCINATION
    raise ImportDataError(
        f'{where}: has "file_name" but no pair key of a known layout (BRACE-Main: "Human-Human", '
        f'"Human-Machine_<n>", "Machine-Machine_<n>"; BRACE-Hallucination: "caption_<n>"; FENSE files name '
        f'clips by "raw_name" or "audio_id")'
    )


def layout_of_items(*, data: Any, source_name: str) -> str:
    """FENSE, BRACE-Main or BRACE-Hallucination, from the content; a file mixing layouts is refused."""
    if not isinstance(data, list):
        return FENSE  # the FENSE parser says "expected a list of items"
    first: tuple[int, str] | None = None
    for index, item in enumerate(data):
        layout = _item_layout(item, f"{source_name}: item {index}")
        if layout is None:
            continue
        if first is None:
            first = (index, layout)
        elif layout != first[1]:
            raise ImportDataError(
                f"{source_name}: item {index}: a {LAYOUT_NAMES[layout]} item in a file whose item {first[0]} is "
                f"{LAYOUT_NAMES[first[1]]}"
            )
    return first[1] if first else FENSE


# --- parsing -------------------------------------------------------------------------------------


def brace_items_parse(*, data: list, layout: str, source_name: str) -> list[ItemSpec]:
    """ItemSpecs of a BRACE file (`layout` from layout_of_items); ImportDataError naming file, item and key."""
    parse = _main_item_parse if layout == BRACE_MAIN else _hallucination_item_parse
    items, first_index = [], {}
    for index, raw_item in enumerate(data):
        where = f"{source_name}: item {index}"
        if not isinstance(raw_item, dict):
            raise ImportDataError(f"{where}: expected an object, got {json_type_name(raw_item)}")
        item = parse(raw_item, where)
        if item.external_id in first_index:
            raise ImportDataError(
                f'{where}: clip "{item.external_id}" already appears in item {first_index[item.external_id]}'
            )
        first_index[item.external_id] = index
        items.append(item)
    return items


def _text(value: Any, where: str, max_length: int | None = None) -> str:
    text = normalise_whitespace(text_field_check(value=value, where=where, max_length=None))
    if max_length is not None and len(text) > max_length:
        raise ImportDataError(f"{where}: longer than {max_length} characters")
    return text


def _file_name(raw_item: dict, where: str) -> str:
    return _text(raw_item.get("file_name"), f'{where} key "file_name"', CLIP_KEY_LENGTH)


def _caption_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ImportDataError(f"{where}: expected a non-empty list of captions, got {json_type_name(value)}")
    return [_text(text, f"{where} index {position}") for position, text in enumerate(value)]


def _reference_specs(texts: list[str]) -> tuple[CaptionSpec, ...]:
    return tuple(
        CaptionSpec(
            key=("reference", position),
            text=text,
            author_kind=Caption.AuthorKind.HUMAN,
            source_label=f"human_{position + 1}",
            position=position,
        )
        for position, text in enumerate(texts)
    )


def _numbered_keys(raw_item: dict, pattern: re.Pattern) -> list[str]:
    """The item's pair keys in their numbers' order (caption_2 before caption_10)."""
    keys = [key for key in raw_item if pattern.match(str(key))]

    def order(key: str) -> tuple[str, int]:
        number = pattern.match(key)["number"]
        return (key.rsplit("_", 1)[0], int(number)) if number else (key, 0)

    return sorted(keys, key=order)


def _main_item_parse(raw_item: dict, where: str) -> ItemSpec:
    file_name = _file_name(raw_item, where)
    if "references" not in raw_item:
        raise ImportDataError(f'{where} key "references": missing')
    references = _reference_specs(_caption_list(raw_item["references"], f'{where} key "references"'))
    pairs = []
    for key in _numbered_keys(raw_item, MAIN_KEY):
        entry = raw_item[key]
        if entry is None:
            continue
        pairs.append(_main_pair_parse(entry, key, f'{where} key "{key}"', references))
    return ItemSpec(external_id=file_name, file_name=file_name, references=references, pairs=tuple(pairs))


def _main_pair_parse(entry: Any, key: str, where: str, references: tuple[CaptionSpec, ...]) -> PairSpec:
    if not isinstance(entry, list) or len(entry) != 5 or not isinstance(entry[4], list):
        raise ImportDataError(f"{where}: {MAIN_SHAPE}")
    split = SPLIT_OF_MAIN_KEY[MAIN_KEY.match(key)["kind"]]
    texts = [_text(entry[side], f"{where} caption_{side}") for side in (0, 1)]
    types = [_text(entry[2 + side], f"{where} type_{side}", SOURCE_LABEL_LENGTH) for side in (0, 1)]
    humans = [bool(HUMAN_TYPE.match(label)) for label in types]
    if sum(humans) != HUMANS_IN_SPLIT[split]:
        raise ImportDataError(
            f'{where}: types {types[0]!r} and {types[1]!r} do not fit the key (human types are "human" and '
            f'"caption_<n>"; a {key.split("_")[0]} pair has {HUMANS_IN_SPLIT[split]} human caption(s))'
        )
    caption_0 = _main_caption(texts[0], types[0], humans[0], references, f"{where} type_0")
    caption_1 = _main_caption(texts[1], types[1], humans[1], references, f"{where} type_1", taken=caption_0.key)
    if caption_0.key == caption_1.key:
        raise ImportDataError(f"{where}: caption_0 and caption_1 are the same caption")
    return PairSpec(
        source_key=key,
        split=split,
        caption_a=caption_0,
        caption_b=caption_1,
        choices=votes_parse(entry[4], where, "+1 or -1"),
        labels=(types[0], types[1]),
    )


def _main_caption(
    text: str, label: str, is_human: bool, references: tuple[CaptionSpec, ...], where: str, taken: tuple = ()
) -> CaptionSpec:
    if not is_human:
        return machine_caption(text, label, label, where)
    for reference in references:
        if reference.text == text and reference.key != taken:
            return reference
    return CaptionSpec(key=("human", label, text), text=text, author_kind=Caption.AuthorKind.HUMAN, source_label=label)


def _hallucination_item_parse(raw_item: dict, where: str) -> ItemSpec:
    file_name = _file_name(raw_item, where)
    entries = []
    for key in _numbered_keys(raw_item, HALLUCINATION_KEY):
        if raw_item[key] is not None:
            entries.append((key, *_hallucination_entry(raw_item[key], f'{where} key "{key}"')))
    # The clip's references: every pair's original and references, each text as often as one pair needs it.
    needed: Counter[str] = Counter()
    order: list[str] = []
    for _key, texts, _types, pair_references in entries:
        original = texts[_types.index(ORIGINAL)]
        counts = Counter([original, *pair_references])
        for text in [original, *pair_references]:
            if text not in needed:
                order.append(text)
            needed[text] = max(needed[text], counts[text])
    clip_texts = [text for text in order for _ in range(needed[text])]
    references = _reference_specs(clip_texts)
    first_reference = {}
    for reference in references:
        first_reference.setdefault(reference.text, reference)
    pairs = []
    for key, texts, types, pair_references in entries:
        captions = [
            first_reference[text]
            if label == ORIGINAL
            else CaptionSpec(
                key=("machine", None, text),
                text=text,
                author_kind=Caption.AuthorKind.MACHINE,
                source_label=HALLUCINATION,
            )
            for text, label in zip(texts, types, strict=True)
        ]
        pairs.append(
            PairSpec(
                source_key=key,
                split=CaptionPair.Split.HALLU,
                caption_a=captions[0],
                caption_b=captions[1],
                choices=(),
                labels=(types[0], types[1]),
                references=tuple(pair_references),
                gold_choice=CaptionPair.Choice.A if types[0] == ORIGINAL else CaptionPair.Choice.B,
            )
        )
    return ItemSpec(external_id=file_name, file_name=file_name, references=references, pairs=tuple(pairs))


def _hallucination_entry(entry: Any, where: str) -> tuple[list[str], list[str], list[str]]:
    """(the two captions, their types, the pair's references) of a BRACE-Hallucination entry."""
    if not isinstance(entry, list) or len(entry) != 5 or not isinstance(entry[4], dict):
        raise ImportDataError(f"{where}: {HALLUCINATION_SHAPE}")
    texts = [_text(entry[side], f"{where} caption_{side}") for side in (0, 1)]
    types = [_text(entry[2 + side], f"{where} type_{side}") for side in (0, 1)]
    if sorted(types) != [HALLUCINATION, ORIGINAL]:
        raise ImportDataError(
            f'{where}: types {types[0]!r} and {types[1]!r}: expected one "human" (the original) and one "hallucination"'
        )
    if texts[0] == texts[1]:
        raise ImportDataError(f"{where}: the hallucinated caption is the original caption")
    if "references" not in entry[4]:
        raise ImportDataError(f'{where} index 4 key "references": missing')
    pair_references = _caption_list(entry[4]["references"], f'{where} index 4 key "references"')
    return texts, types, pair_references
