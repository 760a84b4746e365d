"""DATE (MECAT) as the authors' released DATE.py computes it (protocols.md §4).

For one evaluated set of N items (item i = candidate c_i with its clip's references R_i):
1. the N·K reference sentences and the N candidate sentences are two corpora, each weighted on its own
   (soft tf-idf over input word embeddings, date_weighting.py);
2. M[i, j] = mean over k of cos(candidate_i, reference_k of item j) with the weighted embeddings,
   times candidate i's error-detector penalty (1 without a detector);
3. S_sim,i = M[i, i]; S_dis,i = 1 - (#{j: M[i,j] > M[i,i] + δ/2} + #{j: |M[i,j] - M[i,i]| <= δ/2}) / N
   (the band count includes j = i, so the best possible is 1 - 1/N: a generic caption that fits every
   clip falls inside many bands and scores low);
4. DATE_i = 2 S_sim,i S_dis,i / (S_sim,i + S_dis,i); the set's DATE is the mean over items.

Public API:
    date_item_scores(candidates, references, *, delta=0.1703, encoder=None, error_penalties=None)
        -> [{"date", "similarity", "discriminability"}, ...]   (TEAM.md contract 2; set score = mean of "date")
    date_computation(...)  the same with every intermediate (corpora, M), for checks and explanations
    DateScorer             the metric DATE of the scoring registry

Under the pairwise protocol (DateScorer, one batch holding every request of a dataset) each caption is
scored within the set of captions of its own author (ScoringRequest.author: a system, or "human" for
every human-written candidate): its own clip with the reference list the protocol gives it, every other
clip of the dataset with its full reference list (ScoringContext.clip_references) in the discriminability.
The reference corpus is the full reference lists of the dataset's clips (N·K sentences for N clips); the
candidate corpus is the author's captions, one per (clip, caption).

Encoder: all-MiniLM-L6-v2 (the authors use paraphrase-TinyBERT-L6-v2, not packaged here). No FENSE
error detector is applied by the scorer (penalty 1); both are named in the version string.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import sbert
from .base import DEFAULT_DATE_DELTA, ScoreResult, ScoringContext, ScoringRequest
from .date_weighting import DateEncoder, WeightedCorpus, embed_corpora, weighted_corpus

IMPLEMENTATION_REVISION = 2
_encoder: DateEncoder | None = None
_encoder_lock = threading.Lock()


def shared_encoder() -> DateEncoder:
    """The DATE encoder over the shared Sentence-BERT model (built once per process)."""
    global _encoder
    with _encoder_lock:
        if _encoder is None:
            _encoder = DateEncoder()
        return _encoder


@dataclass
class DateComputation:
    references: WeightedCorpus  # the reference corpus, weighted on its own
    candidates: WeightedCorpus  # the candidate corpus, weighted on its own
    matrix: np.ndarray  # M: rows = scored items, columns = clips (items) of the discriminability
    own_columns: list[int]  # the column of each row's own clip
    similarity: np.ndarray  # S_sim per row
    discriminability: np.ndarray  # S_dis per row
    date: np.ndarray  # DATE per row

    def item(self, row: int) -> dict:
        return {
            "date": float(self.date[row]),
            "similarity": float(self.similarity[row]),
            "discriminability": float(self.discriminability[row]),
        }


def harmonic_mean(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    total = first + second
    return np.divide(2 * first * second, total, out=np.zeros_like(total, dtype=np.float64), where=total != 0)


def discriminability(matrix: np.ndarray, own_columns: Sequence[int], delta: float) -> np.ndarray:
    """1 - (#{j: M[i,j] > M[i,i] + δ/2} + #{j: |M[i,j] - M[i,i]| <= δ/2}) / N per row."""
    own = matrix[np.arange(matrix.shape[0]), list(own_columns)][:, None]
    above = (matrix > own + delta / 2).sum(axis=1)
    band = (np.abs(matrix - own) <= delta / 2).sum(axis=1)
    return 1.0 - (above + band) / matrix.shape[1]


def _mean_similarity(candidate: np.ndarray, references: Sequence[str], corpus: WeightedCorpus) -> float:
    return float(np.mean([candidate @ corpus.embeddings[text] for text in references]))


def _date_core(
    *,
    rows: Sequence[tuple[str, Sequence[str], int]],
    candidates: WeightedCorpus,
    columns: Sequence[Sequence[str]],
    references: WeightedCorpus,
    delta: float,
    penalties: Sequence[float] | None,
) -> DateComputation:
    """rows: (candidate text, own reference list, own column); columns: each column's reference list;
    both corpora weighted and embedded."""
    distinct_references = list(references.embeddings)
    reference_matrix = np.stack([references.embeddings[text] for text in distinct_references])
    reference_row = {text: index for index, text in enumerate(distinct_references)}
    averaging = np.zeros((len(distinct_references), len(columns)))
    for column, texts in enumerate(columns):
        for text in texts:
            averaging[reference_row[text], column] += 1.0 / len(texts)
    candidate_matrix = np.stack([candidates.embeddings[text] for text, _, _ in rows])
    matrix = candidate_matrix @ reference_matrix.T @ averaging
    for index, (_text, own_references, own_column) in enumerate(rows):
        matrix[index, own_column] = _mean_similarity(candidate_matrix[index], own_references, references)
    if penalties is not None:
        matrix = matrix * np.asarray(penalties, dtype=np.float64)[:, None]
    own_columns = [own_column for _, _, own_column in rows]
    similarity = matrix[np.arange(len(rows)), own_columns]
    dis = discriminability(matrix, own_columns, delta)
    return DateComputation(references, candidates, matrix, own_columns, similarity, dis, harmonic_mean(similarity, dis))


def date_computation(
    candidates: list[str],
    references: list[list[str]],
    *,
    delta: float = DEFAULT_DATE_DELTA,
    encoder: DateEncoder | None = None,
    error_penalties: list[float] | None = None,
) -> DateComputation:
    """DATE of N items (candidate i against references[i]) with every intermediate value."""
    if len(candidates) != len(references):
        raise ValueError(f"DATE: {len(candidates)} candidates but {len(references)} reference lists")
    if error_penalties is not None and len(error_penalties) != len(candidates):
        raise ValueError(f"DATE: {len(error_penalties)} error penalties for {len(candidates)} candidates")
    for index, item_references in enumerate(references):
        if not item_references:
            raise ValueError(f"DATE: item {index} has no reference caption")
    encoder = encoder or shared_encoder()
    reference_corpus = weighted_corpus(encoder, [text for item in references for text in item], embed=False)
    candidate_corpus = weighted_corpus(encoder, candidates, embed=False)
    embed_corpora(encoder, [reference_corpus, candidate_corpus])
    rows = [
        (candidate, item, index) for index, (candidate, item) in enumerate(zip(candidates, references, strict=True))
    ]
    return _date_core(
        rows=rows,
        candidates=candidate_corpus,
        columns=references,
        references=reference_corpus,
        delta=delta,
        penalties=error_penalties,
    )


def date_item_scores(
    candidates: list[str],
    references: list[list[str]],
    *,
    delta: float = DEFAULT_DATE_DELTA,
    encoder=None,
    error_penalties: list[float] | None = None,
) -> list[dict]:
    """Per item {"date", "similarity", "discriminability"}; the set's DATE is the mean of "date".

    encoder: a DateEncoder (default: the shared all-MiniLM-L6-v2). error_penalties: the FENSE detector's
    multiplier per candidate (0.1 when its error probability > 0.9, else 1); None = no detector.
    """
    if not candidates:
        return []
    computation = date_computation(
        candidates, references, delta=delta, encoder=encoder, error_penalties=error_penalties
    )
    return [computation.item(row) for row in range(len(candidates))]


class DateScorer:
    """DATE under the pairwise protocol and for leaderboards: each caption within its author's set."""

    metric_names = ("DATE",)
    needs = frozenset({"references"})
    corpus_level = True
    corpus_batching = "single"  # the whole dataset in one batch; grouped by author here
    protocol_kind = "embedding"
    uses_gold_annotations = False

    def __init__(self, encoder: DateEncoder | None = None) -> None:
        self._encoder = encoder

    @property
    def encoder(self) -> DateEncoder:
        return self._encoder or shared_encoder()

    @property
    def version(self) -> str:
        return self.version_for(ScoringContext())

    def version_for(self, context: ScoringContext) -> str:
        encoder = self._encoder.name if self._encoder else sbert.model_version()
        return (
            f"date-mecat-inputemb-softtfidf-delta{context.dataset.date_delta:g}-detector-none-{encoder}"
            f"+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = sbert.model_unavailable_reason()
        return f"DATE: {reason}" if reason else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        if not requests:
            return {"DATE": []}
        for index, request in enumerate(requests):
            if not [text for text in request.references if text.strip()]:
                raise ValueError(f"DATE: request {index} ({request.candidate_id!r}) has no reference caption")
        clip_lists = _clip_reference_lists(requests, context)
        clips = list(clip_lists)
        column_of = {clip: column for column, clip in enumerate(clips)}
        columns = [clip_lists[clip] for clip in clips]
        encoder = self.encoder
        references = weighted_corpus(encoder, [text for texts in columns for text in texts], embed=False)
        own_lists = [_own_references(request) for request in requests]
        for request, own in zip(requests, own_lists, strict=True):
            unknown = [text for text in own if text not in references.weights]
            if unknown:
                raise ValueError(
                    f"DATE: reference {unknown[0]!r} of {request.candidate_id!r} is not one of its clip's references"
                )
        # one candidate corpus per author: its captions, one per (clip, caption); one model pass for all
        author_sets = []
        for author, members in _by_author(requests).items():
            keys = list(dict.fromkeys((_clip_of(requests[i]), requests[i].candidate, own_lists[i]) for i in members))
            corpus = list(dict.fromkeys((clip, candidate) for clip, candidate, _ in keys))
            weighted = weighted_corpus(encoder, [candidate for _, candidate in corpus], embed=False)
            author_sets.append((author, members, keys, len(corpus), weighted))
        embed_corpora(encoder, [references, *(weighted for *_, weighted in author_sets)])
        delta = context.dataset.date_delta
        results: list[ScoreResult | None] = [None] * len(requests)
        for author, members, keys, corpus_size, weighted in author_sets:
            computation = _date_core(
                rows=[(candidate, refs, column_of[clip]) for clip, candidate, refs in keys],
                candidates=weighted,
                columns=columns,
                references=references,
                delta=delta,
                penalties=None,
            )
            row_of = {key: row for row, key in enumerate(keys)}
            for i in members:
                item = computation.item(row_of[(_clip_of(requests[i]), requests[i].candidate, own_lists[i])])
                details = {
                    "similarity": round(item["similarity"], 6),
                    "discriminability": round(item["discriminability"], 6),
                    "clips": len(columns),
                    "author_set": author,
                    "author_captions": corpus_size,
                }
                results[i] = ScoreResult(item["date"], details)
        return {"DATE": results}


def _own_references(request: ScoringRequest) -> tuple[str, ...]:
    return tuple(text for text in request.references if text.strip())


def _clip_of(request: ScoringRequest):
    return request.clip_key if request.clip_key is not None else ("references", _own_references(request))


def _clip_reference_lists(requests: Sequence[ScoringRequest], context: ScoringContext) -> dict:
    """Every clip of the dataset with its full reference list: the context's clips (the Django side gives the
    whole dataset), then any clip of the batch the context lacks, with the longest list a request of it
    carries (the all-references batch carries full lists)."""
    lists: dict = {clip: tuple(texts) for clip, texts in context.clip_references.items() if texts}
    carried: dict = {}
    for request in requests:
        clip = _clip_of(request)
        if clip not in lists and len(_own_references(request)) > len(carried.get(clip, ())):
            carried[clip] = _own_references(request)
    return {**lists, **carried}


def _by_author(requests: Sequence[ScoringRequest]) -> dict[str | None, list[int]]:
    groups: dict[str | None, list[int]] = {}
    for index, request in enumerate(requests):
        groups.setdefault(request.author, []).append(index)
    return groups
