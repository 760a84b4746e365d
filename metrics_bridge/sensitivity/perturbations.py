"""Factor perturbations of clean captions (X-ACE Table 3), deterministic for a seed.

Each perturbation changes one factor of a caption and leaves the rest of its words alone. Where
the caption has nothing to change for that factor, the perturbation does not apply (None) and the
caption is counted as not applicable. Words are found with the offline X-ACE extractor's audio
graph (events with their sources and attributes, relations between adjacent events) and edited
in the caption text (whole words, first occurrence):

- ``event`` (swap the sound event): an event word of the caption ("barks") is replaced by an event
  word of the same form (-ing / -s / -ed / other) taken from another caption of the dataset, whose
  lemma differs and appears in none of this clip's references ("a dog barks" -> "a dog rings").
- ``source`` (swap the source): with two events of different sources, the two sources exchange
  places ("a woman speaks while a boy cries" -> "a boy speaks while a woman cries", Table 3);
  otherwise the source word is replaced by a source of another clip, with the same plural/singular
  ending, that none of this clip's references mentions ("a bird is chirping" -> "a engine is chirping").
- ``attribute`` (swap / negate an attribute): an attribute word found in the AudioCaps-F tag
  library is replaced by one of its antonyms from the same category ("loudly" -> "quietly",
  "nearby" -> "in the distance"), in the same form (-ly adverbs stay adverbs).
- ``relation`` (reverse a temporal relation): the connective between two events is changed to the
  opposite order: before <-> after; "followed by", "then", "and then" -> "after"; a simultaneous
  "while" / "as" / "whilst" / "with" / "and" -> "before" ("a motor runs with a whirring" ->
  "a motor runs before a whirring", Table 3's "with" -> "followed by").

And a probe apart from the factor table, BRACE-Hallucination style (protocols.md §6):

- ``hallucination`` (one word): a sound-source noun of the caption is replaced by an *unrelated* noun:
  a source noun of another clip of the dataset, of the same grammatical number, that none of this
  clip's references mentions and whose Sentence-BERT cosine with the original noun is below
  UNRELATED_BELOW ("a car horn honks" -> "a goat honks"). The rest of the caption is left alone.

Determinism: each perturbation draws from `random.Random(f"{seed}:{kind}:{caption}")`, so a
caption's perturbation depends only on the seed, the caption and the dataset's pools, never on the
order captions are processed in. Plain Python, no Django.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from metrics_bridge.scoring.xace import RuleExtractor
from metrics_bridge.scoring.xace.text import lemma, lexicon, normalize_phrase, readings

PERTURBATIONS = ("event", "source", "attribute", "relation")
#: a replacement word must occur as an event / source in at least this many captions of the dataset
MIN_POOL_COUNT = 2
FACTOR_OF = {"event": "sound event", "source": "source", "attribute": "attribute", "relation": "temporal relation"}
HALLUCINATION = "hallucination"
#: a replacement noun counts as unrelated to the original below this cosine of their Sentence-BERT vectors
UNRELATED_BELOW = 0.3
#: never a hallucinated source: the extractor reads these as sources ("something beeps"), but they name nothing
INDEFINITE_SOURCES = frozenset(
    {"something", "someone", "somebody", "anything", "anyone", "anybody", "nothing", "nobody", "everything"}
    | {"everyone", "everybody", "thing", "things", "one", "ones", "it", "they"}
)

#: connective (as written) -> the connective that reverses or breaks the temporal order
RELATION_SWAPS = {
    "followed by": "after",
    "and then": "after",
    "before": "after",
    "after": "before",
    "then": "after",
    "while": "before",
    "whilst": "before",
    "as": "before",
    "with": "before",
    "and": "before",
}
_CONNECTIVE_PATTERN = re.compile(r"\b(" + "|".join(sorted(RELATION_SWAPS, key=len, reverse=True)) + r")\b")


@dataclass
class Pools:
    """Replacement words drawn from the whole dataset's captions."""

    events: dict[str, list[str]] = field(default_factory=dict)  # form -> event words
    sources: dict[str, list[str]] = field(default_factory=dict)  # "plural"/"singular" -> source words


