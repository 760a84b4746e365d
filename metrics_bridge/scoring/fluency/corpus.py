"""Clean training captions for the fluency detector from sources that are no benchmark's captions.

A detector trained on a benchmark's captions has memorised the texts it later scores there, and the
overlap rule then drops its features on that benchmark (docs/metrics.md). The shipped detector is
therefore made from text no imported benchmark holds:

- `xace_sentences`: the whole sentences of machine captions (X-ACE's caption graphs file). Many of
  those captions stop mid-sentence (a generation length limit: "... The audio"); a cut-off sentence
  would be a *disfluent* example labelled clean, so only sentences ending in . ! or ? are kept;
- `template_captions`: AudioCaps-style captions written from structured annotations (AudioCaps-F:
  per clip, sound events with their sources and attributes), joined with the connectives captions
  use, so that the detector also sees the short "a man speaks while birds chirp" register;
- `without_texts`: drops every caption whose normalised text (the overlap rule's fingerprint) is
  among the texts of the files to stay disjoint from.

Plain Python, no model, no Django; deterministic for a seed.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ...agreement.fingerprints import text_hash

#: sentence boundaries, also where a space is missing after the stop ("laughs.The audio")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s*(?=[A-Z])")
MIN_SENTENCE_WORDS = 4
MAX_SENTENCE_WORDS = 30


def xace_sentences(items: Iterable[Mapping]) -> list[str]:
    """Every complete sentence of the items' `caption`, in order, without duplicates."""
    sentences: list[str] = []
    for item in items:
        caption = str(item.get("caption") or "").strip()
        for sentence in _SENTENCE_END.split(caption):
            sentence = " ".join(sentence.split())
            words = len(sentence.split())
            if sentence[-1:] in ".!?" and MIN_SENTENCE_WORDS <= words <= MAX_SENTENCE_WORDS:
                sentences.append(sentence)
    return list(dict.fromkeys(sentences))


# --- captions written from AudioCaps-F annotations ---------------------------------------------------------

#: attributes (lower case) that read as an adverbial after the event; the others (adjectives such as
#: "coarse" or "mid-size") do not fit a caption's word order without a grammar and are not used
ADVERBIAL_ATTRIBUTES = frozenset(
    {
        "in the background",
        "in the distance",
        "nearby",
        "outdoors",
        "indoors",
        "briefly",
        "suddenly",
        "lightly",
        "softly",
        "loudly",
        "quickly",
        "slowly",
        "repeatedly",
        "several times",
        "twice",
        "once",
        "rhythmically",
        "continuously",
        "intermittently",
        "frequently",
        "into a microphone",
        "off and on",
        "steadily",
        "gently",
    }
)
#: nouns without an article ("wind blows", "water running")
MASS_NOUNS = frozenset(
    {
        "wind",
        "water",
        "rain",
        "music",
        "traffic",
        "metal",
        "plastic",
        "wood",
        "paper",
        "food",
        "compressed air",
        "air",
        "steam",
        "thunder",
        "fire",
        "gravel",
        "snow",
        "ice",
        "glass",
        "static",
        "applause",
        "laughter",
    }
)
PLURAL_NOUNS = frozenset({"people", "men", "women", "children", "kids", "sheep", "geese", "cattle", "police"})
#: sources that bring their own determiner
DETERMINED = ("a ", "an ", "the ", "another ", "some ", "someone", "somebody", "his ", "her ", "their ", "two ")
#: events ending in -s that are nouns, not verbs ("footsteps", not "a man footsteps")
NOUN_EVENTS = frozenset({"footsteps", "gunshots", "shots", "steps", "bells", "beeps", "clicks", "sirens", "horns"})
#: between two clauses; "followed by" and "with" only before a participle clause ("followed by a dog barking")
FINITE_JOINERS = ("and", "while", "as", "and then", "before", "after")
PARTICIPLE_JOINERS = ("followed by", "with", "and", "along with")


def _plural(noun: str) -> bool:
    last = noun.split()[-1]
    return last in PLURAL_NOUNS or (last.endswith("s") and not last.endswith("ss"))


def _noun_phrase(source: str) -> str:
    source = " ".join(source.lower().split())
    if source.startswith(DETERMINED) or source in MASS_NOUNS or _plural(source):
        return source
    return ("an " if source[0] in "aeiou" else "a ") + source


