"""FENSE = Sentence-BERT similarity with FENSE's fluency-error penalty -- only with an error detector.

FENSE (Zhou et al., 2022) multiplies a candidate's Sentence-BERT score by (1 - 0.9) when its error
detector gives the candidate an error probability above 0.9. Without the detector the number is
plain SBERT, which this product reports as SBERT, never as FENSE: FENSE is unavailable until
the scoring context names a local checkpoint (`MetricResources.fense_error_detector_path`, from the
FENSE_ERROR_DETECTOR_PATH setting).

Checkpoint format: FENSE's own error-detector file (e.g. echecker_clotho_audiocaps_base.ckpt), a
torch dict {"model_type": <HF name or local dir>, "num_classes": int, "state_dict": ...} for a BERT
encoder + dropout + linear head on [CLS] (FENSE's BERTFlatClassifier); the last output is the
"any error" probability (sigmoid). The encoder's config and tokenizer are read offline from
`MetricResources.fense_error_detector_base` (FENSE_ERROR_DETECTOR_BASE, a local folder) if set, else
from `model_type` (a local folder or the Hugging Face cache, never the network). Preprocessing as FENSE:
strip punctuation, lower-case,
max 64 tokens.

Differences from FENSE's release: Sentence-BERT here is all-MiniLM-L6-v2 (FENSE used
paraphrase-TinyBERT-L6-v2), named in the version string. The penalty path is tested with a tiny
hand-built checkpoint, not with FENSE's released detector (not available offline here).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import sbert
from .base import ScoreResult, ScoringContext, ScoringRequest

ERROR_THRESHOLD = 0.9
PENALTY = 0.9
MAX_TOKENS = 64
IMPLEMENTATION_REVISION = 1
NOT_CONFIGURED = (
    "FENSE: no fluency error detector configured (set FENSE_ERROR_DETECTOR_PATH to a local FENSE "
    "error-detector checkpoint); without it the score would be plain SBERT"
)

_detectors: dict[str, object] = {}
_detector_lock = threading.Lock()


def detector_path(context: ScoringContext | None) -> Path | None:
    value = (context.resources.fense_error_detector_path or "").strip() if context else ""
    return Path(value) if value else None


def detector_unavailable_reason(context: ScoringContext | None) -> str | None:
    path = detector_path(context)
    if path is None:
        return NOT_CONFIGURED
    if not path.is_file():
        return f"FENSE: FENSE_ERROR_DETECTOR_PATH={path} is not a file"
    reason = sbert.model_unavailable_reason()
    return f"FENSE: {reason}" if reason else None


def _fingerprint(path: Path) -> str:
    """Name, size and a hash of the first MiB: changes when the checkpoint does, without reading it all."""
    with path.open("rb") as handle:
        head = hashlib.sha256(handle.read(1 << 20)).hexdigest()[:12]
    return f"{path.name}:{path.stat().st_size}:{head}"


def preprocess(text: str) -> str:
    """FENSE's text_preprocess: drop punctuation, lower-case."""
    return re.sub(r"[^\w\s]", "", text).lower()


class ErrorDetector:
    """FENSE's BERTFlatClassifier loaded from a local checkpoint, on the CPU, in eval mode."""

    def __init__(self, path: Path, base: str | None = None) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        state = torch.load(path, map_location="cpu", weights_only=True)
        base = (base or "").strip() or state["model_type"]
        config = AutoConfig.from_pretrained(base, local_files_only=True)
        self.tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)

        class FlatClassifier(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.encoder = AutoModel.from_config(config)
                self.dropout = torch.nn.Dropout(config.hidden_dropout_prob)
                self.clf = torch.nn.Linear(config.hidden_size, int(state["num_classes"]))

            def forward(self, input_ids, attention_mask, token_type_ids=None):
                outputs = self.encoder(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                )
                return self.clf(self.dropout(outputs.last_hidden_state[:, 0, :]))

        self.model = FlatClassifier()
        weights = {key: value for key, value in state["state_dict"].items() if "position_ids" not in key}
        missing, unexpected = self.model.load_state_dict(weights, strict=False)
        missing = [key for key in missing if "position_ids" not in key]
        if missing or unexpected:
            raise RuntimeError(
                f"{path}: checkpoint does not fit FENSE's classifier "
                f"(missing {missing[:5]}, unexpected {unexpected[:5]})"
            )
        self.model.eval()
        self._torch = torch

    def error_probabilities(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Probability of the last ("any error") class for each text."""
        values = []
        for start in range(0, len(texts), batch_size):
            chunk = [preprocess(text) for text in texts[start : start + batch_size]]
            batch = self.tokenizer(chunk, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
            with self._torch.no_grad():
                logits = self.model(
                    **{k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
                )
            values.append(self._torch.sigmoid(logits)[:, -1].numpy())
        return np.concatenate(values) if values else np.zeros(0)


def load_detector(path: Path, base: str | None = None) -> ErrorDetector:
    key = f"{_fingerprint(path)}:{base or ''}"
    with _detector_lock:
        if key not in _detectors:
            _detectors[key] = ErrorDetector(path, base)
        return _detectors[key]


class FenseScorer:
    metric_names = ("FENSE",)
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "embedding"

    @property
    def version(self) -> str:
        return self.version_for(ScoringContext())

    def version_for(self, context: ScoringContext) -> str:
        path = detector_path(context)
        detector = _fingerprint(path) if path and path.is_file() else "none"
        return (
            f"fense-sbert-{sbert.model_version()}-echecker-{detector}-threshold{ERROR_THRESHOLD}-penalty{PENALTY}"
            f"+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return detector_unavailable_reason(context)

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        reason = detector_unavailable_reason(context)
        if reason:
            raise RuntimeError(reason)
        similarities = sbert.mean_reference_similarity(requests)
        candidates = list(dict.fromkeys(request.candidate for request in requests))
        detector = load_detector(detector_path(context), context.resources.fense_error_detector_base)
        probability = dict(zip(candidates, detector.error_probabilities(candidates), strict=True))
        results = []
        for request, similarity in zip(requests, similarities, strict=True):
            error_probability = float(probability[request.candidate])
            penalized = error_probability > ERROR_THRESHOLD
            value = similarity * (1 - PENALTY) if penalized else similarity
            details = {"sbert": similarity, "error_probability": error_probability, "penalized": penalized}
            results.append(ScoreResult(value, details))
        return {"FENSE": results}