@dataclass(frozen=True)
class Perturbed:
    kind: str
    original: str
    text: str
    changed: str  # e.g. "barks -> rings"


def word_form(word: str) -> str:
    """Part of speech and inflection of an event word, e.g. "verb-ing", "verb-s", "noun-s": replacements keep it."""
    kind = "verb" if lemma(word) in lexicon()["sound_verbs"] else "noun"
    if word.endswith("ing"):
        return f"{kind}-ing"
    if word.endswith("ed"):
        return f"{kind}-ed"
    if word.endswith("s") and not word.endswith("ss"):
        return f"{kind}-s"
    return f"{kind}-base"


def grammatical_number(word: str) -> str:
    return (
        "plural"
        if lemma(word) != word.lower() or word.lower() in {"people", "children", "men", "women"}
        else "singular"
    )


def _single_word(text: str) -> bool:
    return bool(re.fullmatch(r"[a-z][a-z'-]*", text))


def _find(word: str, caption: str) -> re.Match | None:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", caption, flags=re.IGNORECASE)


def _replace_first(caption: str, word: str, replacement: str) -> str | None:
    match = _find(word, caption)
    if match is None:
        return None
    before = _fix_article(caption[: match.start()], replacement)
    return before + _same_case(match.group(0), replacement) + caption[match.end() :]


def _fix_article(before: str, next_word: str) -> str:
    """ "a" / "an" agreeing with the word that now follows it."""
    match = re.search(r"\b(a|an|A|An)(\s+)$", before)
    if not match:
        return before
    article = "an" if next_word[:1].lower() in "aeiou" else "a"
    article = article.capitalize() if match.group(1)[0].isupper() else article
    return before[: match.start()] + article + match.group(2)


