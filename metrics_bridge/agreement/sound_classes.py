"""The sound class of an event's source: the class whose phrase is nearest ("the sound of cicadas" is nearest to
"the sound of insect"). Plain Python (no Django).

Sentence-BERT alone puts a hypernym far from its hyponyms ("insects" / "cicadas": cosine 0.21), yet among a
few dozen class names the nearest one is usually right (cicadas, crickets and bees are nearest to "insect"):
the relation is read from the ranking, not from the cosine. No copy of AudioSet's ontology is at hand offline;
the class names follow its sound-source classes, and which class a source belongs to is left to the model, so
the list names classes, not their members.

A class whose sources make many different sounds (people speak, laugh, cough; objects knock, scrape, fall) says
nothing about whether two events are one sound: GENERIC_CLASSES are those in which most pairs of half "a" of
the labelled event-name pairs are different sounds (chosen by event_similarity_tuning.choose_generic_classes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

SOUND_CLASSES = (
    "human voice",
    "dog",
    "cat",
    "bird",
    "insect",
    "frog",
    "farm animal",
    "wind",
    "water",
    "rain",
    "thunder",
    "road vehicle",
    "boat",
    "aircraft",
    "train",
    "horn",
    "siren",
    "gun",
    "fireworks",
    "clock",
    "bell",
    "machine",
    "tool",
    "object",
    "door",
    "plant",
    "footsteps",
    "music",
    "steam",
    "cooking",
    "electronic device",
    "keyboard",
)
#: classes in which most pairs of half "a" are different sounds: sharing one of them says nothing
GENERIC_CLASSES = frozenset({"human voice", "music", "object", "road vehicle"})


def class_phrase(text: str) -> str:
    """The phrase embedded for a source or a class name ("the sound of cicadas")."""
    return "the sound of " + " ".join(text.lower().split())


def class_phrases(sources: Sequence[str]) -> set[str]:
    """Every phrase sound_class needs embedded for these sources."""
    return {class_phrase(text) for text in (*SOUND_CLASSES, *sources) if text.strip()}


def sound_class(source: str, vectors: Mapping[str, np.ndarray]) -> str | None:
    """The class whose phrase is nearest to the source's (None for an empty source); `vectors` holds unit
    vectors of class_phrases()."""
    if not source.strip():
        return None
    names = np.stack([vectors[class_phrase(name)] for name in SOUND_CLASSES])
    return SOUND_CLASSES[int(np.argmax(names @ vectors[class_phrase(source)]))]


def shared_class(first: Sequence[str], second: Sequence[str], vectors: Mapping[str, np.ndarray]) -> str | None:
    """The sound class both events' first sources belong to, unless it is generic (None otherwise)."""
    if not first or not second:
        return None
    kind = sound_class(first[0], vectors)
    if kind is None or kind in GENERIC_CLASSES or kind != sound_class(second[0], vectors):
        return None
    return kind
