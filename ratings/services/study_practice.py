"""The practice item of a crowd study: a sound made here, two captions, feedback, nothing stored.

The sound is three short beeps (no clip of any dataset, so the practice reveals nothing about the study's
data); the first caption describes it, the second describes sounds that are not there. The answer only
gets feedback; it never becomes a judgement.
"""

from functools import cache

import numpy as np
from django.utils.crypto import salted_hmac

from ratings.projection import LEFT, RIGHT
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


@cache
def practice_wav() -> bytes:
    """Made once per process: the same sound for everyone, served on each play of every participant (making it
    cost about half of its request's CPU)."""
    return wav_bytes(practice_samples())


def practice_peaks() -> list[float]:
    """Waveform peaks for the player (values in [0, 1])."""
    return list(_practice_peaks())


@cache
def _practice_peaks() -> tuple[float, ...]:
    mono = np.abs(practice_samples()[:, 0])
    chunks = np.array_split(mono, PEAK_COUNT)
    top = max(float(mono.max()), 1e-9)
    return tuple(round(float(chunk.max()) / top, 3) for chunk in chunks)


def practice_right_first(participant_key: str) -> bool:
    """Whether the right caption comes first (left) for this participant: the practice's caption order is drawn
    per participant from a server secret, like a rated item's, so "the first caption is the right one" is
    never a rule a participant can learn from it."""
    return salted_hmac("study-practice-order", participant_key).digest()[0] % 2 == 0


def practice_captions(participant_key: str) -> list[str]:
    """The two practice captions in this participant's order."""
    return [RIGHT_CAPTION, WRONG_CAPTION] if practice_right_first(participant_key) else [WRONG_CAPTION, RIGHT_CAPTION]


def practice_feedback(*, is_pairwise: bool, answer: dict, right_first: bool = True) -> tuple[bool, str]:
    """(whether the answer is as expected, what to tell the participant); `right_first`: the participant's order."""
    right_side, wrong_side = (LEFT, RIGHT) if right_first else (RIGHT, LEFT)
    right_number, wrong_number = ("1", "2") if right_first else ("2", "1")
    if is_pairwise:
        right = answer.get("side") == right_side
        names = {LEFT: "A", RIGHT: "B"}
        return right, (
            f"Right: caption {names[right_side]} describes the three beeps; caption {names[wrong_side]} names "
            "sounds that are not in the clip."
            if right
            else f"Caption {names[right_side]} was the better one: you heard three beeps, and caption "
            f"{names[wrong_side]} names sounds that are not there."
        )
    try:
        first = int(answer.get(f"precision_{right_number}", 0))
        second = int(answer.get(f"precision_{wrong_number}", 0))
    except (TypeError, ValueError):
        first, second = 0, 0
    right = first >= 4 and 1 <= second <= 2
    return right, (
        f"Right: caption {right_number} matches what you heard (high precision), caption {wrong_number} does not "
        "(precision 1 or 2)."
        if right
        else f"Caption {right_number} matches the three beeps, so it deserves a high precision (4 or 5); caption "
        f"{wrong_number} names a dog and rain that are not there, so its precision is 1 or 2 (and it gets an "
        "irrelevance penalty)."
    )
