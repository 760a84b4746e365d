"""Synthetic fluency errors for training an error detector, as the FENSE study describes them.

FENSE (Zhou et al., 2022, section 3.2) found that machine captions go wrong in a few recurring ways
and trained its detector on correct captions corrupted by rules imitating them. The same five
kinds are made here from clean captions (the labels are the detector's outputs, in this order):

- ``add_tail``: the caption ends in a broken tail -- cut after a function word ("a train passes
  and a") or a clean caption followed by a dangling run-on tail ("... followed by a", "... in the");
- ``repeat_event``: an event phrase said twice ("a cat meows and a cat meows");
- ``repeat_adverb``: an adverbial said twice ("a sheep bleats nearby several times nearby");
- ``missing_conjunction``: the connective between two clauses removed ("people speaking a horn blows");
- ``missing_verb``: the verb after an auxiliary removed ("a gun is followed by a man speaking").

A sixth output, ``error``, is "any of them" (FENSE's last class, the one its penalty reads).

Clean examples are the captions themselves plus two kinds of clean variants, so that the
detector learns the errors rather than the style of its training captions: the first clause of a
caption ("a dog is barking" from "a dog is barking while a car passes"), and two clauses of
different captions joined by a connective ("a dog is barking while rain falls", "a door closes
followed by a man speaking"). Every corrupted example is made from one of these clean examples,
so clean and corrupted texts share their words, lengths and connectives.

Everything is driven by one `random.Random(seed)`: the same captions and seed give the same
examples in the same order. Plain Python, no model.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ERROR_TYPES = ("add_tail", "repeat_event", "repeat_adverb", "missing_conjunction", "missing_verb")
LABELS = (*ERROR_TYPES, "error")

#: Connectives between two clauses, longest first so "and then" wins over "and".
CONNECTIVES = (
    "followed by",
    "as well as",
    "and then",
    "along with",
    "while",
    "whilst",
    "before",
    "after",
    "then",
    "and",
    "as",
    "with",
    "but",
)
#: What a clause may be joined with when building clean variants (the second clause as written).
CLAUSE_JOINERS = ("and", "while", "as", "and then", "before", "after")
#: Broken tails a run-on caption stops on.
DANGLING_TAILS = (
    "and a",
    "and the",
    "followed by a",
    "followed by",
    "as a",
    "while a",
    "with a",
    "in the",
    "and",
    "and then a",
    "as the",
    "of a",
    "on the",
    "and someone",
)
#: Words a truncated caption may end on (the cut is right after one of them).
TRUNCATION_WORDS = frozenset(
    {"a", "an", "the", "and", "of", "in", "on", "with", "by", "to", "as", "while", "from", "into", "is", "are", "then"}
)
ADVERBIALS = (
    "in the background",
    "in the distance",
    "in the foreground",
    "nearby",
    "several times",
    "repeatedly",
    "loudly",
    "quietly",
    "continuously",
    "outside",
    "again",
    "in the wind",
    "at the same time",
    "over and over",
    "rapidly",
    "softly",
    "slowly",
    "far away",
)
AUXILIARIES = frozenset({"is", "are", "was", "were", "being", "be", "been"})
#: Words after an auxiliary that are not the verb to remove ("is a", "are being", "is very").
NOT_VERBS = frozenset(
    {
        "a",
        "an",
        "the",
        "very",
        "being",
        "not",
        "also",
        "still",
        "then",
        "in",
        "on",
        "at",
        "heard",
        "some",
        "there",
        "no",
    }
)
ARTICLE = re.compile(r"^(a|an|the|some|several|two|three|many|people|someone|somebody)\b")


@dataclass(frozen=True)
class Example:
    """One training text with its labels (one 0/1 per entry of LABELS) and where it came from."""

    text: str
    labels: tuple[int, ...]
    source_index: int  # index of the caption it was made from (group for splits)
    kind: str  # "clean", "first_clause", "joined" or the error type(s), "+"-joined


def normalise(text: str) -> str:
    """FENSE's text_preprocess (punctuation removed, lower case), then spaces collapsed (the tokenizer ignores them)."""
    return " ".join(re.sub(r"[^\w\s]", "", text).lower().split())


