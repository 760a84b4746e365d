"""CLAP and MACE: audio-grounded metrics from a local LAION CLAP checkpoint (transformers' ClapModel).

- **CLAP** = cosine(audio embedding of the clip, text embedding of the caption): how well the caption
  matches the sound itself, with no reference caption involved.
- **MACE** (Dixit et al. 2024, as aac-metrics 0.6 defines it with `mace_method="combined"`): the mean
  of the text score -- mean over the references of cosine(CLAP text embedding of the caption, of the
  reference) -- and the audio score (CLAP above), times FENSE's fluency penalty with MACE's constants:
  MACE = combined * (1 - 0.3 * [p_error > 0.97]). The error probability comes from the fluency
  detector FENSE uses here (`fluency`, the configured checkpoint or the shipped one): aac-metrics uses
  FENSE's released echecker, which cannot be downloaded here; the version string names the detector.

The model: a folder named by `MetricResources.clap_model_dir` (the CLAP_MODEL_DIR setting) holding a
LAION CLAP checkpoint in the transformers layout (config.json, the weights, the processor's
preprocessor_config.json and tokenizer files), loaded with local_files_only; nothing is downloaded.
Without it both metrics are unavailable, with a reason saying so.

Audio: each clip's file (context.audio_paths) is decoded with pydub/ffmpeg, mixed to mono, scaled to
[-1, 1] and resampled to the feature extractor's rate (48 kHz for LAION CLAP) with scipy's polyphase
filter; the ClapProcessor makes the log-mel features. A clip longer than the model's window is cut
where the processor's random crop puts it, seeded by the clip's audio hash, so a clip always gets the
same crop. A request whose clip has no audio gets no score (None: not applicable), and its pairs are
left out of the metric's agreement.

Caching: audio embeddings by (model, audio sha256), text embeddings by (model, text), per process;
clips and texts are embedded in batches (AUDIO_BATCH_SIZE, TEXT_BATCH_SIZE). Plain Python, no Django.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import fluency
from .base import MetricResources, ScoreResult, ScoringContext, ScoringRequest, installed_version

IMPLEMENTATION_REVISION = 1
MACE_PENALTY = 0.3
MACE_ERROR_THRESHOLD = 0.97
AUDIO_BATCH_SIZE = 8
TEXT_BATCH_SIZE = 64
CACHE_SIZE = 50_000
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

_models: dict[str, tuple] = {}
_model_lock = threading.Lock()
_rng_lock = threading.Lock()
_audio_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_text_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()
#: clips run through the audio encoder in this process (tests check "each clip once")
audio_encodes = 0


def model_dir(resources: MetricResources | None) -> Path | None:
    folder = resources.clap_model_dir if resources else None
    return Path(folder) if folder else None


def unavailable_reason(resources: MetricResources | None) -> str | None:
    folder = model_dir(resources)
    if folder is None:
        return (
            "CLAP/MACE: no CLAP model is configured: set CLAP_MODEL_DIR to a folder holding a LAION CLAP "
            "checkpoint in the transformers layout (config.json, weights, processor files)"
        )
    if importlib.util.find_spec("transformers") is None:
        return "CLAP/MACE: needs the transformers package (see requirements.txt)"
    if not (folder / "config.json").is_file():
        return f"CLAP/MACE: CLAP_MODEL_DIR {folder} has no config.json (a LAION CLAP checkpoint, transformers layout)"
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        return f"CLAP/MACE: CLAP_MODEL_DIR {folder} has no model weights ({' or '.join(WEIGHT_FILES)})"
    if not (folder / "preprocessor_config.json").is_file():
        return f"CLAP/MACE: CLAP_MODEL_DIR {folder} has no preprocessor_config.json (the ClapProcessor's settings)"
    return None


def model_identity(folder: Path) -> str:
    """The folder's name plus hashes of its config and the size of its weights: part of every version string."""
    digest = hashlib.sha256((folder / "config.json").read_bytes())
    for name in (*WEIGHT_FILES, "preprocessor_config.json"):
        path = folder / name
        if path.is_file():
            digest.update(f"{name}:{path.stat().st_size}".encode())
    return f"{folder.name}:{digest.hexdigest()[:12]}"


