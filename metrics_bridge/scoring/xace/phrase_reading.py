"""Rule extractor, step 3 (shared part): an event mention and what a noun phrase says about its sound."""

from __future__ import annotations

from dataclasses import dataclass, field

from .chunking import Chunk, Chunker, NounPhrase
from .text import lemma
from .word_lists import COLLECTIVE_HEADS, GENERIC_HEADS, MANNER_HEADS


@dataclass
class Mention:
    name: str
    position: int
    sentence: int
    sources: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    from_noun: bool = False


def adverbial_text(chunk: Chunk) -> str:
    """An adverb as it stands; a joined adverbial ("off-and-on", "in_the_distance") with its words apart."""
    return chunk.text.replace("_", " ").replace("-", " ") if chunk.kind == "ATTR" else chunk.text


class PhraseReader(Chunker):
    """Sources and attributes of noun phrases, shared by the verb and the noun readings of events."""

    def split_phrase(self, phrase: NounPhrase) -> tuple[list[str], list[str]]:
        """A subject noun phrase -> (sources, attributes): gender/age/material words stay in the source."""
        lex = self.lex
        source_words, attributes, pending_intensifier = [], [], None
        for t in phrase.tokens:
            if t.tag in {"DET", "POSS"}:
                continue
            if t.tag == "INT":
                pending_intensifier = t.text
                continue
            if t.tag == "ADJ" and t.text not in lex["source_adjectives"]:
                attributes.append(f"{pending_intensifier} {t.text}" if pending_intensifier else t.text)
            elif t.tag in {"NOUN", "ADJ"}:
                source_words.append(t.text)
            pending_intensifier = None
        source = " ".join(source_words)
        if phrase.head in COLLECTIVE_HEADS and " of " in phrase.text():
            source = phrase.text(keep_determiners=False)
            source = " ".join(w for w in source.split() if w not in lex["adjectives"] or w in lex["source_adjectives"])
        sources = [source] if source and source not in GENERIC_HEADS else []
        if phrase.possessor is not None and phrase.head in {"voice", "voices"}:
            sources = [phrase.possessor.text(keep_determiners=False)]
        return sources, attributes

    def is_event_noun(self, word: str) -> bool:
        """Sound nouns (explosion, siren) and nouns made from sound verbs (a honk, a loud crash)."""
        lex = self.lex
        word = word.split()[-1]
        word_lemma = lemma(word)
        if word in lex["event_nouns"] or word_lemma in lex["event_nouns"]:
            return True
        return word_lemma in lex["sound_verbs"] and word_lemma not in lex["non_event_verb_nouns"] and " " not in word

    @staticmethod
    def _manner_adjectives(preposition: str, phrase: NounPhrase) -> list[str]:
        """ "in a high-pitched voice", "in a calm and steady tone": the adjectives are the attributes."""
        if preposition not in {"in", "with"} or phrase.head not in MANNER_HEADS:
            return []
        adjectives, pending = [], None
        for token in phrase.tokens:
            if token.tag == "INT":
                pending = token.text
            elif token.tag == "ADJ" and token.text not in {"same", "different", "other", "certain"}:
                adjectives.append(f"{pending} {token.text}" if pending else token.text)
                pending = None
        if phrase.head == "pitch" and adjectives:
            return [f"{' '.join(adjectives)} pitch"]  # "with a high pitch" -> "high pitch"
        return adjectives
