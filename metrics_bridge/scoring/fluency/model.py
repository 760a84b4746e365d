"""The fluency error detector trained here: the packaged all-MiniLM-L6-v2 with its top layer(s) fine-tuned.

The lower layers are the packaged model's, shared with every other Sentence-BERT user in the
process (`sbert.load_model()`); only the fine-tuned top layer(s) and a linear head are stored,
in one safetensors file (float16, a few MB) whose metadata says how it was made. A caption is
FENSE-preprocessed (no punctuation, lower case, at most 64 word pieces), run through the frozen
layers, then through the trained layer(s); the head reads the [CLS] position (as FENSE's
BERTFlatClassifier does) and gives one sigmoid per label of `synthesis.LABELS`; the last one
("error") is the probability FENSE's penalty reads.

Imports torch lazily (importing this module is cheap).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import sbert
from .synthesis import LABELS, normalise

MAX_TOKENS = 64
FORMAT = "metrics_bridge-fluency-detector-1"


def _torch():
    import torch

    return torch


def build_head(config, *, trained_layers: int, num_labels: int):
    """Top BERT layer(s) + dropout + linear head; forward(hidden, attention_mask) -> logits (batch, labels)."""
    torch = _torch()
    from transformers.models.bert.modeling_bert import BertLayer

    layer_config = type(config).from_dict(config.to_dict())
    layer_config._attn_implementation = "eager"  # plain additive mask; same numbers on every machine

    class DetectorHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(BertLayer(layer_config) for _ in range(trained_layers))
            self.dropout = torch.nn.Dropout(config.hidden_dropout_prob)
            self.classifier = torch.nn.Linear(config.hidden_size, num_labels)

        def forward(self, hidden, attention_mask):
            additive = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
            for layer in self.layers:
                hidden = layer(hidden, attention_mask=additive)[0]
            return self.classifier(self.dropout(hidden[:, 0, :]))

    return DetectorHead()


def encoder_parts():
    """(BertModel, tokenizer) of the shared packaged Sentence-BERT model."""
    model = sbert.load_model()
    transformer = model[0]
    return transformer.auto_model, transformer.tokenizer


def frozen_states(texts: Sequence[str], *, frozen_layers: int, batch_size: int = 64):
    """Yield (hidden states after `frozen_layers` layers, attention mask) per batch of FENSE-preprocessed texts."""
    torch = _torch()
    bert, tokenizer = encoder_parts()
    bert.eval()
    for start in range(0, len(texts), batch_size):
        chunk = [normalise(text) for text in texts[start : start + batch_size]]
        with sbert.tokenizer_lock:
            batch = tokenizer(chunk, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        with torch.no_grad():
            outputs = bert(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                token_type_ids=batch.get("token_type_ids"),
                output_hidden_states=True,
            )
        yield outputs.hidden_states[frozen_layers], batch["attention_mask"]


class MiniLMErrorDetector:
    """The detector stored in a safetensors file made by `train_fluency_detector`."""

    def __init__(self, path: Path) -> None:
        from safetensors import safe_open

        torch = _torch()
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            weights = {key: handle.get_tensor(key).float() for key in handle.keys()}
        if metadata.get("format") != FORMAT:
            raise RuntimeError(f"{path}: not a fluency detector of this product (format {metadata.get('format')!r})")
        self.metadata = metadata
        self.labels = tuple(json.loads(metadata["labels"]))
        self.trained_layers = int(metadata["trained_layers"])
        bert, _ = encoder_parts()
        self.frozen_layers = bert.config.num_hidden_layers - self.trained_layers
        self.head = build_head(bert.config, trained_layers=self.trained_layers, num_labels=len(self.labels))
        self.head.load_state_dict(weights, strict=True)
        self.head.eval()
        self._torch = torch

    def error_probabilities(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Probability of the last ("error") label for each text."""
        return self.label_probabilities(texts, batch_size)[:, -1] if len(texts) else np.zeros(0)

    def label_probabilities(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), len(labels)) sigmoid outputs."""
        rows = []
        for hidden, mask in frozen_states(list(texts), frozen_layers=self.frozen_layers, batch_size=batch_size):
            with self._torch.no_grad():
                rows.append(self._torch.sigmoid(self.head(hidden, mask)).numpy())
        return np.concatenate(rows) if rows else np.zeros((0, len(self.labels)))


def save_detector(head, path: Path, *, metadata: dict[str, str]) -> None:
    """Store the head's weights as float16 safetensors with the metadata (strings) that describe it."""
    from safetensors.torch import save_file

    tensors = {key: value.detach().to(_torch().float16).contiguous() for key, value in head.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"format": FORMAT, "labels": json.dumps(list(LABELS)), **metadata})