def load(folder: Path) -> tuple:
    """(model, processor, identity) for the folder, loaded once per process on the CPU, offline."""
    key = str(folder.resolve())
    with _model_lock:
        if key not in _models:
            from transformers import ClapModel, ClapProcessor

            model = ClapModel.from_pretrained(key, local_files_only=True).eval()
            processor = ClapProcessor.from_pretrained(key, local_files_only=True)
            _models[key] = (model, processor, model_identity(folder))
        return _models[key]


def decode_audio(path: str | Path, sampling_rate: int) -> np.ndarray:
    """The file as mono float32 in [-1, 1] at `sampling_rate` (pydub/ffmpeg decoding, polyphase resampling)."""
    from pydub import AudioSegment
    from scipy.signal import resample_poly

    segment = AudioSegment.from_file(str(path))
    samples = np.asarray(segment.get_array_of_samples(), dtype=np.float64).reshape(-1, segment.channels)
    mono = samples.mean(axis=1) / float(2 ** (8 * segment.sample_width - 1))
    if segment.frame_rate != sampling_rate:
        divisor = math.gcd(segment.frame_rate, sampling_rate)
        mono = resample_poly(mono, sampling_rate // divisor, segment.frame_rate // divisor)
    return mono.astype(np.float32)


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _unit(vectors) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


def _remember(cache: OrderedDict, key, value) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def text_embeddings(texts: Sequence[str], folder: Path) -> dict[str, np.ndarray]:
    """Unit-length CLAP text embeddings of the distinct texts (cached by model and text)."""
    import torch

    model, processor, identity = load(folder)
    with _cache_lock:
        missing = [t for t in dict.fromkeys(texts) if (identity, t) not in _text_cache]
    for start in range(0, len(missing), TEXT_BATCH_SIZE):
        batch = missing[start : start + TEXT_BATCH_SIZE]
        with _model_lock:  # a fast tokenizer is not thread-safe (see sbert.tokenizer_lock)
            inputs = processor.tokenizer(batch, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            vectors = _unit(model.get_text_features(**inputs).numpy())
        with _cache_lock:
            for text, vector in zip(batch, vectors, strict=True):
                _remember(_text_cache, (identity, text), vector)
    with _cache_lock:
        return {text: _text_cache[(identity, text)] for text in dict.fromkeys(texts)}


def _features(processor, audio: np.ndarray, sha256: str):
    """The processor's features for one clip; its random crop of a long clip is seeded by the clip's hash."""
    with _rng_lock:  # the feature extractor crops with numpy's global generator
        state = np.random.get_state()
        np.random.seed(int(sha256[:8], 16))
        try:
            return processor.feature_extractor(
                [audio], sampling_rate=processor.feature_extractor.sampling_rate, return_tensors="pt"
            )
        finally:
            np.random.set_state(state)


def audio_embeddings(clips: dict[str, str], folder: Path) -> dict[str, np.ndarray]:
    """{audio sha256: unit-length CLAP audio embedding} for {sha256: path} (cached by model and audio hash)."""
    global audio_encodes
    import torch

    model, processor, identity = load(folder)
    with _cache_lock:
        missing = [(sha, path) for sha, path in clips.items() if (identity, sha) not in _audio_cache]
    rate = processor.feature_extractor.sampling_rate
    for start in range(0, len(missing), AUDIO_BATCH_SIZE):
        batch = missing[start : start + AUDIO_BATCH_SIZE]
        features = [_features(processor, decode_audio(path, rate), sha) for sha, path in batch]
        inputs = {key: torch.cat([feature[key] for feature in features]) for key in features[0]}
        with torch.no_grad():
            vectors = _unit(model.get_audio_features(**inputs).numpy())
        audio_encodes += len(batch)
        with _cache_lock:
            for (sha, _path), vector in zip(batch, vectors, strict=True):
                _remember(_audio_cache, (identity, sha), vector)
    with _cache_lock:
        return {sha: _audio_cache[(identity, sha)] for sha in clips}


def clear_caches() -> None:
    with _cache_lock:
        _audio_cache.clear()
        _text_cache.clear()


def mace_value(text_similarity: float, audio_similarity: float, error_probability: float) -> float:
    """aac-metrics' combined MACE: the mean of the two similarities, times 0.7 when the caption has an error."""
    combined = (text_similarity + audio_similarity) / 2
    return combined * (1.0 - MACE_PENALTY * float(error_probability > MACE_ERROR_THRESHOLD))


class ClapScorer:
    """CLAP (audio-caption cosine) and MACE (combined CLAP similarity with the fluency penalty)."""

    metric_names = ("CLAP", "MACE")
    needs = frozenset({"audio", "references"})
    corpus_level = False
    protocol_kind = "embedding"

    @property
    def version(self) -> str:
        return self.version_for(ScoringContext())

    def version_for(self, context: ScoringContext) -> str:
        folder = model_dir(context.resources)
        model = model_identity(folder) if folder and (folder / "config.json").is_file() else "none"
        return (
            f"clap-{model}-transformers-{installed_version('transformers')}-torch-{installed_version('torch')}"
            f"-audio-mono-polyphase-seeded-crop+mace-combined-penalty{MACE_PENALTY}-threshold{MACE_ERROR_THRESHOLD}"
            f"-echecker-{fluency.detector_name(context.resources)}+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        resources = context.resources if context else None
        reason = unavailable_reason(resources)
        if reason:
            return reason
        detector = fluency.unavailable_reason(resources)
        return f"MACE: {detector}" if detector else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        reason = self.unavailable_reason(context)
        if reason:
            raise RuntimeError(reason)
        folder = model_dir(context.resources)
        clip_audio: dict[str, tuple[str, str]] = {}  # clip key -> (sha256, path)
        for request in requests:
            path = context.audio_paths.get(request.clip_key) if request.clip_key is not None else None
            if path and request.clip_key not in clip_audio:
                sha = context.audio_hashes.get(request.clip_key) or file_sha256(path)
                clip_audio[request.clip_key] = (sha, path)
        audio = audio_embeddings(dict(clip_audio.values()), folder) if clip_audio else {}
        texts = text_embeddings([t for r in requests for t in (r.candidate, *r.references)], folder)
        errors = fluency.error_probabilities([r.candidate for r in requests], context.resources)
        clap, mace = [], []
        for request, error_probability in zip(requests, errors, strict=True):
            if request.clip_key not in clip_audio:
                details = {"reason": "the clip has no audio"}
                clap.append(ScoreResult(None, details))
                mace.append(ScoreResult(None, details))
                continue
            sha = clip_audio[request.clip_key][0]
            candidate = texts[request.candidate]
            audio_similarity = float(audio[sha] @ candidate)
            clap.append(ScoreResult(audio_similarity, {"audio_sha256": sha}))
            if not request.references:
                mace.append(ScoreResult(None, {"reason": "no reference caption"}))
                continue
            text_similarity = float(np.mean([texts[r] @ candidate for r in request.references]))
            value = mace_value(text_similarity, audio_similarity, float(error_probability))
            mace.append(
                ScoreResult(
                    value,
                    {
                        "audio_sha256": sha,
                        "text_similarity": text_similarity,
                        "audio_similarity": audio_similarity,
                        "error_probability": float(error_probability),
                        "penalized": float(error_probability) > MACE_ERROR_THRESHOLD,
                    },
                )
            )
        return {"CLAP": clap, "MACE": mace}
