"""The Huggins-pitch headphone test of Milne et al. (2021, Behav. Res. Methods 53:1551).

Each trial plays three 1 s bursts of white noise (0.5 s apart) and asks which one contains a faint
tone. Two bursts are diotic: the same noise in both ears. In the third, the right ear's noise has
its phase inverted (shifted by pi) in a narrow band around 600 Hz (+-6 %, as in the paper), the
left ear's is unchanged. Over headphones the brain compares the ears and hears a faint pitch at
600 Hz inside the noise (Huggins pitch); over loudspeakers the ears' signals mix in the air and
nothing stands out, so loudspeaker listeners are at chance (1 in 3). Six trials, pass at 5.

Nothing about the answer is in the levels: every burst is fresh noise, and each channel of each
burst is scaled to the same RMS after its ramps, so per-burst, per-ear levels are equal. Reading
the answer off the file needs a cross-spectral analysis of the two channels, not a level meter.
"""

import random

import numpy as np

from ratings.screening import SAMPLE_RATE, raised_cosine_envelope, silence

TRIAL_COUNT = 6
PASS_MARK = 5
NOISE_SECONDS = 1.0
GAP_SECONDS = 0.5
RAMP_SECONDS = 0.02
CENTRE_HZ = 600.0
BANDWIDTH_FRACTION = 0.06  # the inverted band is CENTRE_HZ * (1 +- 0.06)
# -20 dBFS RMS: white noise peaks about 4x its RMS, far from clipping.
NOISE_RMS = 0.1
CALIBRATION_SECONDS = 3.0
QUESTION = "Which noise contains a faint tone?"


def trials_draw(rng: random.Random) -> list[dict]:
    """Per trial: the position (0..2) of the Huggins burst and a seed for the trial's noise."""
    return [{"target": rng.randrange(3), "seed": rng.randrange(2**31)} for _ in range(TRIAL_COUNT)]


def trial_answer(trial: dict) -> int:
    return trial["target"]


def inverted_band(frequencies: np.ndarray) -> np.ndarray:
    """Which FFT bins lie in the band whose interaural phase is inverted."""
    return np.abs(frequencies - CENTRE_HZ) <= CENTRE_HZ * BANDWIDTH_FRACTION


def noise_burst(rng: np.random.Generator, *, huggins: bool) -> np.ndarray:
    """One burst, shape (n, 2): diotic white noise, or with the right ear's band around 600 Hz inverted."""
    length = int(SAMPLE_RATE * NOISE_SECONDS)
    spectrum = np.fft.rfft(rng.standard_normal(length))
    right_spectrum = spectrum.copy()
    if huggins:
        right_spectrum[inverted_band(np.fft.rfftfreq(length, 1 / SAMPLE_RATE))] *= -1
    envelope = raised_cosine_envelope(length, int(SAMPLE_RATE * RAMP_SECONDS))
    channels = []
    for channel_spectrum in (spectrum, right_spectrum):
        signal = np.fft.irfft(channel_spectrum, length) * envelope
        channels.append(signal * NOISE_RMS / np.sqrt(np.mean(signal**2)))
    return np.column_stack(channels)


def trial_samples(trial: dict) -> np.ndarray:
    rng = np.random.default_rng(trial["seed"])
    parts = [silence(GAP_SECONDS)]
    for position in range(3):
        parts.extend([noise_burst(rng, huggins=position == trial["target"]), silence(GAP_SECONDS)])
    return np.concatenate(parts)


def calibration_samples() -> np.ndarray:
    """Diotic noise at the test level, for setting the volume."""
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(int(CALIBRATION_SECONDS / (NOISE_SECONDS + GAP_SECONDS))):
        parts.extend([noise_burst(rng, huggins=False), silence(GAP_SECONDS)])
    return np.concatenate(parts)
