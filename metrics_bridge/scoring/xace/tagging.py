"""Rule extractor, step 1: normalise a caption, split it into sentences and tag each word.

Tags come from the packaged lexicon and lemminflect's part-of-speech tables; noun/verb ambiguities
("barks", "running") are settled from the neighbours and subject-verb agreement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import is_participle, lemma, lexicon, readings
from .word_lists import (
    FILLER_WORDS,
    ING_NOUNS,
    NUMBER_WORDS,
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


class Tagger:
    """Sentences of tagged words; the lexicon is loaded once per instance."""

    def __init__(self) -> None:
        self.lex = lexicon()
        self._multiword = sorted(self.lex["multiword"].items(), key=lambda item: -len(item[0]))
        self._compounds = sorted(self.lex["compound_nouns"], key=lambda c: -len(c))

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
        lex = self.lex
        if word == ",":
            return "SEP"
        if "~" in word:
            return "NOUN"
        if word in {"and", "or", "but", "nor", "plus"}:
            return "CONJ"
        if (
            word in lex["relation_before"]
            or word in lex["relation_after"]
            or word in lex["relation_and"] - {"and", "with"}
        ):
            return "TEMP"
        if word in {"until", "whereas"}:
            return "TEMP"
        if word == "'s":
            return "POSS"
        if word == "sound_of":
            return "SOUNDOF"
        if word.startswith(("in_the_", "from_a_")) or word in {
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
        }:
            return "ATTR"
        if word in {"being", "been"}:
            return "AUX"
        if word in lex["auxiliaries"]:
            return "AUX"
        if word in lex["determiners"] or word in NUMBER_WORDS or word.isdigit():
            return "DET"
        if word in lex["pronouns"] or word == "there":
            return "PRON"
        if word in lex["prepositions"]:
            return "PREP"
        if word in lex["intensifiers"]:
            return "INT"
        if word in SOUND_WORDS:
            return "NOUN"
        if word in lex["nouns"]:
            return "NOUN"
        if word in lex["adverbs"]:
            return "ADV"
        if word in lex["adjectives"] or word in lex["source_adjectives"]:
            return "ADJ"
        found = readings(word)
        if word in lex["stop_verbs"] and ("VERB" in found or "AUX" in found or not found):
            return "STOP"
        if not found:
            if word.endswith("ing") and len(word) > 4:
                return "ING"
            if word.endswith("ly"):
                return "ADV"
            if word.endswith(("ed", "-pitched", "-like", "ish")) or "-" in word and not word.endswith("s"):
                return "ADJ"
            return "NOUN"
        if word.endswith("ing") and ("VERB" in found or self._is_sound_gerund(word)) and word not in ING_NOUNS:
            return "ING"
        if "VERB" in found and word.endswith("ed"):
            return "ED"
        if "NOUN" in found and "VERB" in found:
            return "AMBIG"
        if "VERB" in found:
            return "VERB"
        if "NOUN" in found:
            return "NOUN"
        if "ADV" in found and "ADJ" not in found:
            return "ADV"
        if "ADJ" in found:
            return "ADJ"
        if "ADV" in found:
            return "ADV"
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
            previous = tokens[i - 1] if i > 0 else None
            following = tokens[i + 1] if i + 1 < len(tokens) else None
            token.tag = self._settle(token, previous, following, tokens, i)
        return tokens

    @staticmethod
    def _noun_follows(tokens: list[Token], start: int) -> bool:
        for token in tokens[start:]:
            if token.tag in {"ADJ", "INT", "SEP", "CONJ"}:
                continue
            return token.tag in {"NOUN", "AMBIG"}
        return False

    def _settle(
        self, token: Token, previous: Token | None, following: Token | None, tokens: list[Token], i: int
    ) -> str:
        tag, word = token.tag, token.text
        prev_tag = previous.tag if previous else None
        next_tag = following.tag if following else None
        if tag == "ING":
            if word in self.lex["stop_verbs"]:
                return "STOP"
            if (
                following is not None
                and (following.text in SOUND_WORDS or next_tag in {"NOUN", "AMBIG"})
                and prev_tag in {None, "DET", "ADJ", "INT", "SOUNDOF", "SEP", "CONJ", "PREP", "INGMOD", "POSS", "STOP"}
            ):
                return "INGMOD"
            return "ING"
        if tag == "ED":
            verb_lemma = lemma(word)
            if verb_lemma in self.lex["stop_verbs"] or word in self.lex["stop_verbs"]:
                return "STOP"
            after_aux = prev_tag == "AUX" or (prev_tag in {"ADV", "INT"} and i >= 2 and tokens[i - 2].tag == "AUX")
            if after_aux:
                return "ADJ" if word in self.lex["adjectives"] else "EDV"
            if (
                prev_tag in {"NOUN", "PRON"}
                and next_tag not in {"NOUN", "AMBIG"}
                and (self.is_sound_verb(word) or next_tag in {"PREP", "ADV", "ATTR", None})
            ):
                return "EDV"
            return "ADJ"
        if tag in {"AMBIG", "VERB"}:
            found = readings(word)
            after_aux = prev_tag == "AUX" or (prev_tag in {"ADV", "INT"} and i >= 2 and tokens[i - 2].tag == "AUX")
            if after_aux and previous is not None and is_participle(word) and word not in self.lex["adjectives"]:
                return "EDV"  # "a metal object is being struck", "a gong is rung": irregular passives
            if (
                prev_tag == "PREP"
                and previous.text == "to"
                and word in found.get("VERB", ())
                and self.is_sound_verb(word)
                and next_tag in {"DET", "ADV", "PREP", "ATTR", "SEP", "CONJ", "TEMP", None}
            ):
                return "VERB"  # "continues to roll back and forth", "using a saw to cut a board"
            if tag == "VERB" and "NOUN" not in found:
                if prev_tag in {"DET", "ADJ"} and not word.endswith("s"):
                    return "NOUN"
                if prev_tag in VERBISH and "ADJ" in found:
                    return "ADJ"
                return "VERB"
            if prev_tag in {"DET", "ADJ", "INT", "PREP", "SOUNDOF", "POSS", "INGMOD", "STOP", None}:
                return "NOUN"
            if not self.is_sound_verb(word):
                # "the man wakes up": a non-sound verb only when agreement and a particle say so
                if (
                    prev_tag == "NOUN"
                    and word.endswith("s")
                    and self._agrees(word, previous.text)
                    and following is not None
                    and following.text in PARTICLES_ALWAYS
                ):
                    return "VERB"
                return "NOUN"
            if prev_tag in {"NOUN", "PRON", "ADV"}:
                subject = previous if prev_tag != "ADV" else (tokens[i - 2] if i >= 2 else None)
                if subject is None or subject.tag not in {"NOUN", "PRON"}:
                    return "NOUN"
                if following is not None and following.tag in {"VERB", "AMBIG"} and self.is_sound_verb(following.text):
                    return "NOUN"  # "a car horn honks": the first of two verb-able words is part of the noun
                return "VERB" if self._agrees(word, subject.text) else "NOUN"
            if prev_tag in {"CONJ", "SEP"}:
                before = next((t for t in reversed(tokens[: i - 1]) if t.tag not in {"ADV", "INT", "ATTR"}), None)
                if before is not None and before.tag in VERBISH | {"PART"}:
                    return "VERB"
                # "a person enters a car and drives away": same finite form as an earlier verb of the sentence
                earlier = [t for t in tokens[: i - 1] if t.tag in {"VERB", "EDV"}]
                if (
                    earlier
                    and word.endswith("s")
                    and earlier[-1].text.endswith("s")
                    and next_tag not in {"NOUN", "AMBIG"}
                ):
                    return "VERB"
                return "NOUN"
            if prev_tag == "AUX" and previous and previous.text in {"can", "could", "will", "would", "may", "might"}:
                return "VERB"
            return "NOUN"
        return tag

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