def split_clauses(text: str) -> tuple[list[str], list[str]]:
    """The caption's clauses and the connectives between them: "a dog barks and a cat meows" ->
    (["a dog barks", "a cat meows"], ["and"]). A connective only splits when a clause follows
    that starts like a noun phrase or an -ing form (so "with a" splits, "with joy" does not)."""
    words = text.split()
    clauses: list[list[str]] = [[]]
    connectives: list[str] = []
    position = 0
    while position < len(words):
        matched = None
        for connective in CONNECTIVES:
            parts = connective.split()
            if words[position : position + len(parts)] == parts and clauses[-1]:
                rest = " ".join(words[position + len(parts) :])
                if ARTICLE.match(rest) or (rest.split()[:1] and rest.split()[0].endswith("ing")):
                    matched = connective
                break
        if matched:
            connectives.append(matched)
            clauses.append([])
            position += len(matched.split())
        else:
            clauses[-1].append(words[position])
            position += 1
    texts = [" ".join(clause) for clause in clauses]
    if not texts[-1]:
        texts.pop()
        connectives = connectives[: len(texts) - 1]
    return texts, connectives


def participial(clause: str) -> str | None:
    """ "a dog is barking loudly" -> "a dog barking loudly" (for "... followed by <clause>")."""
    match = re.match(r"^(.+?) (is|are) (\w+ing)\b(.*)$", clause)
    if not match or not ARTICLE.match(match.group(1)):
        return None
    return f"{match.group(1)} {match.group(3)}{match.group(4)}"


# --- the five corruptions ----------------------------------------------------------------------


def add_tail(text: str, rng: random.Random) -> str | None:
    """Truncate after a function word, or append a dangling run-on tail."""
    words = text.split()
    cut_points = [i for i, word in enumerate(words[:-1]) if word in TRUNCATION_WORDS and i >= 2]
    if cut_points and rng.random() < 0.5:
        return " ".join(words[: rng.choice(cut_points) + 1])
    if rng.random() < 0.3:
        clauses, _ = split_clauses(text)
        other = rng.choice(clauses).split()
        if len(other) >= 3:
            # A run-on that restarts an event and stops mid-phrase: "... followed by a power".
            joiner = rng.choice(("followed by", "and", "as", "while"))
            return f"{text} {joiner} {' '.join(other[: rng.randint(2, len(other) - 1)])}"
    return f"{text} {rng.choice(DANGLING_TAILS)}"


def repeat_event(text: str, rng: random.Random) -> str | None:
    """Say an event phrase twice, joined by a connective."""
    clauses, _ = split_clauses(text)
    clause = rng.choice(clauses)
    if len(clause.split()) < 2:
        return None
    joiner = rng.choice(("and", "followed by", "and then", "as", "while", "then"))
    repeated = participial(clause) if joiner == "followed by" and rng.random() < 0.7 else None
    if rng.random() < 0.5:
        return f"{clause} {joiner} {repeated or clause}"
    return f"{text} {joiner} {repeated or clause}"


def repeat_adverb(text: str, rng: random.Random) -> str | None:
    """Repeat an adverbial the caption has (or insert one twice)."""
    present = [phrase for phrase in ADVERBIALS if re.search(rf"\b{phrase}\b", text)]
    if present:
        phrase = rng.choice(present)
        if rng.random() < 0.5:
            return f"{text} {phrase}"
        return (
            re.sub(rf"\b{phrase}\b", f"{phrase} {phrase}", text, count=1)
            if rng.random() < 0.5
            else f"{text} {rng.choice(ADVERBIALS)} {phrase}"
        )
    phrase = rng.choice(ADVERBIALS)
    words = text.split()
    if len(words) < 3:
        return None
    cut = rng.randint(2, len(words))
    return " ".join([*words[:cut], phrase, *words[cut:], phrase])


def missing_conjunction(text: str, rng: random.Random) -> str | None:
    """Drop the connective between two clauses."""
    clauses, connectives = split_clauses(text)
    if len(clauses) < 2:
        return None
    drop = rng.randrange(len(connectives))
    parts = [clauses[0]]
    for index, connective in enumerate(connectives):
        if index != drop:
            parts.append(connective)
        parts.append(clauses[index + 1])
    return " ".join(parts)


