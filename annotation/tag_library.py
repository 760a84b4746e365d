"""The attribute tag library shipped with the product: AudioCaps-F's released library
(annotation/data/attribute_tags.json, kept as released) and this product's extension of it
(annotation/data/attribute_tags_extension.json: the Count category's tags)."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from annotation.vocabulary import tag_template

DATA = Path(__file__).resolve().parent / "data"
TAGS_FILE = DATA / "attribute_tags.json"
EXTENSION_FILE = DATA / "attribute_tags_extension.json"
# The released tag file calls the variation category "Change"; the X-ACE paper (Table 9) and the
# schema name it "Variation".
CATEGORY_NAMES = {"Change": "Variation"}


def _seed_file(tag_model, path: Path, extra_defaults) -> None:
    for text, entry in json.loads(path.read_text()).items():
        tag_model.objects.update_or_create(
            text=text,
            defaults={
                "category": CATEGORY_NAMES.get(entry["class"], entry["class"]),
                "synonym_group": entry["sym"],
                "antonym_groups": entry.get("ant", []),
                **extra_defaults(text),
            },
        )


def attribute_tags_seed(tag_model) -> None:
    """Create or update every AudioCaps-F tag; takes the model so data migrations can pass the historical one."""
    _seed_file(tag_model, TAGS_FILE, lambda text: {})


def attribute_tag_extensions_seed(tag_model) -> None:
    """Mark the placeholder tags of AudioCaps-F's library as templates and add the product's own tags (origin
    "product"); for data migrations from 0007 on, like attribute_tags_seed."""
    for tag in tag_model.objects.all():
        template = tag_template(tag.text)
        if template != tag.template:
            tag.template = template
            tag.save(update_fields=["template"])
    _seed_file(tag_model, EXTENSION_FILE, lambda text: {"origin": "product", "template": tag_template(text)})


COUNT_CATEGORY = "Count"


@dataclass(frozen=True)
class TagFacts:
    """What the library says about one tag that decides whether two attributes of one event clash."""

    text: str
    category: str
    synonym_group: int
    antonym_groups: tuple[int, ...]


def tag_facts_read(rows: Iterable[tuple[object, str, str, int, list]]) -> dict[object, TagFacts]:
    """tag id -> TagFacts from (id, text, category, synonym_group, antonym_groups) rows of the tag table."""
    return {pk: TagFacts(text, category, group, tuple(antonyms or ())) for pk, text, category, group, antonyms in rows}


def tag_conflict(first: TagFacts, second: TagFacts) -> str | None:
    """ "antonym" when the library lists the two tags as opposites (loud / quiet, frequently / sparse), "count"
    for two different counts (three times / several times), else None. Groups are numbered per category."""
    if first.category != second.category or first.synonym_group == second.synonym_group:
        return None
    if first.category == COUNT_CATEGORY:
        return "count"
    if second.synonym_group in first.antonym_groups or first.synonym_group in second.antonym_groups:
        return "antonym"
    return None
