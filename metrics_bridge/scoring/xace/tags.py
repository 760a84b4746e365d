"""The attribute tag library as X-ACE uses it: nearest tag (sub-category) of an attribute and antonym tags.

The library's one copy is the product's data file annotation/data/attribute_tags.json, seeded into the
AttributeTag table; the Django side passes it in ScoringContext.attribute_tags. Plain-Python callers
(benches, scripts) read a file of that format with `load_tag_library(path)`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .matching import attribute_text

_INTENSIFIERS = {"very", "quite", "really", "extremely", "slightly", "somewhat", "rather", "fairly", "so", "too"}


def load_tag_library(path: str | Path) -> dict[str, dict]:
    """{tag: {"class", "sym", "ant"}} from a JSON file in the AudioCaps-F tag-library format."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a tag library is a JSON object {{tag: {{class, sym, ant}}}}")
    return data


class TagLibrary:
    """Exact tag lookup (intensifiers and -ly dropped) and antonym test; empty when no library is given."""

    def __init__(self, tags: dict[str, dict] | None) -> None:
        self.tags = {tag.strip().lower(): info for tag, info in (tags or {}).items()}
        self.names = list(self.tags)

    def exact(self, attribute: str) -> dict | None:
        words = [w for w in attribute_text(attribute).split() if w not in _INTENSIFIERS]
        text = " ".join(words)
        for candidate in (
            text,
            text[:-2] if text.endswith("ly") else None,
            text[:-3] + "y" if text.endswith("ily") else None,
        ):
            if candidate and candidate in self.tags:
                return self.tags[candidate]
        return None

    def are_antonyms(self, first: str, second: str) -> bool:
        a, b = self.exact(first), self.exact(second)
        if a is None or b is None or a.get("class") != b.get("class"):
            return False
        return b.get("sym") in (a.get("ant") or []) or a.get("sym") in (b.get("ant") or [])