def _same_case(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


class Perturber:
    """Makes the four perturbations of captions; `pools` come from every caption of the dataset."""

    def __init__(
        self,
        captions: Iterable[str],
        *,
        attribute_tags: Mapping[str, dict],
        seed: int = 0,
        similarity: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
    ) -> None:
        """`similarity(word, others)`: cosine of a word with each other word (default: Sentence-BERT vectors)."""
        self.seed = seed
        self.extractor = RuleExtractor()
        self.antonyms = _antonym_table(attribute_tags)
        self.pools = self._pools(captions)
        self.similarity = similarity or _sbert_similarity

    def _pools(self, captions: Iterable[str]) -> Pools:
        """Event and source words the extractor finds in at least MIN_POOL_COUNT captions (drops one-off misreads)."""
        events: Counter[str] = Counter()
        sources: Counter[str] = Counter()
        for caption in captions:
            graph = self.extractor.extract(caption)
            found_events, found_sources = set(), set()
            for event, children in graph.events.items():
                if _single_word(event) and _find(event, caption):
                    found_events.add(event.lower())
                for source in children.get("source", []):
                    if _single_word(source) and _find(source, caption):
                        found_sources.add(source.lower())
            events.update(found_events)
            sources.update(found_sources)
        pools = Pools()
        for word in sorted(word for word, count in events.items() if count >= MIN_POOL_COUNT):
            pools.events.setdefault(word_form(word), []).append(word)
        for word in sorted(word for word, count in sources.items() if count >= MIN_POOL_COUNT):
            pools.sources.setdefault(grammatical_number(word), []).append(word)
        return pools

    def _rng(self, kind: str, caption: str) -> random.Random:
        return random.Random(f"{self.seed}:{kind}:{caption}")

    def perturb(self, kind: str, caption: str, clip_references: Sequence[str] = ()) -> Perturbed | None:
        """The caption with one `kind` perturbation, or None when it has nothing of that factor to change."""
        method: Callable[..., Perturbed | None] = getattr(self, f"_{kind}")
        return method(caption, self._rng(kind, caption), _clip_lemmas(clip_references or (caption,)))

    def _event(self, caption: str, rng: random.Random, clip_lemmas: set[str]) -> Perturbed | None:
        graph = self.extractor.extract(caption)
        words = [event for event in graph.events if _single_word(event) and _find(event, caption)]
        if not words:
            return None
        word = rng.choice(words)
        return _replaced("event", caption, word, self.pools.events.get(word_form(word), []), rng, clip_lemmas)

    def _source_words(self, caption: str) -> list[str]:
        """The caption's one-word sound sources, as written in it, in order."""
        graph = self.extractor.extract(caption)
        sources = []
        for children in graph.events.values():
            for source in children.get("source", []):
                if _single_word(source) and _find(source, caption) and source.lower() not in sources:
                    sources.append(source.lower())
        return sources

    def _source(self, caption: str, rng: random.Random, clip_lemmas: set[str]) -> Perturbed | None:
        sources = self._source_words(caption)
        if not sources:
            return None
        same_number = [
            (first, second)
            for index, first in enumerate(sources)
            for second in sources[index + 1 :]
            if grammatical_number(first) == grammatical_number(second) and lemma(first) != lemma(second)
        ]
        if same_number:
            first, second = rng.choice(same_number)
            text = _exchange(caption, first, second)
            if text and text != caption:
                return Perturbed("source", caption, text, f"{first} <-> {second}")
        word = rng.choice(sources)
        pool = self.pools.sources.get(grammatical_number(word), [])
        return _replaced("source", caption, word, pool, rng, clip_lemmas)

    def _attribute(self, caption: str, rng: random.Random, clip_lemmas: set[str]) -> Perturbed | None:
        found = []
        for phrase, opposites in self.antonyms.items():
            if _find(phrase, caption):
                found.append((phrase, opposites))
        if not found:
            return None
        phrase, opposites = rng.choice(sorted(found))
        replacement = rng.choice(opposites)
        text = _replace_first(caption, phrase, replacement)
        return Perturbed("attribute", caption, text, f"{phrase} -> {replacement}") if text else None

    def hallucinate(self, caption: str, clip_references: Sequence[str] = ()) -> Perturbed | None:
        """The caption with one sound-source noun replaced by an unrelated noun, or None (no source noun, or no
        unrelated noun of the same number in the dataset's pool)."""
        rng = self._rng(HALLUCINATION, caption)
        clip_lemmas = _clip_lemmas(clip_references or (caption,))
        sources = self._source_words(caption)
        if not sources:
            return None
        word = rng.choice(sources)
        pool = [
            c
            for c in self.pools.sources.get(grammatical_number(word), [])
            if lemma(c) not in clip_lemmas and c not in INDEFINITE_SOURCES
        ]
        if not pool:
            return None
        similarities = self.similarity(word, pool)
        unrelated = [c for c, value in zip(pool, similarities, strict=True) if value < UNRELATED_BELOW]
        if not unrelated:
            return None
        replacement = rng.choice(unrelated)
        text = _replace_first(caption, word, replacement)
        return Perturbed(HALLUCINATION, caption, text, f"{word} -> {replacement}") if text else None

    def _relation(self, caption: str, rng: random.Random, clip_lemmas: set[str]) -> Perturbed | None:
        graph = self.extractor.extract(caption)
        lowered = caption.lower()
        spans = []
        for first, second, _relation in graph.adjacent:
            start, end = _find(first, lowered), _find(second, lowered)
            if start is None or end is None or start.end() >= end.start():
                continue
            between = lowered[start.end() : end.start()]
            for match in _CONNECTIVE_PATTERN.finditer(between):
                spans.append((start.end() + match.start(), start.end() + match.end(), match.group(1)))
        if not spans:
            return None
        begin, finish, connective = rng.choice(spans)
        replacement = RELATION_SWAPS[connective]
        text = caption[:begin] + replacement + caption[finish:]
        return Perturbed("relation", caption, text, f"{connective} -> {replacement}")


def _replaced(
    kind: str, caption: str, word: str, pool: Sequence[str], rng: random.Random, clip_lemmas: set[str]
) -> Perturbed | None:
    """`word` replaced by a pool word whose lemma none of the clip's references has (None if there is none)."""
    choices = [candidate for candidate in pool if lemma(candidate) not in clip_lemmas]
    if not choices:
        return None
    replacement = rng.choice(choices)
    text = _replace_first(caption, word, replacement)
    return Perturbed(kind, caption, text, f"{word} -> {replacement}") if text else None


def _sbert_similarity(word: str, others: Sequence[str]) -> list[float]:
    from metrics_bridge.scoring import sbert

    vectors = sbert.encode_texts([word, *others])
    return [float(value) for value in vectors[1:] @ vectors[0]]


def _clip_lemmas(references: Iterable[str]) -> set[str]:
    return {lemma(word) for text in references for word in normalize_phrase(text).split()}


def _exchange(caption: str, first: str, second: str) -> str | None:
    a, b = _find(first, caption), _find(second, caption)
    if a is None or b is None or a.start() == b.start():
        return None
    if a.start() > b.start():
        a, b = b, a
    return (
        caption[: a.start()]
        + _same_case(a.group(0), b.group(0).lower())
        + caption[a.end() : b.start()]
        + _same_case(b.group(0), a.group(0).lower())
        + caption[b.end() :]
    )


def _antonym_table(attribute_tags: Mapping[str, dict]) -> dict[str, list[str]]:
    """Attribute phrase -> antonym phrases of the same category and form, from the tag library.

    Adjectives also give their -ly adverbs ("loud" -> "loudly": "quietly", "softly", ...), so
    "talking loudly" is negated as an adverb. Placeholder tags ("against xx") are left out.
    """
    by_group: dict[tuple[str, object], list[str]] = {}
    tags = {}
    for tag, info in attribute_tags.items():
        text = " ".join(tag.lower().split())
        if "xx" in text or not _describes(text):
            continue
        tags[text] = info
        by_group.setdefault((info.get("class"), info.get("sym")), []).append(text)
    table: dict[str, list[str]] = {}
    for text, info in tags.items():
        opposites = sorted(
            {other for group in info.get("ant") or [] for other in by_group.get((info.get("class"), group), [])}
        )
        if not opposites:
            continue
        same_form = [other for other in opposites if other.endswith("ly") == text.endswith("ly")]
        if same_form:
            table[text] = same_form
        adverb = _adverb(text)
        if adverb and adverb != text:
            adverbs = sorted({form for other in opposites if (form := _adverb(other))})
            if adverbs:
                table.setdefault(adverb, adverbs)
    return table


def _describes(text: str) -> bool:
    """An adjective, adverb or prepositional phrase ("in the distance"); not a verb or noun tag ("end", "begins")."""
    if " " in text:
        return text.split()[0] in {"in", "on", "at", "far", "off", "next", "close"}
    found = readings(text)
    return "ADJ" in found or "ADV" in found


def _adverb(word: str) -> str | None:
    """The -ly adverb of an adjective if it is an English word ("loud" -> "loudly", "gentle" -> "gently"), else None."""
    if word.endswith("ly") and "ADV" in readings(word):
        return word
    if not _single_word(word) or "ADJ" not in readings(word):
        return None
    if word.endswith("le"):
        candidate = word[:-1] + "y"
    elif word.endswith("y"):
        candidate = word[:-1] + "ily"
    elif word.endswith("ic"):
        candidate = word + "ally"
    else:
        candidate = word + "ly"
    return candidate if "ADV" in readings(candidate) else None
