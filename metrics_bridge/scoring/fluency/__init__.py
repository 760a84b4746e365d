"""Fluency error detectors for FENSE's penalty (and DATE's): which one is used, loaded once per process.

    from metrics_bridge.scoring import fluency
    fluency.error_probabilities(["a dog barks and a"], resources)   # np.ndarray, P(error) per text
    fluency.detector_name(resources)                   # names the detector in version strings
    fluency.unavailable_reason(resources)              # None, or why no detector can load
(`resources` is the scoring context's MetricResources; None = the shipped detector.)

Which detector:
- `MetricResources.fense_error_detector_path` set (the FENSE_ERROR_DETECTOR_PATH setting, copied
  into the scoring context by the Django side; nothing here reads os.environ): that file -- FENSE's
  own checkpoint (torch .ckpt, see `fense_checkpoint`; its encoder config and tokenizer from
  `fense_error_detector_base` or the checkpoint's model_type) or a detector made by
  `train_fluency_detector` (.safetensors). A path that is set but missing makes FENSE unavailable
  rather than silently falling back.
- otherwise: the detector shipped with the product, `scoring/data/fluency_detector.safetensors`:
  the packaged all-MiniLM-L6-v2 with its top layer fine-tuned on errors synthesized from
  Clotho-Eval's reference captions (`synthesis`, `training`; made by
  `manage.py train_fluency_detector`). Its quality on the FENSE study's 723 human fluency labels
  is measured by `bench/fluency_detector_eval.py`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base import MetricResources

SHIPPED_DETECTOR = Path(__file__).resolve().parent.parent / "data" / "fluency_detector.safetensors"
#: names the shipped detector in version strings; it changes with what the detector was trained on, so scores
#: made with an earlier shipped detector are stale (the file's fingerprint changes as well)
SHIPPED_NAME = "minilm-l6-top1-synth-disjoint"
#: how the shipped detector was made (from ../shared/datasets, outside the product; never read at run time)
SHIPPED_RECIPE = (
    "train_fluency_detector xace_machine_caption_graphs.json audiocaps_f_annotations.json --per-source 450 "
    "--epochs 3 --exclude clotho_eval.json --exclude audiocaps_eval.json --exclude brace_main_sample.json "
    "--exclude brace_hallucination_sample.json --exclude fluency_annotations_723.csv"
)

_detectors: dict[str, object] = {}
_lock = threading.Lock()


def configured_path(resources: MetricResources | None = None) -> Path | None:
    value = ((resources.fense_error_detector_path if resources else None) or "").strip()
    return Path(value) if value else None


def detector_path(resources: MetricResources | None = None) -> Path:
    return configured_path(resources) or SHIPPED_DETECTOR


def unavailable_reason(resources: MetricResources | None = None) -> str | None:
    path = detector_path(resources)
    if not path.is_file():
        if configured_path(resources) is not None:
            return f"FENSE_ERROR_DETECTOR_PATH={path} is not a file"
        return f"the shipped fluency detector {path} is missing (reinstall the product)"
    from .. import sbert

    return sbert.model_unavailable_reason()


def _fingerprint(path: Path) -> str:
    """Size and a hash of the first MiB: changes when the file does, without reading a large checkpoint whole."""
    with path.open("rb") as handle:
        head = hashlib.sha256(handle.read(1 << 20)).hexdigest()[:12]
    return f"{path.stat().st_size}:{head}"


def detector_name(resources: MetricResources | None = None) -> str:
    """E.g. "minilm-l6-top1-synth-disjoint:3555972:1a2b3c4d5e6f" (shipped) or "echecker_clotho_audiocaps_base.ckpt:...".

    "none" when no detector file is there (FENSE is then unavailable anyway).
    """
    path = detector_path(resources)
    if not path.is_file():
        return "none"
    name = SHIPPED_NAME if configured_path(resources) is None else path.name
    return f"{name}:{_fingerprint(path)}"


def load_detector(resources: MetricResources | None = None, *, path: Path | None = None):
    """The configured (or shipped) detector, or the one at `path`, loaded once per process per file."""
    path = path or detector_path(resources)
    base = ((resources.fense_error_detector_base if resources else None) or "").strip()
    key = f"{path}:{_fingerprint(path)}:{base}"
    with _lock:
        if key not in _detectors:
            if path.suffix == ".safetensors":
                from .model import MiniLMErrorDetector

                _detectors[key] = MiniLMErrorDetector(path)
            else:
                from .fense_checkpoint import FenseCheckpointDetector

                _detectors[key] = FenseCheckpointDetector(path, base=base or None)
        return _detectors[key]


def error_probabilities(texts: Sequence[str], resources: MetricResources | None = None) -> np.ndarray:
    """P(fluency error) per text from the configured or shipped detector (each distinct text run once)."""
    texts = list(texts)
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return np.zeros(0)
    probability = dict(zip(distinct, load_detector(resources).error_probabilities(distinct), strict=True))
    return np.array([float(probability[text]) for text in texts])
