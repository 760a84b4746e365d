"""Train the fluency error detector on synthesized errors (CPU, minutes). Deterministic for a seed.

    result = train_detector(captions, out_path=Path("detector.safetensors"), seed=0)

Steps: synthesize examples from the clean captions (`synthesis.synthesize`), hold out 10 % of the
captions (grouped: a caption's clean and corrupted variants stay together) to report accuracy on
unseen synthetic data, run every text once through the frozen lower layers of the packaged
all-MiniLM-L6-v2, then train the top layer(s) + head with AdamW on the multi-label loss for a fixed
number of epochs (no early stopping on anything), and store the weights with `model.save_detector`.

Reproducibility: Python's, NumPy's and torch's generators are seeded, torch runs deterministic
algorithms with a fixed thread count (`threads`); the same captions, seed, settings and library
versions give the same file (the training test checks two tiny runs are identical).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...agreement.fingerprints import write_training_texts
from .. import sbert
from .model import build_head, encoder_parts, frozen_states, save_detector
from .synthesis import LABELS, synthesize

TRAINING_REVISION = 1


@dataclass(frozen=True)
class TrainingSettings:
    seed: int = 0
    trained_layers: int = 1
    epochs: int = 4
    batch_size: int = 32
    learning_rate: float = 1e-4
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    corrupted_per_clean: float = 1.0
    validation_fraction: float = 0.1
    threads: int = 2
    max_captions: int | None = None  # smoke runs


@dataclass
class TrainingResult:
    path: str
    examples: int
    training_examples: int
    validation_examples: int
    validation_accuracy: float
    validation_error_recall: float
    validation_clean_specificity: float
    seconds: float
    metadata: dict


def _seed_everything(seed: int, threads: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def _grouped_split(examples, fraction: float, seed: int) -> tuple[list, list]:
    groups = sorted({example.source_index for example in examples})
    random.Random(seed + 1).shuffle(groups)
    held_out = set(groups[: int(round(len(groups) * fraction))])
    train = [example for example in examples if example.source_index not in held_out]
    validation = [example for example in examples if example.source_index in held_out]
    return train, validation


def _states(texts: Sequence[str], frozen_layers: int) -> list[tuple]:
    """Per text: its frozen hidden states (length, hidden) without padding."""
    rows = []
    for hidden, mask in frozen_states(texts, frozen_layers=frozen_layers):
        for index in range(hidden.shape[0]):
            length = int(mask[index].sum())
            rows.append(hidden[index, :length].clone())
    return rows


def _collate(states: list, indexes: Sequence[int]):
    import torch

    length = max(states[i].shape[0] for i in indexes)
    hidden = torch.zeros(len(indexes), length, states[indexes[0]].shape[1])
    mask = torch.zeros(len(indexes), length, dtype=torch.long)
    for row, index in enumerate(indexes):
        size = states[index].shape[0]
        hidden[row, :size] = states[index]
        mask[row, :size] = 1
    return hidden, mask


def _predict(head, states: list, batch_size: int) -> np.ndarray:
    import torch

    head.eval()
    rows = []
    with torch.no_grad():
        for start in range(0, len(states), batch_size):
            hidden, mask = _collate(states, range(start, min(start + batch_size, len(states))))
            rows.append(torch.sigmoid(head(hidden, mask)).numpy())
    return np.concatenate(rows) if rows else np.zeros((0, len(LABELS)))


def captions_digest(captions: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(captions)).encode("utf-8")).hexdigest()


def train_detector(
    captions: Sequence[str],
    *,
    out_path: Path,
    settings: TrainingSettings | None = None,
    data_description: str = "",
    log: Callable[[str], None] = lambda message: None,
) -> TrainingResult:
    import torch

    settings = settings or TrainingSettings()
    started = time.monotonic()
    _seed_everything(settings.seed, settings.threads)
    captions = list(captions)[: settings.max_captions] if settings.max_captions else list(captions)
    examples = synthesize(captions, seed=settings.seed, corrupted_per_clean=settings.corrupted_per_clean)
    train, validation = _grouped_split(examples, settings.validation_fraction, settings.seed)
    log(
        f"{len(examples)} examples from {len(captions)} captions ({sum(e.labels[-1] for e in examples)} with errors); "
        f"{len(train)} for training, {len(validation)} held out"
    )

    bert, _ = encoder_parts()
    frozen_layers = bert.config.num_hidden_layers - settings.trained_layers
    train_states = _states([example.text for example in train], frozen_layers)
    validation_states = _states([example.text for example in validation], frozen_layers)
    train_labels = torch.tensor([example.labels for example in train], dtype=torch.float32)
    log(f"frozen states computed in {time.monotonic() - started:.0f} s")

    head = build_head(bert.config, trained_layers=settings.trained_layers, num_labels=len(LABELS))
    # Start the trained layers from the packaged model's top layers.
    for index, layer in enumerate(head.layers):
        layer.load_state_dict(bert.encoder.layer[frozen_layers + index].state_dict())
    optimizer = torch.optim.AdamW(
        [
            {"params": head.layers.parameters(), "lr": settings.learning_rate},
            {"params": head.classifier.parameters(), "lr": settings.head_learning_rate},
        ],
        weight_decay=settings.weight_decay,
    )
    loss_function = torch.nn.BCEWithLogitsLoss()
    order_generator = torch.Generator().manual_seed(settings.seed)
    for epoch in range(settings.epochs):
        head.train()
        total = 0.0
        order = torch.randperm(len(train), generator=order_generator).tolist()
        for start in range(0, len(order), settings.batch_size):
            indexes = order[start : start + settings.batch_size]
            hidden, mask = _collate(train_states, indexes)
            loss = loss_function(head(hidden, mask), train_labels[indexes])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(indexes)
        loss_mean = total / max(len(train), 1)
        log(f"epoch {epoch + 1}/{settings.epochs}: loss {loss_mean:.4f} ({time.monotonic() - started:.0f} s)")

    metadata = {
        "trained_layers": str(settings.trained_layers),
        "base_model": sbert.model_version(),
        "settings": json.dumps(asdict(settings)),
        "training_revision": str(TRAINING_REVISION),
        "captions": str(len(captions)),
        "captions_sha256": captions_digest(captions),
        "data": data_description,
        "examples": str(len(examples)),
    }
    save_detector(head, out_path, metadata=metadata)
    # the texts it learned from, declared beside it: a report on a dataset holding them says so (fingerprints.py)
    write_training_texts(out_path, captions, description=data_description or "train_fluency_detector captions")

    predicted = _predict(head, validation_states, 64)[:, -1] if validation else np.zeros(0)
    truth = np.array([example.labels[-1] for example in validation])
    accuracy = float(np.mean((predicted > 0.5) == (truth == 1))) if len(truth) else float("nan")
    recall = float(np.mean(predicted[truth == 1] > 0.5)) if (truth == 1).any() else float("nan")
    specificity = float(np.mean(predicted[truth == 0] <= 0.5)) if (truth == 0).any() else float("nan")
    return TrainingResult(
        path=str(out_path),
        examples=len(examples),
        training_examples=len(train),
        validation_examples=len(validation),
        validation_accuracy=accuracy,
        validation_error_recall=recall,
        validation_clean_specificity=specificity,
        seconds=time.monotonic() - started,
        metadata=metadata,
    )
