"""Offline X-ACE factor extractor: caption -> audio graph with a lexicon and rules (no model download).

Pipeline: normalise and split sentences -> tag words (packaged lexicon + lemminflect's part-of-speech
tables) -> settle noun/verb ambiguities from context and agreement -> chunk noun phrases -> read
events off the chunks (sound verbs with their subject as source; sound nouns; "the sound of X";
"X makes a Y sound") with attributes from adverbs, adjectives, prepositional phrases and objects ->
temporal relation between adjacent events from the connectives between them.

Version 2 (rules-extractor-2) adds, from failure cases on Clotho-Eval captions and the LLM graphs:
irregular passives ("is being struck / rung / ground"); action verbs that make sound (hit, roll, fall,
drop, pull, ...) in the lexicon; infinitives ("uses a saw to cut wood") with the clause's subject as
source; partitive subjects ("a piece of metal" -> metal); "a creaky and squeaky floor" as one phrase;
"in a calm, steady voice" -> calm, steady; negated sounds ("no background noise") and "as time goes
on" left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .graph import AFTER, AND, BEFORE, AudioGraph
from .text import gender_of, is_participle, lemma, lexicon, readings

VERBISH = {"VERB", "ING", "EDV"}
NP_PARTS = {"DET", "INT", "ADJ", "NOUN", "INGMOD", "POSS"}
CLAUSE_BREAKS = {"TEMP", "SEP", "CONJ", "STOP", "SOUNDOF"}
COLLECTIVE_HEADS = {"group", "crowd", "team", "family", "chorus", "choir", "audience", "couple"}
#: "speaks in a high-pitched voice": the adjectives of these heads describe the sound itself
MANNER_HEADS = {"voice", "tone", "manner", "way", "fashion", "pitch", "pace", "rhythm", "volume"}
#: "a piece of metal", "some type of machine": the "of" phrase names the source
PARTITIVE_HEADS = {"piece", "pieces", "type", "types", "kind", "sort", "bit", "bits", "set", "variety", "pile", "stack"}
GENERIC_HEADS = {"sound", "sounds", "noise", "audio", "recording", "clip", "it", "this", "track", "quality", "scene"}
SOUND_WORDS = {"sound", "sounds", "noise", "noises"}
MAKE_VERBS = {
    "make",
    "makes",
    "made",
    "making",
    "produce",
    "produces",
    "produced",
    "producing",
    "emit",
    "emits",
    "emitted",
    "emitting",
    "create",
    "creates",
    "creating",
    "give",
    "gives",
    "giving",
    "let",
    "lets",
}
PLURAL_NOUNS = {"people", "men", "women", "children", "police", "geese", "mice", "cattle", "folks"}
NUMBERLESS_NOUNS = {"sheep", "fish", "deer", "crowd", "audience", "group", "family", "team", "traffic", "water", "rain"}
THIRD_PERSON_SINGULAR_PRONOUNS = {"he", "she", "it", "someone", "somebody", "something", "one", "who", "which", "that"}
RESOLVABLE_PRONOUNS = {"it", "they", "he", "she", "them", "who", "which", "that"}
NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty", "hundred"}
PARTICLES_ALWAYS = {"up", "away", "off", "out"}
PARTICLES_AT_END = {"by", "over", "past", "along", "around", "down"}
SPEECH_LEMMAS = {
    "speak",
    "talk",
    "say",
    "sing",
    "chat",
    "narrate",
    "whisper",
    "shout",
    "yell",
    "converse",
    "mumble",
    "murmur",
    "announce",
    "deliver",
    "laugh",
    "chatter",
    "communicate",
    "preach",
    "lecture",
    "argue",
}
MUSIC_WORDS = {"music", "song", "melody", "tune", "radio", "band", "orchestra"}
PERSON_WORDS = {
    "man",
    "woman",
    "person",
    "people",
    "boy",
    "girl",
    "child",
    "children",
    "kid",
    "baby",
    "men",
    "women",
    "someone",
    "somebody",
    "crowd",
    "group",
    "lady",
    "guy",
    "male",
    "female",
    "voice",
    "speaker",
    "audience",
}
ING_NOUNS = {
    "building",
    "ceiling",
    "evening",
    "morning",
    "thing",
    "something",
    "nothing",
    "anything",
    "everything",
    "king",
    "wing",
    "string",
    "spring",
    "swing",
    "clothing",
    "railing",
    "painting",
    "meeting",
    "lightning",
    "wedding",
    "pudding",
    "bedding",
    "siding",
    "awning",
    "opening",
    "ending",
    "beginning",
    "setting",
    "surroundings",
    "during",
    "ring",
    "sing",
    "bring",
}
WEATHER_LEMMAS = {"rain", "snow", "thunder", "hail", "drizzle", "pour", "storm"}
FILLER_WORDS = {"also", "just", "still", "even", "only", "again", "currently", "actually", "clearly", "audibly"}


@dataclass
class Token:
    text: str
    tag: str
    position: int


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
class Mention:
    name: str
    position: int
    sentence: int
    sources: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    from_noun: bool = False


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


class RuleExtractor:
    """Caption -> AudioGraph with rules only; deterministic and fast (about 5k captions/s)."""

    name = "rules-extractor-2"

    def __init__(self) -> None:
        self.lex = lexicon()
        self._multiword = sorted(self.lex["multiword"].items(), key=lambda item: -len(item[0]))
        self._compounds = sorted(self.lex["compound_nouns"], key=lambda c: -len(c))

    def extract(self, caption: str) -> AudioGraph:
        return _cached_extract(self, caption)

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

    # -- relations --------------------------------------------------------------------------
    def relation_between(self, words: list[str]) -> str:
        lex = self.lex
        if any(w in lex["relation_before"] for w in words):
            return BEFORE
        if any(w in lex["relation_after"] for w in words):
            return AFTER
        return AND

    def build_graph(self, caption: str) -> AudioGraph:
        # "as time goes on", "time passes": time is not a sound source
        mentions = [m for m in self.extract_mentions(caption) if m.sources != ["time"]]
        graph = AudioGraph()
        flat = [w for sentence in self.sentences(caption) for w in (*sentence, ".")]
        order: list[tuple[str, int]] = []
        verb_mentions = [m for m in mentions if not m.from_noun]
        for mention in mentions:
            if mention.from_noun:
                referent = self._referent(mention, verb_mentions)
                if referent is not None:
                    referent.attributes.extend(a for a in mention.attributes if a not in referent.attributes)
                    if referent.name in graph.events:
                        graph.add_event(referent.name, (), mention.attributes)
                    continue
            elif (
                lemma(mention.name.split()[0]) == "play"
                and mention.sources
                and mention.sources[-1].split()[-1] in MUSIC_WORDS
            ):
                mention.name, mention.sources = mention.sources[-1], []  # "music plays": the music is the event
            name = graph.add_event(mention.name, mention.sources, mention.attributes)
            if name not in [n for n, _ in order]:
                order.append((name, mention.position))
        adjacent = []
        for (first, first_position), (second, second_position) in zip(order, order[1:], strict=False):
            between = flat[first_position + 1 : second_position]
            relation = self.relation_between(between)
            if relation == AND:
                # "After a bell rings, a man speaks": the clause before holds the connective
                start = max((i for i in range(first_position) if flat[i] in {".", ","}), default=-1) + 1
                lead = flat[start:first_position]
                if "after" in lead:
                    relation = BEFORE
                elif "before" in lead:
                    relation = AFTER
            adjacent.append((first, second, relation))
        graph.set_adjacent_relations(adjacent)
        return graph


@lru_cache(maxsize=20000)
def _cached_extract(extractor: RuleExtractor, caption: str) -> AudioGraph:
    return extractor.build_graph(caption)
