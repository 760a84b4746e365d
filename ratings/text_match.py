"""How alike an HI pair's two captions look to someone who reads instead of listening (plain Python, no Django).

A gold HI pair sets a clip's own reference against a caption written for another clip. A rater who does not
listen can still compare the two texts with everything else they were shown: the longer one, the one that
reads most like some other caption, the one nearest the middle of all of them. If the foreign caption differs
from the own one in any of these ways more often in one direction than the other, that comparison answers the
gold check without the sound. So the foreign caption is chosen to match the own one on each of them
(`TextProfile`), with the remaining differences' signs evened out over the campaign (`match_cost`): what is
left is a coin toss per feature.

The similarities are TF-IDF cosines over words: a stand-in for the sentence embeddings an attacker would use,
cheap enough to compute while pairs are made (tests/adversarial/test_foreign_choice.py measures the embedding
solvers against the result).
"""

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


@dataclass(frozen=True)
class TextProfile:
    """What a reader can compare between the two captions of a pair."""

    length: float  # words
    nearest: float  # highest similarity to one caption of the other clips
    central: float  # similarity to the mean of the other clips' captions


class ContextIndex:
    """The captions a rater of the pairs may be shown, by clip, to profile texts against.

    A rater of a gold pair is shown no other caption of its clip (the gold rule), so a text is profiled against
    the captions of the *other* clips only.
    """

    def __init__(self, texts_by_clip: dict[int, Sequence[str]], extra_texts: Sequence[str] = ()):
        documents = [text for texts in texts_by_clip.values() for text in texts] + list(extra_texts)
        frequency = Counter(word for text in documents for word in set(words(text)))
        count = max(1, len(documents))
        self._idf = {word: math.log((1 + count) / (1 + seen)) + 1 for word, seen in frequency.items()}
        self._vectors = {clip: [self.vector(text) for text in texts] for clip, texts in texts_by_clip.items()}
        self._sums = {clip: _sum(vectors) for clip, vectors in self._vectors.items()}
        self._total = _sum(self._sums.values())
        # |sum of every clip's vectors but one|, per left-out clip (None: none left out).
        self._centroid_norms = {None: _norm(self._total)}
        for clip, clip_sum in self._sums.items():
            rest = dict(self._total)
            for word, value in clip_sum.items():
                rest[word] -= value
            self._centroid_norms[clip] = _norm(rest)
        self._cache: dict[str, tuple[float, dict, float, dict]] = {}

    def vector(self, text: str) -> dict[str, float]:
        counts = Counter(words(text))
        vector = {word: count * self._idf.get(word, 1.0) for word, count in counts.items()}
        norm = _norm(vector) or 1.0
        return {word: value / norm for word, value in vector.items()}

    def profile(self, text: str, *, outside_clip: int | None) -> TextProfile:
        """The text's profile against the captions of every clip but `outside_clip`."""
        if text not in self._cache:
            vector = self.vector(text)
            nearest_by_clip = {
                clip: max((_dot(vector, other) for other in vectors), default=0.0)
                for clip, vectors in self._vectors.items()
            }
            toward_clip = {clip: _dot(vector, clip_sum) for clip, clip_sum in self._sums.items()}
            self._cache[text] = (float(len(words(text))), nearest_by_clip, _dot(vector, self._total), toward_clip)
        length, nearest_by_clip, toward_all, toward_clip = self._cache[text]
        nearest = max((value for clip, value in nearest_by_clip.items() if clip != outside_clip), default=0.0)
        toward = toward_all - toward_clip.get(outside_clip, 0.0)
        norm = self._centroid_norms.get(outside_clip, self._centroid_norms[None]) or 1.0
        return TextProfile(length=length, nearest=nearest, central=toward / norm)


def profile_scales(profiles: Sequence[TextProfile]) -> TextProfile:
    """The spread of each feature over `profiles` (standard deviation, at least a small floor), to weigh the
    features' differences alike."""

    def spread(values: list[float], floor: float) -> float:
        if len(values) < 2:
            return floor
        mean = sum(values) / len(values)
        return max(floor, math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1)))

    return TextProfile(
        length=spread([profile.length for profile in profiles], 1.0),
        nearest=spread([profile.nearest for profile in profiles], 0.01),
        central=spread([profile.central for profile in profiles], 0.01),
    )


# How much more a word of length difference weighs than a spread of either similarity: a reader compares lengths
# exactly, while the similarities here only approximate an attacker's embeddings.
FEATURE_WEIGHTS = TextProfile(length=3.0, nearest=1.0, central=1.0)


def differences(own: TextProfile, foreign: TextProfile, scales: TextProfile) -> tuple[float, float, float]:
    """Own minus foreign, each feature in units of its spread (positive: the own caption has more of it)."""
    return (
        (own.length - foreign.length) / scales.length,
        (own.nearest - foreign.nearest) / scales.nearest,
        (own.central - foreign.central) / scales.central,
    )


def match_cost(pair_differences: Sequence[float], running: Sequence[float]) -> float:
    """What choosing a foreign caption with `pair_differences` costs, given the differences summed over the pairs
    chosen so far (`running`): each difference (weighted), plus how far it pushes a running sum from zero.

    Small differences alone are not enough: if the foreign caption is a little shorter every time, "pick the
    longer one" still wins. The running term makes the signs even out over a campaign, so each feature read
    either way is a coin toss."""
    weights = (FEATURE_WEIGHTS.length, FEATURE_WEIGHTS.nearest, FEATURE_WEIGHTS.central)
    own_cost = sum(weight * abs(difference) for weight, difference in zip(weights, pair_differences, strict=True))
    drift = sum(
        abs(total + difference) - abs(total) for total, difference in zip(running, pair_differences, strict=True)
    )
    return own_cost + drift


def _dot(first: dict[str, float], second: dict[str, float]) -> float:
    if len(first) > len(second):
        first, second = second, first
    return sum(value * second.get(word, 0.0) for word, value in first.items())


def _norm(vector: dict[str, float]) -> float:
    return math.sqrt(sum(value * value for value in vector.values()))


def _sum(vectors) -> dict[str, float]:
    total: Counter = Counter()
    for vector in vectors:
        for word, value in vector.items():
            total[word] += value
    return dict(total)
