"""FENSE's own error-detector checkpoint (e.g. echecker_clotho_audiocaps_base.ckpt), loaded from a local file.

Format: a torch dict {"model_type": <HF name or local dir>, "num_classes": int, "state_dict": ...} for a
BERT encoder + dropout + linear head on [CLS] (FENSE's BERTFlatClassifier); the last output is the
"any error" probability (sigmoid). The encoder's config and tokenizer are read offline from
`base` (MetricResources.fense_error_detector_base, the FENSE_ERROR_DETECTOR_BASE setting: a local
folder) if set, else from `model_type` (a local folder or the
Hugging Face cache, never the network). Preprocessing as FENSE: strip punctuation, lower-case, at
most 64 tokens. Tested with a tiny hand-built checkpoint; FENSE's released file cannot be
downloaded here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .synthesis import normalise

MAX_TOKENS = 64


class FenseCheckpointDetector:
    """FENSE's BERTFlatClassifier loaded from a local checkpoint, on the CPU, in eval mode."""

    def __init__(self, path: Path, base: str | None = None) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        state = torch.load(path, map_location="cpu", weights_only=True)
        base = (base or "").strip() or state["model_type"]
        config = AutoConfig.from_pretrained(base, local_files_only=True)
        self.tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
        self._tokenizer_lock = threading.Lock()

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
            chunk = [normalise(text) for text in texts[start : start + batch_size]]
            with self._tokenizer_lock:  # a fast tokenizer is not thread-safe (see sbert.tokenizer_lock)
                batch = self.tokenizer(chunk, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
            inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
            with self._torch.no_grad():
                logits = self.model(**inputs)
            values.append(self._torch.sigmoid(logits)[:, -1].numpy())
        return np.concatenate(values) if values else np.zeros(0)
