"""Attack: answer the gold HI pairs by comparing each pair's two captions with everything else the rater received.

The gold rule (tests/adversarial/test_gold_by_text.py) keeps a gold pair's clip out of its rater's other items,
so neither caption of the pair has a sibling among the rater's texts. What is left to a reader is how each of
the two captions sits among those texts: the longer one, the one with the nearest other caption (Sentence-BERT
cosine), the one nearest the middle of them all, the one with rarer words; each read either way. Pair
generation chooses the foreign caption to match the own one on these (ratings/text_match.py, with word counts
and TF-IDF cosines standing in for the embeddings); here every such solver, run on what the rater API gives each
rater of the demo study, must stay within chance + 10 points.

The controls show the solvers can win on the same gold answers: with the foreign caption drawn at random among
the same donor captions, as before the match (the expected accuracy over the draws), and with it chosen
naively as the donor caption least like the own reference (a "clearly wrong" caption), some of them answer
above chance + 10.
"""

import functools
import io
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from corpus.models import Caption
from metrics_bridge.scoring import sbert
from ratings.models import AssignmentItem, Campaign
from ratings.text_match import words
from tests.ratings.rater_api import api_rows, rater_client

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(sbert.model_unavailable_reason() is not None, reason="SBERT")]

_cache: dict[str, np.ndarray] = {}


def encode(texts: list[str]) -> np.ndarray:
    missing = [text for text in dict.fromkeys(texts) if text not in _cache]
    if missing:
        vectors = sbert.load_model().encode(missing, normalize_embeddings=True, batch_size=64)
        for text, row in zip(missing, vectors, strict=True):
            _cache[text] = np.asarray(row, dtype=np.float32)
    return np.stack([_cache[text] for text in texts])


@dataclass
class GoldAnswer:
    own: str  # the clip's own reference: the known answer
    foreign: str  # the foreign caption the rater was shown
    others: tuple[str, ...]  # every other caption text the rater received, in every study
    pool: list[str]  # the donor captions the foreign one could have been


# --- The solvers: each says how strongly it prefers a text as the own caption (higher: own) ------------------
# A rater's other texts are the same for every caption a solver weighs against them (the own one, the foreign
# one and each donor caption of the controls): what they give (their vectors, centroid, word counts) is worked
# out once per rater's texts, and each solver's value once per caption, so the controls' thousands of donor
# captions cost a lookup each instead of the same sums again. Same arithmetic on the same arrays: same values.


@functools.cache
def _others_matrix(others: tuple[str, ...]) -> np.ndarray:
    return encode(list(others))


@functools.cache
def _others_centroid(others: tuple[str, ...]) -> tuple[np.ndarray, float]:
    centroid = _others_matrix(others).mean(axis=0)
    return centroid, np.linalg.norm(centroid) or 1.0


@functools.cache
def _others_frequency(others: tuple[str, ...]) -> Counter:
    return Counter(word for other in others for word in set(words(other)))


def _nearest(text: str, others: tuple[str, ...]) -> float:
    return float((encode([text]) @ _others_matrix(others).T).max())


def _central(text: str, others: tuple[str, ...]) -> float:
    centroid, norm = _others_centroid(others)
    return float(encode([text])[0] @ centroid / norm)


def _specific(text: str, others: tuple[str, ...]) -> float:
    """Mean rarity of the text's words among the rater's texts (a more specific caption names rarer things)."""
    frequency = _others_frequency(others)
    tokens = words(text) or [""]
    return sum(math.log((1 + len(others)) / (1 + frequency[token])) for token in tokens) / len(tokens)


FEATURES: dict[str, Callable[[str, tuple[str, ...]], float]] = {
    "similarity (nearest other caption)": functools.cache(_nearest),
    "length (words)": functools.cache(lambda text, others: float(len(words(text)))),
    "centroid of the rater's texts": functools.cache(_central),
    "specificity (rare words)": functools.cache(_specific),
}


def _accuracy(answers: list[GoldAnswer], feature, *, reverse: bool, foreign_of=None) -> float:
    """Share of gold answers the solver gets right: it picks the caption with the higher feature (lower when
    `reverse`); a tie is a coin toss (half right)."""
    right = 0.0
    for answer in answers:
        foreign = foreign_of(answer) if foreign_of else answer.foreign
        own_value, foreign_value = feature(answer.own, answer.others), feature(foreign, answer.others)
        if math.isclose(own_value, foreign_value, abs_tol=1e-9):
            right += 0.5
        else:
            right += (own_value > foreign_value) != reverse
    return right / len(answers)


