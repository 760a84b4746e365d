"""A clip's spectrogram and per-channel waveform, computed on the server from the stored audio and cached in storage.

Spectrogram: power of a short-time Fourier transform on a mel scale (triangular filters, HTK formula, from
LOWEST_HZ) or a linear one (0 Hz to half the sample rate), the top DYNAMIC_RANGE_DB shown, low frequencies
at the bottom, one column per ~10 ms (at most MAX_COLUMNS), of the two channels mixed or of one of them.
The image is an 8-bit grey PNG with LEVELS grey levels (1.25 dB each): the page colours it with its own colour
map and brightness, and a 20 s clip weighs about 100 KB instead of 366 KB as an RGBA image.

Waveform: the largest |amplitude| per bucket of each channel (PEAKS_PER_SECOND buckets a second, at most
MAX_PEAKS), one byte per bucket, so the page can zoom in on a 0.5 s sound and show stereo as two lanes.

Files are named by the audio's sha256 and this module's version, so a new audio file or a new rendering gets
a new name and an old one is never served for it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from django.core.files.base import ContentFile

from corpus.models import Clip

SPECTROGRAM_VERSION = 2
WAVEFORM_VERSION = 1
SCALES = ("mel", "linear")
CHANNELS = ("mix", "left", "right")
MEL_BANDS = 128
LINEAR_BINS = 128
MAX_COLUMNS = 1600
MIN_COLUMNS = 200
DYNAMIC_RANGE_DB = 80.0
LEVELS = 64
LOWEST_HZ = 20.0
PEAKS_PER_SECOND = 200
MAX_PEAKS = 40_000


def _identity(clip: Clip) -> str:
    """The audio's content hash (or, for audio stored without one, a hash of its storage name)."""
    return clip.sha256 or hashlib.sha256(clip.audio.name.encode("utf-8")).hexdigest()


