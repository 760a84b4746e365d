"""A clip's spectrogram as a PNG image, computed on the server from the stored audio and cached in storage.

Log-mel power (numpy/scipy: short-time Fourier transform, triangular mel filters), the top 80 dB shown
with matplotlib's "magma" colour map, low frequencies at the bottom, one column per ~10 ms (at most
MAX_COLUMNS). The file is named by the audio's sha256 and this module's version, so a new audio file or
a new rendering gets a new image and an old one is never served for it.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from pathlib import Path

import numpy as np
from django.core.files.base import ContentFile

from annotation.models import Clip

SPECTROGRAM_VERSION = 1
MEL_BANDS = 128
MAX_COLUMNS = 1600
MIN_COLUMNS = 200
DYNAMIC_RANGE_DB = 80.0
LOWEST_HZ = 20.0


def spectrogram_storage_name(clip: Clip) -> str:
    """Named by the audio's content hash (or, for audio stored without one, by its storage name)."""
    identity = clip.sha256 or hashlib.sha256(clip.audio.name.encode("utf-8")).hexdigest()
    return f"spectrograms/{identity}-v{SPECTROGRAM_VERSION}.png"


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


def log_mel_image(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """Values in [0, 1] (0 = DYNAMIC_RANGE_DB below the loudest cell), shape (MEL_BANDS, columns), low bands first."""
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
    power = np.abs(spectrum) ** 2
    mel = mel_filterbank(sample_rate=sample_rate, fft_size=fft_size) @ power
    decibels = 10.0 * np.log10(np.maximum(mel, 1e-12))
    top = decibels.max()
    return np.clip((decibels - (top - DYNAMIC_RANGE_DB)) / DYNAMIC_RANGE_DB, 0.0, 1.0)


def _decoded_mono(clip: Clip) -> tuple[np.ndarray, int]:
    from annotation.services.ffmpeg import audio_decode

    suffix = Path(clip.audio.name).suffix
    with clip.audio.storage.open(clip.audio.name, "rb") as stored, tempfile.NamedTemporaryFile(suffix=suffix) as local:
        shutil.copyfileobj(stored, local)
        local.flush()
        segment = audio_decode(local.name)
    samples = np.asarray(segment.get_array_of_samples(), dtype=np.float64).reshape(-1, segment.channels).mean(axis=1)
    return samples / float(2 ** (8 * segment.sample_width - 1)), int(segment.frame_rate)


def spectrogram_png_bytes(image: np.ndarray) -> bytes:
    from matplotlib import image as matplotlib_image

    buffer = io.BytesIO()
    matplotlib_image.imsave(buffer, np.flipud(image), cmap="magma", vmin=0.0, vmax=1.0, format="png")
    return buffer.getvalue()


def clip_spectrogram_ensure(*, clip: Clip) -> str:
    """The storage name of the clip's spectrogram image, computing and storing it on first use."""
    if not clip.audio:
        raise FileNotFoundError("this clip has no audio")
    storage = clip.audio.storage
    name = spectrogram_storage_name(clip)
    if storage.exists(name):
        return name
    samples, sample_rate = _decoded_mono(clip)
    png = spectrogram_png_bytes(log_mel_image(samples, sample_rate))
    if storage.exists(name):  # computed meanwhile by another request
        return name
    return storage.save(name, ContentFile(png))