def _random_choice_accuracy(answers: list[GoldAnswer], feature, *, reverse: bool) -> float:
    """The expected accuracy when the foreign caption is any of the donor captions at random (no match)."""
    total = 0.0
    for answer in answers:
        own_value = feature(answer.own, answer.others)
        outcomes = []
        for candidate in answer.pool:
            value = feature(candidate, answer.others)
            outcomes.append(0.5 if math.isclose(own_value, value, abs_tol=1e-9) else (own_value > value) != reverse)
        total += sum(outcomes) / len(outcomes)
    return total / len(answers)


# --- What each rater received --------------------------------------------------------------------------------


def _gold_answers() -> list[GoldAnswer]:
    pairwise = Campaign.objects.get(name="demo-pairwise")
    donor_clips = Caption.objects.filter(pair_artefact=True, clip__dataset=pairwise.dataset).values(
        "copied_from__clip_id"
    )
    donor_texts = sorted(
        set(
            Caption.objects.corpus()
            .filter(role=Caption.Role.REFERENCE, clip_id__in=donor_clips)
            .values_list("text", flat=True)
        )
    )
    answers = []
    rater_ids = pairwise.assignments.values_list("rater_id", flat=True)
    for rater in get_user_model().objects.filter(pk__in=rater_ids).order_by("username"):
        rows = api_rows(rater_client(rater), "/api/assignment-items/")  # what the rater receives, nothing else
        tokens = [row["token"] for row in rows]
        # The answer key, server side only: the gold items' own reference (the known answer is caption a).
        key = dict(
            AssignmentItem.objects.filter(token__in=tokens, pair__gold_choice="a").values_list(
                "token", "pair__caption_a__text"
            )
        )
        for row in rows:
            if row["token"] not in key:
                continue
            own = key[row["token"]]
            (foreign,) = [caption["text"] for caption in row["captions"] if caption["text"] != own]
            others = tuple(caption["text"] for other in rows if other is not row for caption in other["captions"])
            pool = [text for text in donor_texts if text.strip().casefold() != own.strip().casefold()]
            answers.append(GoldAnswer(own=own, foreign=foreign, others=others, pool=pool))
    return answers


def _build_demo() -> list[GoldAnswer]:
    call_command("demo", "--no-metrics", stdout=io.StringIO())
    return _gold_answers()


def _table(answers, foreign_of=None) -> dict[str, float]:
    return {
        f"{name}{', reversed' if reverse else ''}": _accuracy(answers, feature, reverse=reverse, foreign_of=foreign_of)
        for name, feature in FEATURES.items()
        for reverse in (False, True)
    }


def test_no_text_only_solver_beats_chance_on_the_demo_gold_pairs(media_root):
    answers = _build_demo()
    assert len(answers) >= 150 and len({answer.own for answer in answers}) >= 30, "the demo's size"
    chosen = _table(answers)
    random_choice = {
        f"{name}{', reversed' if reverse else ''}": _random_choice_accuracy(answers, feature, reverse=reverse)
        for name, feature in FEATURES.items()
        for reverse in (False, True)
    }
    print(f"\n{len(answers)} gold answers ({len({answer.own for answer in answers})} gold pairs)")
    print(f"{'solver':45} {'matched':>8} {'random':>8}")
    for name, accuracy in chosen.items():
        print(f"{name:45} {accuracy:8.0%} {random_choice[name]:8.0%}")
    beaten = {name: accuracy for name, accuracy in chosen.items() if accuracy > 0.60}
    assert not beaten, f"the texts give gold answers away: {beaten}"
    # The control, as before the match: a foreign caption drawn at random among the same donor captions.
    assert max(random_choice.values()) > 0.60, "the control: an unmatched choice gives answers away"

    # The control: the foreign caption chosen naively among the same donor captions, the one least like the
    # own reference (by Sentence-BERT), as one picks a clearly wrong caption. The solvers see that.
    def least_alike(answer: GoldAnswer) -> str:
        return answer.pool[int(np.argmin(encode(answer.pool) @ encode([answer.own])[0]))]

    naive = _table(answers, foreign_of=least_alike)
    print("naive choice (least like the own reference): " + ", ".join(f"{k} {v:.0%}" for k, v in naive.items()))
    assert max(naive.values()) >= 0.75, "the control: a naive choice of the foreign caption gives answers away"
