"""Rule extractor, step 1: normalise a caption, split it into sentences and tag each word.

Tags come from the packaged lexicon and lemminflect's part-of-speech tables; noun/verb ambiguities
("barks", "running") are settled from the neighbours and subject-verb agreement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .lexical_tags import closed_class_rules, unknown_word_tag
from .text import is_participle, lemma, lexicon, readings
from .word_lists import (
    FILLER_WORDS,
    ING_NOUNS,
    NUMBERLESS_NOUNS,
    PARTICLES_ALWAYS,
    PLURAL_NOUNS,
    SOUND_WORDS,
    THIRD_PERSON_SINGULAR_PRONOUNS,
    VERBISH,
)


@dataclass
class Token:
    text: str
    tag: str
    position: int


# Tags before "barking" that make it a modifier of the noun after it ("a barking dog", "the sound of running water")
MODIFIER_POSITION_TAGS = frozenset(
    {None, "DET", "ADJ", "INT", "SOUNDOF", "SEP", "CONJ", "PREP", "INGMOD", "POSS", "STOP"}
)
# Tags before a noun-or-verb word that leave it a noun ("the bark", "a loud crash", "of water")
NOUN_POSITION_TAGS = frozenset({"DET", "ADJ", "INT", "PREP", "SOUNDOF", "POSS", "INGMOD", "STOP", None})
MODALS = frozenset({"can", "could", "will", "would", "may", "might"})


@dataclass(frozen=True)
class _Context:
    """A token being settled among its sentence's tokens; the ones before it are settled already."""

    tokens: list[Token]
    index: int

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    @property
    def previous(self) -> Token | None:
        return self.tokens[self.index - 1] if self.index > 0 else None

    @property
    def following(self) -> Token | None:
        return self.tokens[self.index + 1] if self.index + 1 < len(self.tokens) else None

    @property
    def previous_tag(self) -> str | None:
        return self.previous.tag if self.previous else None

    @property
    def next_tag(self) -> str | None:
        return self.following.tag if self.following else None

    @property
    def after_auxiliary(self) -> bool:
        """ "is struck", "is being struck", "is loudly struck": an auxiliary, maybe past one adverb."""
        i = self.index
        return self.previous_tag == "AUX" or (
            self.previous_tag in {"ADV", "INT"} and i >= 2 and self.tokens[i - 2].tag == "AUX"
        )


