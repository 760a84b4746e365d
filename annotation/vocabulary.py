"""The words annotations are checked against: the attribute tag library (with its templates) and the list of
common sound sources. Plain Python (no Django import): the services pass in the tag rows they read.

- Texts compare by `library_key`: trimmed, single spaces, case-folded ("Very  Loud " = "very loud").
- A placeholder tag of AudioCaps-F's library ("on a xxx", "against xx") is a template, "on a ___": an attribute
  that fills the blank with one or more words ("on a wooden table") belongs to it. The editor offers the
  template and asks for the word; the tag's own text with its x's stays what the released library says.
- A source is listed when it is in annotation/data/sound_sources.json, in the singular or the plural.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SOURCES_FILE = DATA / "sound_sources.json"
BLANK = "___"
_PLACEHOLDER_WORD = re.compile(r"^x{2,}$", re.IGNORECASE)


def library_key(text: str) -> str:
    """How texts are compared with the tag library and the source list: trimmed, case-folded, single spaces."""
    return " ".join(text.split()).casefold()


def tag_template(text: str) -> str:
    """ "on a ___" for the placeholder tag "on a xxx"; "" for an ordinary tag."""
    words = text.split()
    if not any(_PLACEHOLDER_WORD.match(word) for word in words):
        return ""
    return " ".join(BLANK if _PLACEHOLDER_WORD.match(word) else word for word in words)


def _template_pattern(template: str) -> re.Pattern:
    before, _blank, after = library_key(template).partition(BLANK)
    return re.compile(re.escape(before) + r"\S.*" + re.escape(after) + "$")


class AttributeVocabulary:
    """Finds the library tag of an attribute: by its key, else by the first template it fills in."""

    def __init__(self, tags: Iterable[tuple[object, str, str]]) -> None:
        """`tags`: (tag id, text, template) rows."""
        self.by_key: dict[str, object] = {}
        self.templates: list[tuple[re.Pattern, object]] = []
        for tag_id, text, template in tags:
            self.by_key.setdefault(library_key(text), tag_id)
            if template:
                self.templates.append((_template_pattern(template), tag_id))

    def tag_of(self, text: str) -> object | None:
        key = library_key(text)
        if not key:
            return None
        if key in self.by_key:
            return self.by_key[key]
        for pattern, tag_id in self.templates:
            if pattern.match(key):
                return tag_id
        return None


@lru_cache(maxsize=1)
def sound_sources() -> tuple[str, ...]:
    """The product's list of common sound sources, in the file's order (most used first)."""
    return tuple(json.loads(SOURCES_FILE.read_text(encoding="utf-8"))["sources"])


@lru_cache(maxsize=1)
def _source_keys() -> frozenset[str]:
    return frozenset(library_key(source) for source in sound_sources())


def _singulars(key: str) -> list[str]:
    """Plural readings of the last word: "dogs" -> "dog", "glasses" -> "glass", "puppies" -> "puppy"."""
    head, _space, last = key.rpartition(" ")
    prefix = f"{head} " if head else ""
    forms = []
    if last.endswith("ies") and len(last) > 4:
        forms.append(prefix + last[:-3] + "y")
    if last.endswith("es") and len(last) > 3:
        forms.append(prefix + last[:-2])
    if last.endswith("s") and len(last) > 2:
        forms.append(prefix + last[:-1])
    return forms


def source_is_listed(text: str) -> bool:
    """Whether the source is in the list of common sound sources (singular or plural)."""
    key = library_key(text)
    if not key:
        return False
    keys = _source_keys()
    return key in keys or f"{key}s" in keys or any(form in keys for form in _singulars(key))
