"""DATE (MECAT): tf-idf weighted Sentence-BERT similarity combined with cross-sample discriminability.

Per request i: S_sim = cosine between the tf-idf weighted sums of all-MiniLM-L6-v2 token embeddings of
the candidate and of a reference (idf over the texts of the evaluated batch); S_dis = 1 - r_i / N where
r_i is the rank of M[i, i] among M[i, j] (the references of i against every candidate j of the batch);
DATE_i = harmonic mean of S_sim and S_dis. The batch is the evaluated set, so the scorer is corpus-level.

Choices the paper leaves open (MECAT gives three synonymous references per caption type):
- several references: S_sim and M[i, j] are the mean over the references of i (the Sentence-BERT
  convention of the FENSE study);
- r_i counts the candidates that score strictly higher than the matched one (0 = best, so
  S_dis = 1 for the top rank and a batch of one gives S_dis = 1);
- the ranking only competes against candidates of *other* clips: other captions of the same clip in the
  batch (other systems) are not a failure of discriminability. With one candidate per clip this is
  exactly the paper's definition;
- tokens are the model's WordPiece tokens without [CLS]/[SEP]; a token's weight is its count in the
  text times a smoothed idf, log((1 + n) / (1 + df)) + 1, over the n distinct texts of the batch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .base import ScoreResult, ScoringContext, ScoringRequest
from .xace.embedding import local_model, model_unavailable_reason


def harmonic_mean(first: float, second: float) -> float:
    return 2 * first * second / (first + second) if first + second > 0 else 0.0


def token_embeddings(texts: list[str]) -> list[tuple[list[int], np.ndarray]]:
    """(token ids, contextual token vectors) per text, special tokens removed."""
    model = local_model()
    tokenizer = model.tokenizer
    outputs = model.encode(
        texts, output_value="token_embeddings", convert_to_numpy=False, show_progress_bar=False, batch_size=128
    )
    special = set(tokenizer.all_special_ids)
    result = []
    for text, vectors in zip(texts, outputs, strict=False):
        ids = tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
        vectors = vectors.detach().cpu().numpy() if hasattr(vectors, "detach") else np.asarray(vectors)
        length = min(len(ids), len(vectors))
        keep = [k for k in range(length) if ids[k] not in special]
        result.append(([ids[k] for k in keep], vectors[keep]))
    return result


def weighted_vectors(texts: list[str], embed=token_embeddings) -> dict[str, np.ndarray]:
    """v_T = sum over tokens t of T of tf(t, T) * idf(t) * E(t), idf over `texts` (unit length)."""
    encoded = embed(texts)
    document_frequency = Counter()
    for ids, _ in encoded:
        document_frequency.update(set(ids))
    count = len(texts)
    idf = {token: math.log((1 + count) / (1 + df)) + 1 for token, df in document_frequency.items()}
    vectors = {}
    for text, (ids, token_vectors) in zip(texts, encoded, strict=False):
        if not ids:
            vectors[text] = np.zeros(token_vectors.shape[1] if token_vectors.ndim == 2 else 384)
            continue
        # each occurrence carries its own contextual vector: summing them gives tf(t) * mean E(t)
        weights = np.array([idf[token] for token in ids])
        vector = (weights[:, None] * token_vectors).sum(axis=0)
        norm = np.linalg.norm(vector)
        vectors[text] = vector / norm if norm > 0 else vector
    return vectors


class DateScorer:
    metric_names = ("DATE",)
    version = "date-sbert-minilm-tfidf-meanrefs-1"
    needs = frozenset({"references"})
    corpus_level = True
    protocol_kind = "embedding"

    def __init__(self, embed=token_embeddings) -> None:
        self.embed = embed

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = model_unavailable_reason()
        return f"DATE: {reason}" if reason else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        if not requests:
            return {"DATE": []}
        for index, request in enumerate(requests):
            if not any(r.strip() for r in request.references):
                raise ValueError(f"DATE: request {index} ({request.candidate_id!r}) has no reference caption")
        texts = sorted({r.candidate for r in requests} | {ref for r in requests for ref in r.references if ref.strip()})
        vectors = weighted_vectors(texts, self.embed)
        candidates = np.stack([vectors[r.candidate] for r in requests])
        # matrix[i, j]: mean cosine of the references of request i against candidate j
        matrix = np.stack(
            [np.mean([candidates @ vectors[ref] for ref in r.references if ref.strip()], axis=0) for r in requests]
        )
        groups = [r.clip_key if r.clip_key is not None else ("refs", tuple(r.references)) for r in requests]
        results = []
        for i in range(len(requests)):
            competitors = [j for j in range(len(requests)) if j == i or groups[j] != groups[i]]
            matched = float(matrix[i, i])
            rank = sum(1 for j in competitors if matrix[i, j] > matched)
            s_dis = 1.0 - rank / len(competitors)
            s_sim = min(max(matched, 0.0), 1.0)
            results.append(
                ScoreResult(
                    harmonic_mean(s_sim, s_dis),
                    {"s_sim": round(s_sim, 6), "s_dis": round(s_dis, 6), "rank": rank, "n": len(competitors)},
                )
            )
        return {"DATE": results}
