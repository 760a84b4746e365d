"""Rule extractor, step 3b: events named by a noun ("an explosion", "the sound of running water",
"a barking dog", "a car makes a honking sound").

Three phases per noun phrase: events of its -ing modifiers; whether the phrase names a sound at all;
the event's name and sources from the phrase's form, then attributes from the phrases after it.
"""

from __future__ import annotations

from .chunking import Chunk
from .phrase_reading import Mention, PhraseReader, adverbial_text
from .word_lists import CLAUSE_BREAKS, GENERIC_HEADS, MAKE_VERBS, SOUND_WORDS, VERBISH


def _after_make_verb(chunks: list[Chunk], j: int) -> bool:
    """ "makes a loud sound", "produces a hum"."""
    return j > 0 and chunks[j - 1].kind == "STOP" and chunks[j - 1].text in MAKE_VERBS


class NounEventReader(PhraseReader):
    """The event mentions of a noun phrase chunk."""

    def _noun_events(self, chunks: list[Chunk], j: int, sentence: int) -> list[Mention]:
        chunk = chunks[j]
        _, attributes = self.split_phrase(chunk.phrase)
        modifier_events = self._modifier_events(chunks, j, sentence, attributes)
        if modifier_events or chunk.consumed or not self._names_a_sound(chunks, j):
            return modifier_events
        name, sources = self._name_and_sources(chunks, j)
        following_attributes, following_sources = self._noun_complements(chunks, j)
        chunk.consumed = True
        return [
            Mention(
                name,
                chunk.phrase.position,
                sentence,
                sources + following_sources,
                attributes + following_attributes,
                from_noun=True,
            )
        ]

    def _modifier_events(self, chunks: list[Chunk], j: int, sentence: int, attributes: list[str]) -> list[Mention]:
        """ "a barking dog", "the sound of running water", "stitching sounds": the -ing word is the event."""
        phrase = chunks[j].phrase
        mentions = []
        for modifier in (t for t in phrase.tokens if t.tag == "INGMOD"):
            noun_text = " ".join(t.text for t in phrase.nouns if t.text not in SOUND_WORDS)
            sources = [s for s in [noun_text] if s and s not in GENERIC_HEADS]
            if phrase.head in SOUND_WORDS:
                sources = self._maker(chunks, j)
            mentions.append(Mention(modifier.text, modifier.position, sentence, sources, list(attributes)))
        return mentions

    def _names_a_sound(self, chunks: list[Chunk], j: int) -> bool:
        """An event noun, or any noun after "the sound of"; a bare "sound" only as what something makes."""
        phrase = chunks[j].phrase
        if phrase.tokens[0].text in {"no", "neither"} or (j > 0 and chunks[j - 1].text in {"without", "not"}):
            return False  # "there is no background noise", "without any echo": absent sounds
        previous = chunks[j - 1] if j > 0 else None
        after_sound_of = previous is not None and previous.kind == "SOUNDOF"
        after_make = _after_make_verb(chunks, j)
        in_prepositional_phrase = previous is not None and previous.kind == "PREP"
        head = phrase.head
        head_is_event = self.is_event_noun(head)
        if in_prepositional_phrase and not head_is_event:
            return False
        if not (head_is_event or after_sound_of or (after_make and head in SOUND_WORDS)):
            return False
        only_sound_words = not any(t.text not in SOUND_WORDS for t in phrase.nouns)
        return not (head in SOUND_WORDS and only_sound_words and not after_make)

    def _name_and_sources(self, chunks: list[Chunk], j: int) -> tuple[str, list[str]]:
        """The event's name and sources by the phrase's form, first match wins:
        "a dog bark sound" -> bark (dog); "a car horn" -> horn (car); "a loud male voice" -> voice (male);
        "a door slam" with a compound modifier -> "door slam"; else the head with the nouns before it."""
        lex = self.lex
        phrase = chunks[j].phrase
        head = phrase.head
        words_before_head = [t.text for t in phrase.nouns[:-1]]
        adjective_sources = [t.text for t in phrase.tokens if t.tag == "ADJ" and t.text in lex["source_adjectives"]]
        if head in SOUND_WORDS and words_before_head:
            name = words_before_head[-1]
            sources = words_before_head[:-1]
        elif " " in head and head.split()[-1] in lex["source_modified_event_nouns"]:
            name = head.split()[-1]
            sources = [" ".join(head.split()[:-1])]
        elif head in lex["source_modified_event_nouns"]:
            name = head
            sources = (
                [" ".join(adjective_sources + words_before_head)] if adjective_sources or words_before_head else []
            )
        elif words_before_head and words_before_head[-1] in lex["event_compound_modifiers"]:
            name = f"{words_before_head[-1]} {head}"
            sources = [" ".join(words_before_head[:-1])] if len(words_before_head) > 1 else []
        else:
            name = head
            sources = [" ".join(words_before_head)] if words_before_head else []
        if _after_make_verb(chunks, j):
            sources = sources or self._maker(chunks, j)
        if phrase.possessor is not None:
            sources = [phrase.possessor.text(keep_determiners=False)]
        return name, [s for s in sources if s and s not in GENERIC_HEADS]

    def _noun_complements(self, chunks: list[Chunk], j: int) -> tuple[list[str], list[str]]:
        """(attributes, sources) from the phrases after the noun: "of X" adds a source, others attributes."""
        attributes: list[str] = []
        sources: list[str] = []
        n = j + 1
        while n < len(chunks):
            current = chunks[n]
            object_follows = n + 1 < len(chunks) and chunks[n + 1].kind == "NP"
            if current.kind in {"ADV", "ATTR"}:
                attributes.append(adverbial_text(current))
                n += 1
            elif current.kind == "PREP" and current.text != "of" and object_follows:
                if n + 2 < len(chunks) and chunks[n + 2].kind in VERBISH:
                    break
                attributes.extend(
                    self._manner_adjectives(current.text, chunks[n + 1].phrase)
                    or [f"{current.text} {chunks[n + 1].phrase.text()}"]
                )
                chunks[n + 1].consumed = True
                n += 2
            elif current.kind == "PREP" and current.text == "of" and object_follows:
                sources = sources + self.split_phrase(chunks[n + 1].phrase)[0]
                chunks[n + 1].consumed = True
                n += 2
            else:
                break
        return attributes, sources

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
