"""The antiphase headphone test of Woods et al. (2017, Atten. Percept. Psychophys. 79:2064).

Each trial plays three 200 Hz tones (1 s, 100 ms raised-cosine ramps, 0.5 s apart) and asks which
one is quietest. One tone is 6 dB quieter (the right answer); another is at full level but in
antiphase between the ears (left = -right); the third is at full level in phase. Over headphones
the antiphase tone sounds as loud as the in-phase one; over loudspeakers the two channels partly
cancel in the air, so loudspeaker listeners tend to pick the antiphase tone. Six trials, pass at 5.

Its weakness: the answer is in the file's levels (the quiet tone has half the amplitude), so a
rater who inspects the downloaded WAV can read it off; the Huggins test (huggins.py) is far harder.
"""

import random
from functools import cache

import numpy as np

from ratings.screening import SAMPLE_RATE, raised_cosine_envelope, silence

TRIAL_COUNT = 6
PASS_MARK = 5
TONE_HZ = 200.0
TONE_SECONDS = 1.0
RAMP_SECONDS = 0.1
GAP_SECONDS = 0.5
# About -10 dBFS: loud enough to hear after calibration, far from clipping.
REFERENCE_AMPLITUDE = 0.3
QUIET_GAIN = 0.5  # -6 dB
CALIBRATION_SECONDS = 4.0

IN_PHASE = "in_phase"
ANTIPHASE = "antiphase"
QUIET = "quiet"
QUESTION = "Which tone is the quietest?"


def trials_draw(rng: random.Random) -> list[dict]:
    """Per trial: the positions (0..2) of the antiphase and of the quiet tone."""
    trials = []
    for _ in range(TRIAL_COUNT):
        tones = [IN_PHASE, ANTIPHASE, QUIET]
        rng.shuffle(tones)
        trials.append({"antiphase": tones.index(ANTIPHASE), "quietest": tones.index(QUIET)})
    return trials


def trial_answer(trial: dict) -> int:
    return trial["quietest"]


@cache
def tone(kind: str) -> np.ndarray:
    """One tone as float samples, shape (n, 2): columns are the left and right ears.

    Computed once per kind (every trial of every participant plays the same three tones); read-only, since
    the cached array is shared."""
    time = np.arange(int(SAMPLE_RATE * TONE_SECONDS)) / SAMPLE_RATE
    envelope = raised_cosine_envelope(len(time), int(SAMPLE_RATE * RAMP_SECONDS))
    gain = REFERENCE_AMPLITUDE * (QUIET_GAIN if kind == QUIET else 1.0)
    left = gain * envelope * np.sin(2 * np.pi * TONE_HZ * time)
    right = -left if kind == ANTIPHASE else left
    samples = np.column_stack([left, right])
    samples.setflags(write=False)
    return samples


def trial_samples(trial: dict) -> np.ndarray:
    """The three tones of a trial in the trial's order, with gaps before, between and after."""
    kinds = [IN_PHASE] * 3
    kinds[trial["antiphase"]] = ANTIPHASE
    kinds[trial["quietest"]] = QUIET
    parts = [silence(GAP_SECONDS)]
    for kind in kinds:
        parts.extend([tone(kind), silence(GAP_SECONDS)])
    return np.concatenate(parts)


def calibration_samples() -> np.ndarray:
    """In-phase tones at the full test level, for setting a comfortable volume before the test."""
    repeats = int(CALIBRATION_SECONDS / (TONE_SECONDS + GAP_SECONDS))
    parts = []
    for _ in range(repeats):
        parts.extend([tone(IN_PHASE), silence(GAP_SECONDS)])
    return np.concatenate(parts)
