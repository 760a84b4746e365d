"""A stretch of a clip's spectrogram at the resolution the page shows it, for the zoomed timeline.

The stored image has one column per ~10 ms (at most MAX_COLUMNS for the whole clip): zoomed in on a second,
the page would stretch ~100 columns over a thousand pixels. Here the range [start, end] is computed with as
many columns as the page has pixels (the FFT hop shrinks with the range, down to one sample) and a window that
shrinks too when the range is short (finer time detail: 1024 samples at 44.1 kHz under 4 s, 512 under 1 s), in
the stored image's scale, rows and grey levels. Its levels are relative to the whole clip's loudest cell, so a
zoomed stretch is as bright as the same seconds in the whole-clip image. Nothing is stored: a stretch is one
short STFT of the range.
"""

from __future__ import annotations

import numpy as np

from annotation.services.spectrogram import (
    CHANNELS,
    DYNAMIC_RANGE_DB,
    LINEAR_BINS,
    SCALES,
    _decoded,
    _power_spectrum,
    channel_samples,
    mel_filterbank,
    spectrogram_png_bytes,
)
from corpus.models import Clip

MAX_ZOOM_COLUMNS = 4096
MIN_RANGE_SECONDS = 0.05


class ZoomRangeError(ValueError):
    """A range or column count the page cannot have asked for."""


def _fft_size(sample_rate: int, seconds: float) -> int:
    full = 2048 if sample_rate > 32000 else 1024
    if seconds < 1.0:
        return full // 4
    if seconds < 4.0:
        return full // 2
    return full


def _rows(power: np.ndarray, scale: str, sample_rate: int, fft_size: int) -> np.ndarray:
    if scale == "mel":
        return mel_filterbank(sample_rate=sample_rate, fft_size=fft_size) @ power
    bins = power[: fft_size // 2]
    return bins.reshape(LINEAR_BINS, (fft_size // 2) // LINEAR_BINS, -1).mean(axis=1)


def _top_decibels(samples: np.ndarray, sample_rate: int, scale: str) -> float:
    """The loudest cell of the whole clip's image (what the stored image's grey levels are relative to)."""
    power, fft_size = _power_spectrum(samples, sample_rate)
    return float(10.0 * np.log10(max(float(_rows(power, scale, sample_rate, fft_size).max()), 1e-12)))


def spectrogram_range_image(
    samples: np.ndarray, sample_rate: int, *, scale: str, start: float, end: float, columns: int
) -> np.ndarray:
    """Values in [0, 1] with shape (rows, columns) for [start, end] seconds of mono `samples`."""
    from scipy import signal

    seconds = end - start
    fft_size = _fft_size(sample_rate, seconds)
    hop = max(1, int(round(seconds * sample_rate / columns)))
    first = int(round(start * sample_rate))
    # half a window of context on each side, so the first and last columns are centred on their own instants
    padded = np.pad(samples, (fft_size, fft_size))
    stretch = padded[first + fft_size // 2 : first + fft_size // 2 + hop * columns + fft_size]
    if len(stretch) < fft_size:
        stretch = np.pad(stretch, (0, fft_size - len(stretch)))
    _f, _t, spectrum = signal.stft(
        stretch, fs=sample_rate, nperseg=fft_size, noverlap=fft_size - hop, boundary=None, padded=True
    )
    power = (np.abs(spectrum) ** 2)[:, :columns]
    if power.shape[1] < columns:
        power = np.pad(power, ((0, 0), (0, columns - power.shape[1])))
    rows = _rows(power, scale, sample_rate, fft_size)
    if scale == "mel":
        # a short window leaves the lowest mel bands between FFT bins: give them their nearest band's power
        empty = rows.max(axis=1) <= 0
        if empty.any() and not empty.all():
            filled = np.flatnonzero(~empty)
            nearest = filled[np.abs(filled[None, :] - np.arange(len(rows))[:, None]).argmin(axis=1)]
            rows = rows[nearest]
    decibels = 10.0 * np.log10(np.maximum(rows, 1e-12))
    top = _top_decibels(samples, sample_rate, scale)
    return np.clip((decibels - (top - DYNAMIC_RANGE_DB)) / DYNAMIC_RANGE_DB, 0.0, 1.0)


def clip_spectrogram_range_png(
    *, clip: Clip, scale: str, channel: str, start: float, end: float, columns: int
) -> bytes:
    """The PNG of [start, end] seconds of the clip's spectrogram, `columns` wide (ZoomRangeError if out of range)."""
    if scale not in SCALES or channel not in CHANNELS:
        raise ZoomRangeError(f"scale is one of {', '.join(SCALES)} and channel one of {', '.join(CHANNELS)}")
    if not 1 <= columns <= MAX_ZOOM_COLUMNS:
        raise ZoomRangeError(f"columns must be between 1 and {MAX_ZOOM_COLUMNS}")
    duration = clip.duration_seconds or 0.0
    if not (0 <= start < end) or end - start < MIN_RANGE_SECONDS or (duration and end > duration + 0.5):
        raise ZoomRangeError(f"start and end must be seconds within the clip, at least {MIN_RANGE_SECONDS} s apart")
    if (clip.channels or 1) < 2:
        channel = "mix"
    samples, sample_rate = _decoded(clip)
    mono = channel_samples(samples, channel)
    image = spectrogram_range_image(mono, sample_rate, scale=scale, start=start, end=end, columns=columns)
    return spectrogram_png_bytes(image)
