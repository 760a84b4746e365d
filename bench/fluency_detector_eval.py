"""Quality of the fluency error detector on the FENSE study's 723 human fluency labels.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/fluency_detector_eval.py [--detector PATH] \
        [--training-data ../shared/datasets/clotho_eval.json]

Prints precision / recall / F1 of "error" at FENSE's threshold 0.9 (and at 0.5), ROC AUC, and the
confusion counts. The 723 captions are never used for training: with --training-data the script
also checks that none of them is among the training captions (after FENSE preprocessing).
Default detector: the file shipped with the product (FENSE uses it unless FENSE_ERROR_DETECTOR_PATH is set).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from sklearn.metrics import (  # noqa: E402
    accuracy_score,
    confusion_matrix,
    precision_recall_fscore_support,
    roc_auc_score,
)

from metrics_bridge.agreement import fingerprints  # noqa: E402
from metrics_bridge.scoring import fluency  # noqa: E402
from metrics_bridge.scoring.fluency.synthesis import normalise  # noqa: E402

LABELS_FILE = ROOT.parent / "shared" / "datasets" / "fluency_annotations_723.csv"
THRESHOLD = 0.9


def read_labels(path: Path) -> tuple[list[str], np.ndarray]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [row["caption"] for row in rows], np.array([int(row["fluency_issue"]) for row in rows])


def figures(labels: np.ndarray, probabilities: np.ndarray, threshold: float) -> dict:
    predicted = probabilities > threshold
    precision, recall, f1, _ = precision_recall_fscore_support(labels, predicted, average="binary", zero_division=0)
    tn, fp, fn, tp = confusion_matrix(labels, predicted, labels=[0, 1]).ravel()
    return {
        "threshold": threshold,
        "accuracy": accuracy_score(labels, predicted),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--detector", type=Path, help="a .safetensors or FENSE .ckpt file (default: the shipped detector)"
    )
    parser.add_argument("--labels", type=Path, default=LABELS_FILE)
    parser.add_argument("--training-data", type=Path, help="FENSE-format JSON whose references trained the detector")
    arguments = parser.parse_args()

    captions, labels = read_labels(arguments.labels)
    if arguments.training_data:
        items = json.loads(arguments.training_data.read_text(encoding="utf-8"))
        training = {normalise(text) for item in items for text in item.get("references") or []}
        overlap = sum(1 for caption in captions if normalise(caption) in training)
        print(f"labelled captions also in the training references: {overlap} of {len(captions)}")
    path = arguments.detector or fluency.detector_path()
    declared = fingerprints.read_training_texts(path)
    if declared is None:
        print("the detector declares no training texts (it may have seen these captions)")
    else:
        seen = sum(1 for caption in captions if fingerprints.text_hash(caption) in declared.hashes)
        print(f"labelled captions among the detector's declared training texts: {seen} of {len(captions)}")
    detector = fluency.load_detector(path=path)
    started = time.perf_counter()
    probabilities = detector.error_probabilities(captions)
    seconds = time.perf_counter() - started
    print(f"detector: {path} ({fluency.detector_name() if arguments.detector is None else path.name})")
    print(f"{len(captions)} captions, {int(labels.sum())} with a fluency issue; scored in {seconds:.1f} s")
    for threshold in (THRESHOLD, 0.5):
        row = figures(labels, probabilities, threshold)
        print(
            f"threshold {threshold}: accuracy {row['accuracy']:.3f}"
            f"  precision {row['precision']:.3f}  recall {row['recall']:.3f}  F1 {row['f1']:.3f}"
            f"  (tp {row['tp']}, fp {row['fp']}, fn {row['fn']}, tn {row['tn']})"
        )
    print(f"ROC AUC {roc_auc_score(labels, probabilities):.3f}")


if __name__ == "__main__":
    main()
