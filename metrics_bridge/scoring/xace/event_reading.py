"""Rule extractor, step 3: read sound events off the chunks.

Sound verbs with their subject as source; sound nouns; "the sound of X"; "X makes a Y sound"; attributes
from adverbs, adjectives, prepositional phrases, objects and copulas ("the barking is loud").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .chunking import Chunk, Chunker, NounPhrase
from .text import gender_of, lemma
from .word_lists import (
    CLAUSE_BREAKS,
    COLLECTIVE_HEADS,
    GENERIC_HEADS,
    MAKE_VERBS,
    MANNER_HEADS,
    PARTICLES_ALWAYS,
    PARTICLES_AT_END,
    PARTITIVE_HEADS,
    PERSON_WORDS,
    RESOLVABLE_PRONOUNS,
    SOUND_WORDS,
    SPEECH_LEMMAS,
    VERBISH,
    WEATHER_LEMMAS,
)


@dataclass
class Mention:
    name: str
    position: int
    sentence: int
    sources: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    from_noun: bool = False


class EventReader(Chunker):
    """Event mentions (name, sources, attributes, position) of a caption."""

    # -- reading events ---------------------------------------------------------------------
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

    def _verb_event(
        self, chunks: list[Chunk], j: int, sentence: int, last_event: Mention | None, previous_source: list[str]
    ) -> Mention | None:
        chunk = chunks[j]
        word = chunk.text
        if lemma(word) in self.lex["stop_verbs"]:
            return None
        has_particle = j + 1 < len(chunks) and chunks[j + 1].text in PARTICLES_ALWAYS
        k = j - 1
        while k >= 0 and chunks[k].kind in {"AUX", "ADV", "INT"}:
            k -= 1
        has_subject = k >= 0 and chunks[k].kind in {"NP", "PRON"}
        if chunk.kind == "VERB" and not self.is_sound_verb(word) and not has_particle and not has_subject:
            return None
        if j > 0 and chunks[j - 1].text == "to" and not self.is_sound_verb(word):
            return None
        attributes: list[str] = []
        sources: list[str] = []
        passive = chunk.kind == "EDV"
        # subject: look back over auxiliaries and adverbs
        k = j - 1
        while k >= 0 and chunks[k].kind in {"AUX", "ADV", "INT", "ATTR"}:
            if chunks[k].kind in {"ADV", "ATTR"}:
                attributes.insert(0, chunks[k].text.replace("_", " "))
            if chunks[k].text in {"being", "been"}:
                passive = True
            k -= 1
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
                    chunk.kind != "ING"
                    and not self.is_event_noun(chunks[k - 2].phrase.head)
                    and chunks[k - 2].phrase.head not in PARTITIVE_HEADS
                )
            )
        ):
            if chunks[k - 1].text == "with":  # "a person with loud shoes is walking"
                attributes.insert(0, f"with {subject.phrase.text()}")
            subject.consumed = True
            k -= 2
            subject = chunks[k]
        if subject is not None and subject.kind == "NP":
            sources, subject_attributes = self.split_phrase(subject.phrase)
            attributes = subject_attributes + attributes
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
        elif subject is not None and subject.kind == "PRON":
            pronoun = subject.text
            if pronoun == "it" and lemma(word) in WEATHER_LEMMAS:
                sources = []  # "it is raining"
            elif pronoun in RESOLVABLE_PRONOUNS:
                sources = self._resolve_pronoun(pronoun, previous_source)
            elif pronoun not in {"there"}:
                sources = [pronoun]
        elif subject is not None and subject.kind in {"CONJ", "SEP"} and last_event is not None:
            sources = list(last_event.sources)
        elif subject is not None and subject.kind == "ADJP" and last_event is not None:
            sources = list(last_event.sources)
        name = word
        # forward: particle, adverbs, objects and prepositional phrases
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
                name = f"{word} {particle}"
                n += 1
        while n < len(chunks):
            current = chunks[n]
            if current.kind in {"ADV", "ATTR"}:
                attributes.append(
                    current.text.replace("_", " ").replace("-", " ") if current.kind == "ATTR" else current.text
                )
                n += 1
            elif current.kind == "INT" and n + 1 < len(chunks) and chunks[n + 1].kind in {"ADV", "ADJP"}:
                attributes.append(f"{current.text} {chunks[n + 1].text}")
                n += 2
            elif current.kind == "ADJP":
                attributes.append(current.text)
                n += 1
            elif current.kind == "NP":
                if n + 1 < len(chunks) and chunks[n + 1].kind in VERBISH | {"AUX"}:
                    break  # the subject of the next event
                if not current.consumed:
                    attributes.append(current.phrase.text())
                    current.consumed = True
                n += 1
            elif current.kind == "PREP" and n + 1 < len(chunks) and chunks[n + 1].kind == "NP":
                target = chunks[n + 1]
                if n + 2 < len(chunks) and chunks[n + 2].kind in VERBISH:
                    break  # "with a dog barking": a new event
                if current.text in {"about", "than", "like"}:
                    pass  # what is said or compared is not a property of the sound
                elif current.text == "by" and passive:
                    sources.extend(self.split_phrase(target.phrase)[0])
                elif (
                    current.text == "of"
                    and chunk.kind == "ING"
                    and j > 0
                    and chunks[j - 1].kind in {"DET", "ADJP", "SOUNDOF"}
                ):
                    sources.extend(self.split_phrase(target.phrase)[0])
                else:
                    text = f"{current.text} {target.phrase.text()}"
                    # "on the floor of the kitchen": keep chained "of" phrases together
                    if n + 3 < len(chunks) and chunks[n + 2].text == "of" and chunks[n + 3].kind == "NP":
                        text += f" of {chunks[n + 3].phrase.text()}"
                        chunks[n + 3].consumed = True
                        n += 2
                    # "in a stream or river": coordinated objects of the preposition stay in the phrase
                    while (
                        n + 3 < len(chunks)
                        and chunks[n + 2].kind == "CONJ"
                        and chunks[n + 3].kind == "NP"
                        and not (n + 4 < len(chunks) and chunks[n + 4].kind in VERBISH)
                    ):
                        text += f" {chunks[n + 2].text} {chunks[n + 3].phrase.text()}"
                        chunks[n + 3].consumed = True
                        n += 2
                    attributes.extend(self._manner_adjectives(current.text, target.phrase) or [text])
                target.consumed = True
                n += 2
            elif current.kind == "CONJ" and n + 1 < len(chunks) and chunks[n + 1].kind in {"ADV", "ADJP", "ATTR"}:
                n += 1  # "loudly and repeatedly"
            else:
                break
        attributes = [a for a in attributes if not set(a.split()) <= self.lex["determiners"] | self.lex["intensifiers"]]
        return Mention(name=name, position=chunk.position, sentence=sentence, sources=sources, attributes=attributes)

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

    def _noun_events(self, chunks: list[Chunk], j: int, sentence: int) -> list[Mention]:
        chunk = chunks[j]
        phrase = chunk.phrase
        lex = self.lex
        mentions: list[Mention] = []
        sources, attributes = self.split_phrase(phrase)
        modifiers = [t for t in phrase.tokens if t.tag == "INGMOD"]
        noun_tokens = phrase.nouns
        # "a barking dog", "the sound of running water", "stitching sounds"
        for modifier in modifiers:
            noun_text = " ".join(t.text for t in noun_tokens if t.text not in SOUND_WORDS)
            mention_sources = [s for s in [noun_text] if s and s not in GENERIC_HEADS]
            if phrase.head in SOUND_WORDS:
                mention_sources = self._maker(chunks, j)
            mentions.append(Mention(modifier.text, modifier.position, sentence, mention_sources, list(attributes)))
        if modifiers or chunk.consumed:
            return mentions
        if phrase.tokens[0].text in {"no", "neither"} or (j > 0 and chunks[j - 1].text in {"without", "not"}):
            return mentions  # "there is no background noise", "without any echo": absent sounds
        previous = chunks[j - 1] if j > 0 else None
        after_sound_of = previous is not None and previous.kind == "SOUNDOF"
        after_make = previous is not None and previous.kind == "STOP" and previous.text in MAKE_VERBS
        in_prepositional_phrase = previous is not None and previous.kind == "PREP"
        head = phrase.head
        head_is_event = self.is_event_noun(head)
        if in_prepositional_phrase and not head_is_event:
            return mentions
        if not (head_is_event or after_sound_of or (after_make and head in SOUND_WORDS)):
            return mentions
        if head in SOUND_WORDS and not any(t.text not in SOUND_WORDS for t in noun_tokens) and not after_make:
            return mentions
        words_before_head = [t.text for t in noun_tokens[:-1]]
        adjective_sources = [t.text for t in phrase.tokens if t.tag == "ADJ" and t.text in lex["source_adjectives"]]
        if head in SOUND_WORDS and words_before_head:
            name = words_before_head[-1]
            event_sources = words_before_head[:-1]
        elif " " in head and head.split()[-1] in lex["source_modified_event_nouns"]:
            name = head.split()[-1]
            event_sources = [" ".join(head.split()[:-1])]
        elif head in lex["source_modified_event_nouns"]:
            name = head
            event_sources = (
                [" ".join(adjective_sources + words_before_head)] if adjective_sources or words_before_head else []
            )
        elif words_before_head and words_before_head[-1] in lex["event_compound_modifiers"]:
            name = f"{words_before_head[-1]} {head}"
            event_sources = [" ".join(words_before_head[:-1])] if len(words_before_head) > 1 else []
        else:
            name = head
            event_sources = [" ".join(words_before_head)] if words_before_head else []
        if after_make:
            event_sources = event_sources or self._maker(chunks, j)
        if phrase.possessor is not None:
            event_sources = [phrase.possessor.text(keep_determiners=False)]
        event_sources = [s for s in event_sources if s and s not in GENERIC_HEADS]
        n = j + 1
        while n < len(chunks):
            current = chunks[n]
            if current.kind in {"ADV", "ATTR"}:
                attributes.append(
                    current.text.replace("_", " ").replace("-", " ") if current.kind == "ATTR" else current.text
                )
                n += 1
            elif current.kind == "PREP" and current.text != "of" and n + 1 < len(chunks) and chunks[n + 1].kind == "NP":
                if n + 2 < len(chunks) and chunks[n + 2].kind in VERBISH:
                    break
                attributes.extend(
                    self._manner_adjectives(current.text, chunks[n + 1].phrase)
                    or [f"{current.text} {chunks[n + 1].phrase.text()}"]
                )
                chunks[n + 1].consumed = True
                n += 2
            elif current.kind == "PREP" and current.text == "of" and n + 1 < len(chunks) and chunks[n + 1].kind == "NP":
                event_sources = event_sources + self.split_phrase(chunks[n + 1].phrase)[0]
                chunks[n + 1].consumed = True
                n += 2
            else:
                break
        chunk.consumed = True
        mentions.append(Mention(name, phrase.position, sentence, event_sources, attributes, from_noun=True))
        return mentions

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

    def is_event_noun(self, word: str) -> bool:
        """Sound nouns (explosion, siren) and nouns made from sound verbs (a honk, a loud crash)."""
        lex = self.lex
        word = word.split()[-1]
        word_lemma = lemma(word)
        if word in lex["event_nouns"] or word_lemma in lex["event_nouns"]:
            return True
        return word_lemma in lex["sound_verbs"] and word_lemma not in lex["non_event_verb_nouns"] and " " not in word

    def _maker(self, chunks: list[Chunk], j: int) -> list[str]:
        """Subject of "X makes/produces ... sound": the noun phrase before the make-verb."""
        k = j - 1
        while k >= 0 and chunks[k].kind not in {"STOP"}:
            if chunks[k].kind in CLAUSE_BREAKS - {"STOP"}:
                return []
            k -= 1
        if k < 0 or chunks[k].text not in MAKE_VERBS:
            return []
        k -= 1
        while k >= 0 and chunks[k].kind in {"AUX", "ADV", "INT"}:
            k -= 1
        if k >= 0 and chunks[k].kind == "NP":
            chunks[k].consumed = True
            return self.split_phrase(chunks[k].phrase)[0]
        return []

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
