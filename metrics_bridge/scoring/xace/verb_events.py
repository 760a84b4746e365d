"""Rule extractor, step 3a: events told by a verb ("a dog barks loudly in the distance").

Three phases per verb: does it tell a sound; who makes it (the subject before it, over auxiliaries and
adverbs); what follows it (a particle that belongs to the name, then adverbs, objects and prepositional
phrases as attributes, "by X" after a passive as a source).
"""

from __future__ import annotations

from .chunking import Chunk
from .phrase_reading import Mention, PhraseReader, adverbial_text
from .text import gender_of, lemma
from .word_lists import (
    CLAUSE_BREAKS,
    PARTICLES_ALWAYS,
    PARTICLES_AT_END,
    PARTITIVE_HEADS,
    PERSON_WORDS,
    RESOLVABLE_PRONOUNS,
    VERBISH,
    WEATHER_LEMMAS,
)


class VerbEventReader(PhraseReader):
    """The event mention of a verb chunk, with its sources and attributes."""

    def _verb_event(
        self, chunks: list[Chunk], j: int, sentence: int, last_event: Mention | None, previous_source: list[str]
    ) -> Mention | None:
        if not self._tells_a_sound(chunks, j):
            return None
        k, attributes, passive = self._words_before_verb(chunks, j)
        k = self._subject_index(chunks, j, k, attributes)
        sources, subject_attributes = self._subject_sources(chunks, j, k, last_event, previous_source)
        name, n = self._name_with_particle(chunks, j)
        following_attributes, following_sources = self._verb_complements(chunks, j, n, passive)
        attributes = subject_attributes + attributes + following_attributes
        attributes = [a for a in attributes if not set(a.split()) <= self.lex["determiners"] | self.lex["intensifiers"]]
        return Mention(
            name=name,
            position=chunks[j].position,
            sentence=sentence,
            sources=sources + following_sources,
            attributes=attributes,
        )

    # -- phase 1: does the verb tell a sound ------------------------------------------------
    def _tells_a_sound(self, chunks: list[Chunk], j: int) -> bool:
        """A sound verb does; another verb only with a particle or a subject ("a man walks away")."""
        chunk = chunks[j]
        word = chunk.text
        if lemma(word) in self.lex["stop_verbs"]:
            return False
        has_particle = j + 1 < len(chunks) and chunks[j + 1].text in PARTICLES_ALWAYS
        k = j - 1
        while k >= 0 and chunks[k].kind in {"AUX", "ADV", "INT"}:
            k -= 1
        has_subject = k >= 0 and chunks[k].kind in {"NP", "PRON"}
        if chunk.kind == "VERB" and not self.is_sound_verb(word) and not has_particle and not has_subject:
            return False
        return not (j > 0 and chunks[j - 1].text == "to" and not self.is_sound_verb(word))

    # -- phase 2: the subject ---------------------------------------------------------------
    @staticmethod
    def _words_before_verb(chunks: list[Chunk], j: int) -> tuple[int, list[str], bool]:
        """Back over auxiliaries and adverbs: (index before them, the adverbs, whether it is passive)."""
        attributes: list[str] = []
        passive = chunks[j].kind == "EDV"
        k = j - 1
        while k >= 0 and chunks[k].kind in {"AUX", "ADV", "INT", "ATTR"}:
            if chunks[k].kind in {"ADV", "ATTR"}:
                attributes.insert(0, chunks[k].text.replace("_", " "))
            if chunks[k].text in {"being", "been"}:
                passive = True
            k -= 1
        return k, attributes, passive

    def _subject_index(self, chunks: list[Chunk], j: int, k: int, attributes: list[str]) -> int:
        """The subject's index from the chunk before the verb's auxiliaries (-1: none)."""
        subject = chunks[k] if k >= 0 else None
        if subject is not None and subject.text == "to":
            # "a man tries to talk", "someone is using a saw to cut wood": the clause's subject makes the sound
            k = self._clause_subject(chunks, k)
            subject = chunks[k] if k >= 0 else None
        # "the engine of a car is revved": the head noun phrase before "of" is the subject
        # (but "a piece of metal is struck": after a partitive head the "of" phrase is the source)
        if (
            subject is not None
            and subject.kind == "NP"
            and k >= 2
            and chunks[k - 1].text in {"of", "with"}
            and chunks[k - 2].kind == "NP"
            and (
                chunks[k - 1].text == "with"
                or (
                    chunks[j].kind != "ING"
                    and not self.is_event_noun(chunks[k - 2].phrase.head)
                    and chunks[k - 2].phrase.head not in PARTITIVE_HEADS
                )
            )
        ):
            if chunks[k - 1].text == "with":  # "a person with loud shoes is walking"
                attributes.insert(0, f"with {subject.phrase.text()}")
            subject.consumed = True
            k -= 2
        return k

    def _subject_sources(
        self, chunks: list[Chunk], j: int, k: int, last_event: Mention | None, previous_source: list[str]
    ) -> tuple[list[str], list[str]]:
        """(sources, attributes) the subject gives; a pronoun is resolved, "and" continues the last event."""
        subject = chunks[k] if k >= 0 else None
        if subject is None:
            return [], []
        if subject.kind == "NP":
            return self._noun_phrase_subject(chunks, k)
        if subject.kind == "PRON":
            return self._pronoun_sources(subject.text, chunks[j].text, previous_source), []
        if subject.kind in {"CONJ", "SEP", "ADJP"} and last_event is not None:
            return list(last_event.sources), []
        return [], []

    def _noun_phrase_subject(self, chunks: list[Chunk], k: int) -> tuple[list[str], list[str]]:
        subject = chunks[k]
        sources, attributes = self.split_phrase(subject.phrase)
        subject.consumed = True
        # "a man and a woman talk": coordinated subjects are all sources
        m = k - 1
        while (
            m >= 1
            and chunks[m].kind == "CONJ"
            and chunks[m].text == "and"
            and chunks[m - 1].kind == "NP"
            and not chunks[m - 1].consumed
            and not self.is_event_noun(chunks[m - 1].phrase.head)
        ):
            more, _ = self.split_phrase(chunks[m - 1].phrase)
            sources = more + sources
            chunks[m - 1].consumed = True
            m -= 2
        return sources, attributes

    def _pronoun_sources(self, pronoun: str, verb: str, previous_source: list[str]) -> list[str]:
        if pronoun == "it" and lemma(verb) in WEATHER_LEMMAS:
            return []  # "it is raining"
        if pronoun in RESOLVABLE_PRONOUNS:
            return self._resolve_pronoun(pronoun, previous_source)
        if pronoun not in {"there"}:
            return [pronoun]
        return []

    @staticmethod
    def _clause_subject(chunks: list[Chunk], k: int) -> int:
        """Index of the subject of the verb governing an infinitive at chunks[k] ("to"), or -1."""
        m = k - 1
        while m >= 0 and chunks[m].kind not in VERBISH | {"STOP"}:
            if chunks[m].kind in CLAUSE_BREAKS - {"STOP"}:
                return -1
            m -= 1
        m -= 1
        while m >= 0 and chunks[m].kind in {"AUX", "ADV", "INT"}:
            m -= 1
        return m if m >= 0 and chunks[m].kind in {"NP", "PRON"} else -1

    @staticmethod
    def _resolve_pronoun(pronoun: str, history: list[str]) -> list[str]:
        """he/she -> the latest source of that gender, it -> the latest non-person source, they -> the latest."""
        for source in reversed(history):
            gender = gender_of(source)
            person = gender is not None or bool(set(source.split()) & PERSON_WORDS)
            if pronoun in {"he", "him"} and gender == "male":
                return [source]
            if pronoun == "she" and gender == "female":
                return [source]
            if pronoun == "it" and not person:
                return [source]
            if pronoun in {"they", "them", "who", "which", "that"}:
                return [source]
        return []

    # -- phase 3: what follows the verb -----------------------------------------------------
    @staticmethod
    def _name_with_particle(chunks: list[Chunk], j: int) -> tuple[str, int]:
        """ "drives away", "winds down": (the event's name, the index after it)."""
        word = chunks[j].text
        n = j + 1
        if (
            n < len(chunks)
            and chunks[n].kind in {"PREP", "ADV", "ADJ", "ATTR"}
            and not chunks[n].text.startswith("in_")
        ):
            particle = chunks[n].text
            at_end = n + 1 >= len(chunks) or chunks[n + 1].kind in (CLAUSE_BREAKS - {"SOUNDOF"}) | {
                "PREP",
                "ADV",
                "ATTR",
            }
            if particle in PARTICLES_ALWAYS or (particle in PARTICLES_AT_END and at_end):
                return f"{word} {particle}", n + 1
        return word, n

    def _verb_complements(self, chunks: list[Chunk], j: int, n: int, passive: bool) -> tuple[list[str], list[str]]:
        """(attributes, sources) from the chunks after the verb, up to the next event's subject."""
        attributes: list[str] = []
        sources: list[str] = []
        while n < len(chunks):
            current = chunks[n]
            following = chunks[n + 1] if n + 1 < len(chunks) else None
            if current.kind in {"ADV", "ATTR"}:
                attributes.append(adverbial_text(current))
                n += 1
            elif current.kind == "INT" and following is not None and following.kind in {"ADV", "ADJP"}:
                attributes.append(f"{current.text} {following.text}")
                n += 2
            elif current.kind == "ADJP":
                attributes.append(current.text)
                n += 1
            elif current.kind == "NP":
                if following is not None and following.kind in VERBISH | {"AUX"}:
                    break  # the subject of the next event
                if not current.consumed:
                    attributes.append(current.phrase.text())
                    current.consumed = True
                n += 1
            elif current.kind == "PREP" and following is not None and following.kind == "NP":
                if n + 2 < len(chunks) and chunks[n + 2].kind in VERBISH:
                    break  # "with a dog barking": a new event
                n = self._prepositional_complement(chunks, j, n, passive, attributes, sources)
            elif current.kind == "CONJ" and following is not None and following.kind in {"ADV", "ADJP", "ATTR"}:
                n += 1  # "loudly and repeatedly"
            else:
                break
        return attributes, sources

    def _prepositional_complement(
        self, chunks: list[Chunk], j: int, n: int, passive: bool, attributes: list[str], sources: list[str]
    ) -> int:
        """The phrase chunks[n] (preposition) + chunks[n + 1] (noun phrase): a source after "by" in a
        passive or "the rolling of a ball", else an attribute; returns the index after it."""
        preposition, target = chunks[n].text, chunks[n + 1]
        named_by_gerund = chunks[j].kind == "ING" and j > 0 and chunks[j - 1].kind in {"DET", "ADJP", "SOUNDOF"}
        if preposition in {"about", "than", "like"}:
            pass  # what is said or compared is not a property of the sound
        elif preposition == "by" and passive:
            sources.extend(self.split_phrase(target.phrase)[0])
        elif preposition == "of" and named_by_gerund:  # "the rolling of a ball"
            sources.extend(self.split_phrase(target.phrase)[0])
        else:
            text, n = self._place_phrase(chunks, n)
            attributes.extend(self._manner_adjectives(preposition, target.phrase) or [text])
        target.consumed = True
        return n + 2

    @staticmethod
    def _place_phrase(chunks: list[Chunk], n: int) -> tuple[str, int]:
        """ "on the floor of the kitchen", "in a stream or river": the phrase with what continues it."""
        text = f"{chunks[n].text} {chunks[n + 1].phrase.text()}"
        # keep chained "of" phrases together
        if n + 3 < len(chunks) and chunks[n + 2].text == "of" and chunks[n + 3].kind == "NP":
            text += f" of {chunks[n + 3].phrase.text()}"
            chunks[n + 3].consumed = True
            n += 2
        # coordinated objects of the preposition stay in the phrase
        while (
            n + 3 < len(chunks)
            and chunks[n + 2].kind == "CONJ"
            and chunks[n + 3].kind == "NP"
            and not (n + 4 < len(chunks) and chunks[n + 4].kind in VERBISH)
        ):
            text += f" {chunks[n + 2].text} {chunks[n + 3].phrase.text()}"
            chunks[n + 3].consumed = True
            n += 2
        return text, n