def spectrogram_storage_name(clip: Clip, scale: str = "mel", channel: str = "mix") -> str:
    return f"spectrograms/{_identity(clip)}-{scale}-{channel}-v{SPECTROGRAM_VERSION}.png"


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(*, sample_rate: int, fft_size: int, bands: int = MEL_BANDS) -> np.ndarray:
    """(bands, fft_size // 2 + 1) triangular filters spaced evenly on the mel scale (HTK formula)."""
    frequencies = np.linspace(0.0, sample_rate / 2.0, fft_size // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(LOWEST_HZ)), _hz_to_mel(np.array(sample_rate / 2.0)), bands + 2))
    filters = np.zeros((bands, len(frequencies)))
    for band in range(bands):
        low, centre, high = edges[band], edges[band + 1], edges[band + 2]
        rising = (frequencies - low) / max(centre - low, 1e-9)
        falling = (high - frequencies) / max(high - centre, 1e-9)
        filters[band] = np.clip(np.minimum(rising, falling), 0.0, None)
    return filters


def _power_spectrum(samples: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
    """(|STFT|^2 with frequency bins as rows and ~10 ms columns, the FFT size)."""
    fft_size = 2048 if sample_rate > 32000 else 1024
    duration = len(samples) / sample_rate
    columns = int(np.clip(duration * 100, MIN_COLUMNS, MAX_COLUMNS))
    hop = max(1, min(fft_size, len(samples) // columns))
    if len(samples) < fft_size:
        samples = np.pad(samples, (0, fft_size - len(samples)))
    from scipy import signal  # on first use: every process importing the views would wait ~0.4 s for it

    _frequencies, _times, spectrum = signal.stft(
        samples, fs=sample_rate, nperseg=fft_size, noverlap=fft_size - hop, boundary="even", padded=True
    )
    return np.abs(spectrum) ** 2, fft_size


def _decibel_image(power: np.ndarray) -> np.ndarray:
    decibels = 10.0 * np.log10(np.maximum(power, 1e-12))
    top = decibels.max()
    return np.clip((decibels - (top - DYNAMIC_RANGE_DB)) / DYNAMIC_RANGE_DB, 0.0, 1.0)


def log_mel_image(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """Values in [0, 1] (0 = DYNAMIC_RANGE_DB below the loudest cell), shape (MEL_BANDS, columns), low bands first."""
    power, fft_size = _power_spectrum(samples, sample_rate)
    return _decibel_image(mel_filterbank(sample_rate=sample_rate, fft_size=fft_size) @ power)


def log_linear_image(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """As log_mel_image on a linear frequency axis: LINEAR_BINS rows from 0 Hz to half the sample rate, each the
    mean power of the FFT bins it spans."""
    power, fft_size = _power_spectrum(samples, sample_rate)
    bins = power[: fft_size // 2]  # drop the Nyquist bin: fft_size // 2 bins split evenly into rows
    rows = bins.reshape(LINEAR_BINS, (fft_size // 2) // LINEAR_BINS, -1).mean(axis=1)
    return _decibel_image(rows)


def _decoded(clip: Clip) -> tuple[np.ndarray, int]:
    """(samples in [-1, 1] with shape (frames, channels), sample rate) of the stored audio."""
    from corpus.services.ffmpeg import audio_decode

    suffix = Path(clip.audio.name).suffix
    with clip.audio.storage.open(clip.audio.name, "rb") as stored, tempfile.NamedTemporaryFile(suffix=suffix) as local:
        shutil.copyfileobj(stored, local)
        local.flush()
        segment = audio_decode(local.name)
    samples = np.asarray(segment.get_array_of_samples(), dtype=np.float64).reshape(-1, segment.channels)
    return samples / float(2 ** (8 * segment.sample_width - 1)), int(segment.frame_rate)


def channel_samples(samples: np.ndarray, channel: str) -> np.ndarray:
    """One channel of (frames, channels) samples: "left" / "right" (the only one of a mono clip), or "mix"."""
    if channel == "mix" or samples.shape[1] == 1:
        return samples.mean(axis=1)
    return samples[:, 0 if channel == "left" else 1]


def spectrogram_png_bytes(image: np.ndarray) -> bytes:
    """An 8-bit grey PNG of values in [0, 1], quantised to LEVELS grey levels, low rows at the bottom."""
    from PIL import Image

    quantised = np.round(np.flipud(image) * (LEVELS - 1)) * (255.0 / (LEVELS - 1))
    buffer = io.BytesIO()
    Image.fromarray(quantised.astype(np.uint8), mode="L").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _stored(clip: Clip, name: str, build) -> str:
    if not clip.audio:
        raise FileNotFoundError("this clip has no audio")
    storage = clip.audio.storage
    if storage.exists(name):
        return name
    content = build()
    if storage.exists(name):  # computed meanwhile by another request
        return name
    return storage.save(name, ContentFile(content))


def clip_spectrogram_ensure(*, clip: Clip, scale: str = "mel", channel: str = "mix") -> str:
    """The storage name of the clip's spectrogram image, computing and storing it on first use."""
    if scale not in SCALES or channel not in CHANNELS:
        raise ValueError(f"scale is one of {', '.join(SCALES)} and channel one of {', '.join(CHANNELS)}")
    if (clip.channels or 1) < 2:
        channel = "mix"  # a mono clip has one image, whatever is asked

    def build() -> bytes:
        samples, sample_rate = _decoded(clip)
        render = log_mel_image if scale == "mel" else log_linear_image
        return spectrogram_png_bytes(render(channel_samples(samples, channel), sample_rate))

    return _stored(clip, spectrogram_storage_name(clip, scale, channel), build)


def waveform_peaks_by_channel(samples: np.ndarray, sample_rate: int) -> dict:
    """{"channels", "peaks_per_second", "peaks": [base64 bytes per channel]}: max |amplitude| per bucket as 0-255."""
    frames = samples.shape[0]
    duration = frames / sample_rate
    buckets = max(1, min(MAX_PEAKS, int(np.ceil(duration * PEAKS_PER_SECOND)), frames))
    edges = np.linspace(0, frames, buckets + 1).astype(int)
    peaks = []
    for channel in range(samples.shape[1]):
        magnitude = np.abs(samples[:, channel])
        values = np.maximum.reduceat(magnitude, edges[:-1]) if frames else np.zeros(1)
        peaks.append(base64.b64encode(np.round(np.clip(values, 0, 1) * 255).astype(np.uint8).tobytes()).decode())
    return {"channels": samples.shape[1], "peaks_per_second": buckets / duration if duration else 0, "peaks": peaks}


def clip_waveform_ensure(*, clip: Clip) -> str:
    """The storage name of the clip's per-channel waveform (JSON), computing and storing it on first use."""

    def build() -> bytes:
        samples, sample_rate = _decoded(clip)
        data = {"duration": samples.shape[0] / sample_rate, **waveform_peaks_by_channel(samples, sample_rate)}
        return json.dumps(data, separators=(",", ":")).encode()

    return _stored(clip, f"waveforms/{_identity(clip)}-v{WAVEFORM_VERSION}.json", build)
