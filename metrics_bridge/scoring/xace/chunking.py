"""Rule extractor, step 2: group tagged words into chunks (noun phrases, adjective runs, single tags)."""

from __future__ import annotations

from dataclasses import dataclass

from .tagging import Tagger, Token
from .word_lists import (
    COLLECTIVE_HEADS,
    NP_PARTS,
)


@dataclass
class NounPhrase:
    tokens: list[Token]
    possessor: NounPhrase | None = None

    @property
    def nouns(self) -> list[Token]:
        return [t for t in self.tokens if t.tag == "NOUN"]

    @property
    def head(self) -> str:
        nouns = self.nouns
        return nouns[-1].text if nouns else self.tokens[-1].text

    @property
    def position(self) -> int:
        return self.tokens[-1].position

    def text(self, keep_determiners: bool = True) -> str:
        kept = [t.text for t in self.tokens if keep_determiners or t.tag not in {"DET", "POSS"}]
        return " ".join(kept)


@dataclass
class Chunk:
    kind: str  # NP, ADJP or a token tag
    tokens: list[Token]
    phrase: NounPhrase | None = None
    consumed: bool = False

    @property
    def text(self) -> str:
        return " ".join(t.text for t in self.tokens)

    @property
    def position(self) -> int:
        return self.tokens[-1].position


class Chunker(Tagger):
    """Chunks of a tagged sentence."""

    # -- chunking ---------------------------------------------------------------------------
    def chunk(self, tokens: list[Token]) -> list[Chunk]:
        chunks: list[Chunk] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.tag in NP_PARTS and token.tag != "POSS":
                j = i
                while j < len(tokens) and tokens[j].tag in NP_PARTS:
                    j += 1
                run = tokens[i:j]
                # a noun phrase ends at its last noun; trailing adjectives are a separate chunk
                last_noun = max((k for k, t in enumerate(run) if t.tag == "NOUN"), default=-1)
                if last_noun < 0:
                    chunks.append(Chunk("ADJP", run))
                    i = j
                    continue
                phrase_tokens = run[: last_noun + 1]
                phrase = self._noun_phrase(phrase_tokens)
                end = i + last_noun + 1
                # "a group of people": collective heads absorb their "of" phrase
                if phrase.head in COLLECTIVE_HEADS and end + 1 < len(tokens) and tokens[end].text == "of":
                    k = end + 1
                    while k < len(tokens) and tokens[k].tag in NP_PARTS - {"POSS"}:
                        k += 1
                    if any(t.tag == "NOUN" for t in tokens[end + 1 : k]):
                        phrase = self._noun_phrase(tokens[i:k])
                        end = k
                chunks.append(Chunk("NP", tokens[i:end], phrase))
                if end < i + len(run):
                    rest = tokens[end : i + len(run)]
                    chunks.append(Chunk("ADJP", rest))
                i = max(end, i + len(run))
                continue
            chunks.append(Chunk(token.tag, [token]))
            i += 1
        return chunks

    @staticmethod
    def _noun_phrase(tokens: list[Token]) -> NounPhrase:
        if any(t.tag == "POSS" for t in tokens):
            cut = max(k for k, t in enumerate(tokens) if t.tag == "POSS")
            owner = [t for t in tokens[:cut] if t.tag != "POSS"]
            possessor = NounPhrase(owner) if any(t.tag == "NOUN" for t in owner) else None
            return NounPhrase(tokens[cut + 1 :] or tokens[:cut], possessor)
        return NounPhrase(tokens)
