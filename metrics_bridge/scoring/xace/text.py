"""Word-level helpers shared by the X-ACE extractor, the graph and the bench: lexicon and lemmas.

lemminflect ships its lemma tables inside the wheel, so nothing is downloaded at run time.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from lemminflect import getAllInflections, getAllLemmas

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
LEXICON_FILE = DATA_DIR / "xace_lexicon.json"

_ARTICLES = {"a", "an", "the", "its", "his", "her", "their", "some", "this", "that", "these", "those"}


@lru_cache(maxsize=1)
def lexicon() -> dict:
    """The packaged lexicon: word lists the rule extractor needs (sets for the list-valued keys)."""
    raw = json.loads(LEXICON_FILE.read_text(encoding="utf-8"))
    return {key: (value if isinstance(value, dict) else set(value)) for key, value in raw.items()}


@lru_cache(maxsize=20000)
def readings(word: str) -> dict[str, tuple[str, ...]]:
    """Possible parts of speech of a word with their lemmas, e.g. barks -> {NOUN: (bark,), VERB: (bark,)}."""
    return getAllLemmas(word)


@lru_cache(maxsize=20000)
def is_participle(word: str) -> bool:
    """Past participle of some verb ("struck", "rung", "thrown", "filed"): passives after be/being."""
    for verb in readings(word).get("VERB", ()):
        forms = getAllInflections(verb, upos="VERB")
        if word in forms.get("VBN", ()) or word in forms.get("VBD", ()):
            return True
    return False


@lru_cache(maxsize=20000)
def lemma(word: str) -> str:
    """One lemma per word: verb forms (-ing/-ed/-s) to the verb, plural nouns to the singular."""
    found = readings(word)
    if not found:
        if word.endswith("ing") and len(word) > 5 and "-" in word:
            return word[:-3]
        return word
    if "VERB" in found and (word.endswith("ing") or word.endswith("ed")):
        return found["VERB"][0]
    if "NOUN" in found:
        nouns = found["NOUN"]
        # "leaves" -> prefer "leaf" over "leave"; lemminflect lists both.
        return nouns[-1] if len(nouns) > 1 else nouns[0]
    if "VERB" in found:
        return found["VERB"][0]
    for tag in ("ADJ", "ADV"):
        if tag in found:
            return found[tag][0]
    return word


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", text.lower().replace("_", " "))


@lru_cache(maxsize=50000)
def normalize_phrase(text: str) -> str:
    """Identity key of a node: lowercase, no articles, hyphens as spaces, every word lemmatised.

    "Barking" == "barks" == "bark"; "the dogs" == "dog"; "high-pitched" == "high pitched".
    """
    tokens = [token for token in words(text.replace("-", " ")) if token not in _ARTICLES]
    return " ".join(lemma(token) for token in tokens)


@lru_cache(maxsize=50000)
def gender_of(text: str) -> str | None:
    """'male', 'female' or None: opposite genders never match in X-ACE."""
    lex = lexicon()
    tokens = set(words(text))
    male = bool(tokens & lex["gender_male"])
    female = bool(tokens & lex["gender_female"])
    if male and not female:
        return "male"
    if female and not male:
        return "female"
    return None
