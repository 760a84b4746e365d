"""The practice item of a crowd study: a sound made here, two captions, feedback, nothing stored.

The sound is three short beeps (no clip of any dataset, so the practice reveals nothing about the study's
data); the first caption describes it, the second describes sounds that are not there. The answer only
gets feedback; it never becomes a judgement.
"""

import numpy as np

from ratings.screening import SAMPLE_RATE, raised_cosine_envelope, wav_bytes

PRACTICE_SECONDS = 3.0
BEEP_STARTS = (0.4, 1.2, 2.0)
BEEP_SECONDS = 0.25
BEEP_HERTZ = 880.0
PEAK_COUNT = 200
RIGHT_CAPTION = "Three short high beeps sound one after another."
WRONG_CAPTION = "A dog barks twice while rain falls on a roof."


def practice_samples() -> np.ndarray:
    """Stereo float samples of the practice sound."""
    samples = np.zeros(int(SAMPLE_RATE * PRACTICE_SECONDS))
    length = int(SAMPLE_RATE * BEEP_SECONDS)
    beep = 0.3 * np.sin(2 * np.pi * BEEP_HERTZ * np.arange(length) / SAMPLE_RATE)
    beep *= raised_cosine_envelope(length, int(SAMPLE_RATE * 0.01))
    for start in BEEP_STARTS:
        offset = int(SAMPLE_RATE * start)
        samples[offset : offset + length] = beep
    return np.column_stack([samples, samples])


def practice_wav() -> bytes:
    return wav_bytes(practice_samples())


def practice_peaks() -> list[float]:
    """Waveform peaks for the player (values in [0, 1])."""
    mono = np.abs(practice_samples()[:, 0])
    chunks = np.array_split(mono, PEAK_COUNT)
    top = max(float(mono.max()), 1e-9)
    return [round(float(chunk.max()) / top, 3) for chunk in chunks]


def practice_feedback(*, is_pairwise: bool, answer: dict) -> tuple[bool, str]:
    """(whether the answer is as expected, what to tell the participant)."""
    if is_pairwise:
        right = answer.get("side") == "left"
        return right, (
            "Right: caption A describes the three beeps; caption B names sounds that are not in the clip."
            if right
            else "Caption A was the better one: you heard three beeps, and caption B names sounds that are not there."
        )
    try:
        first, second = int(answer.get("precision_1", 0)), int(answer.get("precision_2", 0))
    except (TypeError, ValueError):
        first, second = 0, 0
    right = first >= 4 and 1 <= second <= 2
    return right, (
        "Right: caption 1 matches what you heard (high precision), caption 2 does not (precision 1 or 2)."
        if right
        else "Caption 1 matches the three beeps, so it deserves a high precision (4 or 5); caption 2 names a dog "
        "and rain that are not there, so its precision is 1 or 2 (and it gets an irrelevance penalty)."
    )