def missing_verb(text: str, rng: random.Random) -> str | None:
    """Drop the word after an auxiliary ("a horse is neighing followed by ..." -> "a horse is followed by ...")."""
    words = text.split()
    candidates = [
        i + 1
        for i, word in enumerate(words[:-1])
        if word in AUXILIARIES
        and words[i + 1] not in NOT_VERBS
        and (words[i + 1].endswith(("ing", "ed")) or len(words[i + 1]) > 3)
    ]
    if not candidates:
        return None
    position = rng.choice(candidates)
    # Also drop a following particle/adverb sometimes ("is running idle" -> "is idle" reads fluent).
    return " ".join(words[:position] + words[position + 1 :])


CORRUPTIONS = {
    "add_tail": add_tail,
    "repeat_event": repeat_event,
    "repeat_adverb": repeat_adverb,
    "missing_conjunction": missing_conjunction,
    "missing_verb": missing_verb,
}


# --- the data set ------------------------------------------------------------------------------


def clean_variants(captions: Sequence[str], rng: random.Random) -> list[tuple[str, int, str]]:
    """(text, caption index, kind) for every caption, its first clause and one joined pair per caption."""
    normalised = [normalise(caption) for caption in captions]
    variants: list[tuple[str, int, str]] = []
    clause_lists = [split_clauses(text)[0] for text in normalised]
    for index, text in enumerate(normalised):
        if not text:
            continue
        variants.append((text, index, "clean"))
        clauses = clause_lists[index]
        if len(clauses) > 1 and len(clauses[0].split()) >= 3:
            variants.append((clauses[0], index, "first_clause"))
    for index, clauses in enumerate(clause_lists):
        if not clauses or len(normalised) < 2:
            continue
        other_index = rng.randrange(len(normalised))
        if other_index == index or not clause_lists[other_index]:
            continue
        first, second = clauses[0], rng.choice(clause_lists[other_index])
        if len(first.split()) < 2 or len(second.split()) < 2:
            continue
        if rng.random() < 0.4 and participial(second):
            variants.append((f"{first} followed by {participial(second)}", index, "joined"))
        else:
            variants.append((f"{first} {rng.choice(CLAUSE_JOINERS)} {second}", index, "joined"))
    return variants


def _labels(kinds: Iterable[str]) -> tuple[int, ...]:
    kinds = set(kinds)
    flags = [1 if kind in kinds else 0 for kind in ERROR_TYPES]
    return (*flags, 1 if any(flags) else 0)


def synthesize(
    captions: Sequence[str], *, seed: int, corrupted_per_clean: float = 1.0, double_error_rate: float = 0.15
) -> list[Example]:
    """Clean variants of `captions` and corrupted copies of them, with labels.

    Each clean variant yields about `corrupted_per_clean` corrupted examples (an error type drawn
    uniformly among those that apply); a fraction `double_error_rate` of them get a second error.
    """
    rng = random.Random(seed)
    examples: list[Example] = []
    seen: set[str] = set()
    for text, index, kind in clean_variants(captions, rng):
        if text in seen:
            continue
        seen.add(text)
        examples.append(Example(text, _labels(()), index, kind))
        copies = int(corrupted_per_clean) + (1 if rng.random() < corrupted_per_clean % 1 else 0)
        for _ in range(copies):
            corrupted = _corrupt(text, rng, double_error_rate)
            if corrupted and corrupted[0] not in seen:
                seen.add(corrupted[0])
                examples.append(Example(corrupted[0], _labels(corrupted[1]), index, "+".join(corrupted[1])))
    return examples


def _corrupt(text: str, rng: random.Random, double_error_rate: float) -> tuple[str, list[str]] | None:
    kinds: list[str] = []
    current = text
    rounds = 2 if rng.random() < double_error_rate else 1
    for _ in range(rounds):
        order = list(CORRUPTIONS)
        rng.shuffle(order)
        for kind in order:
            if kind in kinds:
                continue
            result = CORRUPTIONS[kind](current, rng)
            if result and result != current:
                current, kinds = " ".join(result.split()), [*kinds, kind]
                break
    return (current, kinds) if kinds else None