def _clauses(event: str, source: str, adverbial: str) -> tuple[str, str] | None:
    """(finite clause, participle clause) for one annotated event, or None when no template fits it."""
    event = " ".join(event.lower().split())
    if not source or " " in event or not event.isalpha():
        return None
    subject = _noun_phrase(source)
    tail = f" {adverbial}" if adverbial else ""
    if event.endswith("ing"):
        auxiliary = "are" if _plural(subject.split()[-1]) else "is"
        return f"{subject} {auxiliary} {event}{tail}", f"{subject} {event}{tail}"
    if event.endswith("s") and not event.endswith("ss") and event not in NOUN_EVENTS and not _plural(subject):
        return f"{subject} {event}{tail}", ""
    return None


def template_captions(annotations: Mapping[str, Mapping], *, seed: int = 0, per_clip: int = 2) -> list[str]:
    """Up to `per_clip` captions per annotated clip, e.g. "a man is speaking while wind blows in the distance"."""
    rng = random.Random(seed)
    captions: list[str] = []
    for clip in sorted(annotations):
        events = annotations[clip] or {}
        for _ in range(per_clip):
            parts = []
            for event, description in events.items():
                sources = [str(source) for source in (description or {}).get("source") or [] if str(source).strip()]
                adverbials = [
                    a.strip().lower()
                    for a in (description or {}).get("attr") or []
                    if a.strip().lower() in ADVERBIAL_ATTRIBUTES
                ]
                if not sources:
                    continue
                adverbial = rng.choice(adverbials) if adverbials and rng.random() < 0.5 else ""
                clause = _clauses(event, rng.choice(sources), adverbial)
                if clause:
                    parts.append(clause)
            if not parts:
                continue
            rng.shuffle(parts)
            parts = parts[: rng.randint(1, min(3, len(parts)))]
            captions.append(_join(parts, rng))
    return list(dict.fromkeys(captions))


def _join(parts: Sequence[tuple[str, str]], rng: random.Random) -> str:
    finite, participle = parts[0]
    text = participle if participle and rng.random() < 0.3 else finite
    for finite, participle in parts[1:]:
        if participle and rng.random() < 0.5:
            text += f" {rng.choice(PARTICIPLE_JOINERS)} {participle}"
        else:
            text += f" {rng.choice(FINITE_JOINERS)} {finite}"
    return text


def sample(captions: Sequence[str], count: int | None, *, seed: int = 0) -> list[str]:
    """At most `count` of the captions, drawn with the seed, in their original order (all of them when count is None).

    Caps what one source contributes, so that a large source does not set the detector's style alone, and
    keeps training within minutes on a busy CPU.
    """
    if count is None or len(captions) <= count:
        return list(captions)
    chosen = set(random.Random(seed).sample(range(len(captions)), count))
    return [caption for index, caption in enumerate(captions) if index in chosen]


def without_texts(captions: Sequence[str], excluded: Iterable[str]) -> list[str]:
    """The captions whose fingerprint is none of `excluded`'s."""
    excluded_hashes = {text_hash(text) for text in excluded}
    return [caption for caption in captions if text_hash(caption) not in excluded_hashes]


def strings_in(value) -> list[str]:
    """Every string anywhere in a JSON value: what a file to stay disjoint from could hold as a caption."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for key, item in value.items() for text in (*strings_in(key), *strings_in(item))]
    if isinstance(value, list | tuple):
        return [text for item in value for text in strings_in(item)]
    return []


# --- reading training sources and the files to stay disjoint from ------------------------------------------


def read_source(path: Path, *, seed: int = 0) -> tuple[list[str], str]:
    """(clean captions, what they are) of one training file, told apart by content.

    X-ACE caption graphs (a list of {"caption", "node", ...}): their whole sentences; AudioCaps-F annotations
    (clip -> event -> {"source", "attr"}): captions written from them; a FENSE-format JSON: its references;
    any other file: its non-empty lines.
    """
    if path.suffix.lower() != ".json":
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return lines, f"{path.name}:lines"
    content = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(content, list) and content and all(isinstance(i, dict) and "node" in i for i in content):
        return xace_sentences(content), f"{path.name}:whole sentences of the captions"
    if isinstance(content, dict) and content and all(_is_annotation(value) for value in content.values()):
        return template_captions(content, seed=seed), f"{path.name}:captions written from the annotations"
    from ...agreement.protocol import clips_from_fense_items

    clips = clips_from_fense_items(content)
    return [text for clip in clips for text in clip.references], f"{path.name}:references"


def _is_annotation(value) -> bool:
    return isinstance(value, dict) and all(isinstance(event, dict) and "source" in event for event in value.values())


def read_excluded(path: Path) -> list[str]:
    """Every text of a file the training data must stay disjoint from (any string of a JSON, any CSV cell, any line)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        return strings_in(json.loads(text))
    if path.suffix.lower() == ".csv":
        return [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    return text.splitlines()
