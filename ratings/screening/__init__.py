"""Headphone screening sounds, as plain numpy code (no Django): the antiphase test and the Huggins-pitch test.

Each test module exposes the same small interface, used by ratings.services.headphone:
`TRIAL_COUNT`, `PASS_MARK`, `trials_draw(rng)` (the secret per-trial layout, answers empty),
`trial_answer(trial)` (the right choice, 0..2), `trial_samples(trial)` (float stereo samples) and
`calibration_samples()`; `wav_bytes` turns samples into a 16-bit stereo WAV.
"""

import io
import wave

import numpy as np

SAMPLE_RATE = 44100


def wav_bytes(samples: np.ndarray) -> bytes:
    """Float samples of shape (n, 2) in [-1, 1] as a 16-bit stereo WAV."""
    pcm = np.round(np.clip(samples, -1, 1) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(2)
        output.setsampwidth(2)
        output.setframerate(SAMPLE_RATE)
        output.writeframes(pcm.tobytes())
    return buffer.getvalue()


def raised_cosine_envelope(length: int, ramp_length: int) -> np.ndarray:
    envelope = np.ones(length)
    ramp = 0.5 * (1 - np.cos(np.pi * np.arange(ramp_length) / ramp_length))
    envelope[:ramp_length] = ramp
    envelope[length - ramp_length :] = ramp[::-1]
    return envelope


def silence(seconds: float) -> np.ndarray:
    return np.zeros((int(SAMPLE_RATE * seconds), 2))