class Tagger:
    """Sentences of tagged words; the lexicon is loaded once per instance."""

    def __init__(self) -> None:
        self.lex = lexicon()
        self._multiword = sorted(self.lex["multiword"].items(), key=lambda item: -len(item[0]))
        self._compounds = sorted(self.lex["compound_nouns"], key=lambda c: -len(c))
        self._closed_class_rules = closed_class_rules(self.lex)
        # the lexical tags that context can change, each with the rule that settles it
        self._settlers: dict[str, Callable[[_Context], str]] = {
            "ING": self._settle_ing,
            "ED": self._settle_ed,
            "AMBIG": self._settle_verb_or_noun,
            "VERB": self._settle_verb_or_noun,
        }

    # -- text preparation -------------------------------------------------------------------
    def sentences(self, caption: str) -> list[list[str]]:
        text = caption.lower().replace("\u2019", "'").replace("\u2018", "'")
        text = re.sub(r'"[^"]*"', " ", text)  # quoted speech is content, not sound events
        text = re.sub(r"[()\[\]{}\"]", " ", text)
        text = re.sub(r"(\w)'s\b", r"\1 's", text)
        text = re.sub(r"([,!?;:])", r" \1 ", text)
        text = re.sub(r"\.(?!\d)", " . ", text)
        text = " " + " ".join(text.split()) + " "
        for phrase, replacement in self._multiword:
            text = text.replace(f" {phrase} ", f" {replacement} " if replacement else " ")
            text = text.replace(f" {phrase} ", f" {replacement} " if replacement else " ")
        for compound in self._compounds:
            text = text.replace(f" {compound} ", f" {compound.replace(' ', '~')} ")
        result, current = [], []
        for word in text.split():
            if word in FILLER_WORDS:
                continue
            if word in {".", "!", "?", ";", ":"}:
                if current:
                    result.append(current)
                current = []
            else:
                current.append(word)
        if current:
            result.append(current)
        return result

    # -- tagging ----------------------------------------------------------------------------
    def lexical_tag(self, word: str) -> str:
        """The tag of a word out of context: closed classes first, then lemminflect's readings."""
        for tag, matches in self._closed_class_rules:
            if matches(word):
                return tag
        found = readings(word)
        if word in self.lex["stop_verbs"] and ("VERB" in found or "AUX" in found or not found):
            return "STOP"
        if not found:
            return unknown_word_tag(word)
        return self._reading_tag(word, found)

    def _reading_tag(self, word: str, found: dict) -> str:
        """A known word: its readings decide, a sound verb's -ing and -ed forms before anything else."""
        if word.endswith("ing") and ("VERB" in found or self._is_sound_gerund(word)) and word not in ING_NOUNS:
            return "ING"
        if "VERB" in found and word.endswith("ed"):
            return "ED"
        if "NOUN" in found and "VERB" in found:
            return "AMBIG"
        for tag in ("VERB", "NOUN"):
            if tag in found:
                return tag
        if "ADV" in found and "ADJ" not in found:
            return "ADV"
        for tag in ("ADJ", "ADV"):
            if tag in found:
                return tag
        return "NOUN"

    def _is_sound_gerund(self, word: str) -> bool:
        """ "meowing", "baaing": -ing nouns of sound verbs that lemminflect knows only as nouns."""
        stem = word[:-3]
        return any(candidate in self.lex["sound_verbs"] for candidate in (stem, stem + "e", stem[:-1]))

    def is_sound_verb(self, word: str) -> bool:
        found = readings(word)
        verb_lemmas = found.get("VERB", ()) or (lemma(word),)
        return any(v in self.lex["sound_verbs"] for v in verb_lemmas)

    def tag(self, words: list[str], start: int) -> list[Token]:
        tokens = [Token(w.replace("~", " "), self.lexical_tag(w), start + i) for i, w in enumerate(words)]
        tokens = [
            t
            for i, t in enumerate(tokens)
            if not (
                t.tag in {"SEP", "CONJ"}
                and t.text in {",", "and", "or"}
                and 0 < i < len(tokens) - 1
                and tokens[i - 1].tag == "ADJ"
                and tokens[i + 1].tag in {"ADJ", "INT"}
                # "a creaky and squeaky floor" is one noun phrase; "is loud and sharp" stays two attributes
                and (t.tag == "SEP" or self._noun_follows(tokens, i + 1))
            )
        ]
        for i, token in enumerate(tokens):
            settle = self._settlers.get(token.tag)
            if settle is not None:
                token.tag = settle(_Context(tokens, i))
        return tokens

    @staticmethod
    def _noun_follows(tokens: list[Token], start: int) -> bool:
        for token in tokens[start:]:
            if token.tag in {"ADJ", "INT", "SEP", "CONJ"}:
                continue
            return token.tag in {"NOUN", "AMBIG"}
        return False

    # -- settling a tag from its neighbours -------------------------------------------------
    def _settle_ing(self, context: _Context) -> str:
        """ "a barking dog" (a modifier of the noun that follows) or "a dog barking" (a verb)."""
        following = context.following
        if context.token.text in self.lex["stop_verbs"]:
            return "STOP"
        if (
            following is not None
            and (following.text in SOUND_WORDS or context.next_tag in {"NOUN", "AMBIG"})
            and context.previous_tag in MODIFIER_POSITION_TAGS
        ):
            return "INGMOD"
        return "ING"

    def _settle_ed(self, context: _Context) -> str:
        """ "is muffled" / "a muffled voice" (adjective) or "a dog barked" / "is struck" (verb)."""
        word = context.token.text
        if lemma(word) in self.lex["stop_verbs"] or word in self.lex["stop_verbs"]:
            return "STOP"
        if context.after_auxiliary:
            return "ADJ" if word in self.lex["adjectives"] else "EDV"
        if (
            context.previous_tag in {"NOUN", "PRON"}
            and context.next_tag not in {"NOUN", "AMBIG"}
            and (self.is_sound_verb(word) or context.next_tag in {"PREP", "ADV", "ATTR", None})
        ):
            return "EDV"
        return "ADJ"

    def _settle_verb_or_noun(self, context: _Context) -> str:
        """A word that can be a verb: the word before it mostly decides, agreement settles "a dog barks"."""
        tag, word, previous_tag = context.token.tag, context.token.text, context.previous_tag
        found = readings(word)
        if context.after_auxiliary and is_participle(word) and word not in self.lex["adjectives"]:
            return "EDV"  # "a metal object is being struck", "a gong is rung": irregular passives
        if (
            previous_tag == "PREP"
            and context.previous.text == "to"
            and word in found.get("VERB", ())
            and self.is_sound_verb(word)
            and context.next_tag in {"DET", "ADV", "PREP", "ATTR", "SEP", "CONJ", "TEMP", None}
        ):
            return "VERB"  # "continues to roll back and forth", "using a saw to cut a board"
        if tag == "VERB" and "NOUN" not in found:
            return self._settle_verb_only(context, found)
        if previous_tag in NOUN_POSITION_TAGS:
            return "NOUN"
        if not self.is_sound_verb(word):
            return self._settle_other_verb(context)
        if previous_tag in {"NOUN", "PRON", "ADV"}:
            return self._settle_after_subject(context)
        if previous_tag in {"CONJ", "SEP"}:
            return self._settle_after_conjunction(context)
        if previous_tag == "AUX" and context.previous.text in MODALS:
            return "VERB"
        return "NOUN"

    @staticmethod
    def _settle_verb_only(context: _Context, found: dict) -> str:
        """A word lemminflect knows only as a verb is a noun after a determiner ("a hiss")."""
        if context.previous_tag in {"DET", "ADJ"} and not context.token.text.endswith("s"):
            return "NOUN"
        if context.previous_tag in VERBISH and "ADJ" in found:
            return "ADJ"
        return "VERB"

    def _settle_other_verb(self, context: _Context) -> str:
        """ "the man wakes up": a non-sound verb only when agreement and a particle say so."""
        word, previous, following = context.token.text, context.previous, context.following
        if (
            context.previous_tag == "NOUN"
            and word.endswith("s")
            and self._agrees(word, previous.text)
            and following is not None
            and following.text in PARTICLES_ALWAYS
        ):
            return "VERB"
        return "NOUN"

    def _settle_after_subject(self, context: _Context) -> str:
        """ "a dog barks" (verb) / "a dog bark" (noun): the subject before it must agree."""
        tokens, i, following = context.tokens, context.index, context.following
        subject = context.previous if context.previous_tag != "ADV" else (tokens[i - 2] if i >= 2 else None)
        if subject is None or subject.tag not in {"NOUN", "PRON"}:
            return "NOUN"
        if following is not None and following.tag in {"VERB", "AMBIG"} and self.is_sound_verb(following.text):
            return "NOUN"  # "a car horn honks": the first of two verb-able words is part of the noun
        return "VERB" if self._agrees(context.token.text, subject.text) else "NOUN"

    @staticmethod
    def _settle_after_conjunction(context: _Context) -> str:
        """A verb when it continues a verb phrase ("barks and growls") or repeats a finite form."""
        tokens, i, word = context.tokens, context.index, context.token.text
        before = next((t for t in reversed(tokens[: i - 1]) if t.tag not in {"ADV", "INT", "ATTR"}), None)
        if before is not None and before.tag in VERBISH | {"PART"}:
            return "VERB"
        # "a person enters a car and drives away": same finite form as an earlier verb of the sentence
        earlier = [t for t in tokens[: i - 1] if t.tag in {"VERB", "EDV"}]
        if (
            earlier
            and word.endswith("s")
            and earlier[-1].text.endswith("s")
            and context.next_tag not in {"NOUN", "AMBIG"}
        ):
            return "VERB"
        return "NOUN"

    @staticmethod
    def _agrees(verb: str, subject: str) -> bool:
        """Subject-verb agreement tells "a dog barks" (verb) from "a dog bark" / "the dogs barks" (nouns)."""
        verb_lemmas = readings(verb).get("VERB", (verb,))
        is_base = verb in verb_lemmas
        third_singular = not is_base and verb.endswith("s")
        if subject in THIRD_PERSON_SINGULAR_PRONOUNS:
            return third_singular
        if subject in {"they", "we", "you", "i"}:
            return is_base
        plural = subject in PLURAL_NOUNS or (subject.endswith("s") and lemma(subject) != subject)
        if subject in NUMBERLESS_NOUNS:
            return third_singular or is_base
        return (third_singular and not plural) or (is_base and plural)
