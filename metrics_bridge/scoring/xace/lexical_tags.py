"""The tag of a word out of context, for the words whose class a fixed list or the lexicon settles.

The rules are tried in order and the first that matches wins; the order is part of the rule ("after" is a
temporal connective before it is a preposition, "one" a determiner before it is a pronoun).
"""

from __future__ import annotations

from collections.abc import Callable

from .word_lists import NUMBER_WORDS, SOUND_WORDS

CONJUNCTIONS = frozenset({"and", "or", "but", "nor", "plus"})

# Joined by the multiword table in sentences(): adverbials that are attributes of a sound as they stand
ATTRIBUTE_PHRASES = frozenset(
    {
        "several-times",
        "many-times",
        "multiple-times",
        "off-and-on",
        "on-and-off",
        "far-away",
        "back-and-forth",
        "over-and-over",
        "on-and-on",
        "up-and-down",
        "once",
        "twice",
    }
)

Rule = tuple[str, Callable[[str], bool]]


def closed_class_rules(lex: dict) -> tuple[Rule, ...]:
    """(tag, test) pairs in the order they are tried."""
    # "and" / "with" join events but are tagged as the conjunction and preposition they also are
    temporal = (
        lex["relation_before"] | lex["relation_after"] | (lex["relation_and"] - {"and", "with"}) | {"until", "whereas"}
    )
    return (
        ("SEP", lambda word: word == ","),
        ("NOUN", lambda word: "~" in word),  # a compound noun joined in sentences()
        ("CONJ", CONJUNCTIONS.__contains__),
        ("TEMP", temporal.__contains__),
        ("POSS", lambda word: word == "'s"),
        ("SOUNDOF", lambda word: word == "sound_of"),
        ("ATTR", lambda word: word.startswith(("in_the_", "from_a_")) or word in ATTRIBUTE_PHRASES),
        ("AUX", lambda word: word in {"being", "been"} or word in lex["auxiliaries"]),
        ("DET", lambda word: word in lex["determiners"] or word in NUMBER_WORDS or word.isdigit()),
        ("PRON", lambda word: word in lex["pronouns"] or word == "there"),
        ("PREP", lex["prepositions"].__contains__),
        ("INT", lex["intensifiers"].__contains__),
        ("NOUN", lambda word: word in SOUND_WORDS or word in lex["nouns"]),
        ("ADV", lex["adverbs"].__contains__),
        ("ADJ", lambda word: word in lex["adjectives"] or word in lex["source_adjectives"]),
    )


def unknown_word_tag(word: str) -> str:
    """A word lemminflect does not know: its ending is the best guess."""
    if word.endswith("ing") and len(word) > 4:
        return "ING"
    if word.endswith("ly"):
        return "ADV"
    if word.endswith(("ed", "-pitched", "-like", "ish")) or "-" in word and not word.endswith("s"):
        return "ADJ"
    return "NOUN"
