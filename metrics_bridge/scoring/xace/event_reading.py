"""Rule extractor, step 3: read sound events off the chunks.

Sound verbs with their subject as source (verb_events.py); sound nouns, "the sound of X", "X makes a Y
sound" (noun_events.py); attributes from adverbs, adjectives, prepositional phrases, objects and copulas
("the barking is loud", here).
"""

from __future__ import annotations

from .chunking import Chunk
from .noun_events import NounEventReader
from .phrase_reading import Mention
from .text import lemma
from .verb_events import VerbEventReader
from .word_lists import GENERIC_HEADS, SPEECH_LEMMAS, VERBISH

__all__ = ["EventReader", "Mention"]


class EventReader(VerbEventReader, NounEventReader):
    """Event mentions (name, sources, attributes, position) of a caption."""

    def extract_mentions(self, caption: str) -> list[Mention]:
        mentions: list[Mention] = []
        position = 0
        previous_source: list[str] = []
        for sentence_index, words in enumerate(self.sentences(caption)):
            tokens = self.tag(words, position)
            position += len(words) + 1
            chunks = self.chunk(tokens)
            sentence_mentions, previous_source = self._read_sentence(chunks, sentence_index, previous_source, mentions)
            mentions.extend(sentence_mentions)
        return sorted(mentions, key=lambda m: m.position)

    def _read_sentence(
        self, chunks: list[Chunk], sentence: int, previous_source: list[str], earlier: list[Mention]
    ) -> tuple[list[Mention], list[str]]:
        found: list[Mention] = []
        last_event: Mention | None = None
        for j, chunk in enumerate(chunks):
            if chunk.kind in VERBISH:
                mention = self._verb_event(chunks, j, sentence, last_event, previous_source)
                if mention is not None:
                    found.append(mention)
                    last_event = mention
                    previous_source = previous_source + mention.sources
        for j, chunk in enumerate(chunks):
            if chunk.kind == "NP":
                found.extend(self._noun_events(chunks, j, sentence))
        self._copular_attributes(chunks, found, earlier)
        return found, previous_source

    def _copular_attributes(self, chunks: list[Chunk], found: list[Mention], earlier: list[Mention]) -> None:
        """ "The barking is loud and sharp": adjectives after a copula describe the event the subject names."""
        for j, chunk in enumerate(chunks[:-2]):
            if (
                chunk.kind not in {"NP", "PRON"}
                or chunks[j + 1].kind != "AUX"
                or chunks[j + 1].text in {"has", "have", "had"}
            ):
                continue
            n = j + 1
            while n < len(chunks) and chunks[n].kind == "AUX":
                n += 1
            adjectives, pending = [], None
            while n < len(chunks) and chunks[n].kind in {"ADJP", "ADV", "INT", "CONJ", "SEP", "ATTR"}:
                if chunks[n].kind == "INT":
                    pending = chunks[n].text
                elif chunks[n].kind in {"ADJP", "ADV", "ATTR"}:
                    text = chunks[n].text.replace("_", " ")
                    adjectives.append(f"{pending} {text}" if pending else text)
                    pending = None
                n += 1
            if not adjectives or (n < len(chunks) and (chunks[n].kind in VERBISH or chunks[n].text == "to")):
                continue
            subject = chunk.phrase.head if chunk.kind == "NP" else chunk.text
            subject_key = lemma(subject.split()[-1])
            candidates = found + earlier
            targets = [
                m
                for m in candidates
                if subject_key[:4] == lemma(m.name.split()[0])[:4]
                or any(subject_key == lemma(s.split()[-1]) for s in m.sources)
            ]
            if not targets and (subject in GENERIC_HEADS or chunk.kind == "PRON") and candidates:
                last_sentence = max(m.sentence for m in candidates)
                targets = [m for m in candidates if m.sentence == last_sentence]
            for target in targets:
                target.attributes.extend(adjectives)

    @staticmethod
    def _referent(mention: Mention, verb_mentions: list[Mention]) -> Mention | None:
        """A noun that names an event already told by a verb: "the laughter" (laughing), "the man's voice"
        (speaking), "the engine" (an engine running)."""
        name = mention.name.split()[-1]
        key = lemma(name)
        for candidate in verb_mentions:
            if lemma(candidate.name.split()[0])[:4] == key[:4]:
                return candidate
        if name in {"voice", "voices", "speech"}:
            speech = [m for m in verb_mentions if lemma(m.name.split()[0]) in SPEECH_LEMMAS]
            for candidate in speech:
                if not mention.sources or set(mention.sources) & set(candidate.sources):
                    return candidate
            if speech:
                return speech[0]
        for candidate in verb_mentions:
            if any(source.split()[-1] == name for source in candidate.sources):
                return candidate
        return None
