"""Synthetic sounds for the demo dataset, built from pydub signal generators.

Every sound is deterministic (seeded noise), so re-running the demo produces
byte-identical WAV files and the audio ingestion sees "unchanged".
"""

import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from pydub import AudioSegment
from pydub.generators import Sawtooth, SignalGenerator, Sine, Square

SAMPLE_RATE = 16_000


class SeededNoise(SignalGenerator):
    """White noise from its own seeded generator (pydub's WhiteNoise uses the global `random`)."""

    def __init__(self, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed

    def generate(self) -> Iterator[float]:
        rng = random.Random(self.seed)
        while True:
            yield rng.random() * 2 - 1.0


class Sweep(SignalGenerator):
    """A sine whose frequency glides linearly from `start_hz` to `end_hz` over `seconds`, then holds."""

    def __init__(self, start_hz: float, end_hz: float, seconds: float, **kwargs):
        super().__init__(**kwargs)
        self.start_hz, self.end_hz, self.seconds = start_hz, end_hz, seconds

    def generate(self) -> Iterator[float]:
        phase, sample = 0.0, 0
        glide_samples = self.seconds * self.sample_rate
        while True:
            progress = min(sample / glide_samples, 1.0)
            frequency = self.start_hz + (self.end_hz - self.start_hz) * progress
            yield math.sin(phase)
            phase += 2 * math.pi * frequency / self.sample_rate
            sample += 1


def _tone(generator_class, frequency: float, milliseconds: int, volume: float) -> AudioSegment:
    return generator_class(frequency, sample_rate=SAMPLE_RATE).to_audio_segment(duration=milliseconds, volume=volume)


def _noise(seed: int, milliseconds: int, volume: float) -> AudioSegment:
    return SeededNoise(seed, sample_rate=SAMPLE_RATE).to_audio_segment(duration=milliseconds, volume=volume)


def _silence(milliseconds: int) -> AudioSegment:
    return AudioSegment.silent(duration=milliseconds, frame_rate=SAMPLE_RATE)


def _soft_edges(segment: AudioSegment, milliseconds: int = 10) -> AudioSegment:
    # Avoids clicks where a tone starts or stops abruptly.
    return segment.fade_in(milliseconds).fade_out(milliseconds)


def beep_three_times() -> AudioSegment:
    beep = _soft_edges(_tone(Sine, 1760, 400, -8))
    return _silence(300) + (beep + _silence(450)) * 3 + _silence(150)


def noise_swell() -> AudioSegment:
    return _silence(200) + _noise(1, 4200, -10).fade_in(2000).fade_out(2000) + _silence(200)


def rising_sweep_then_hum() -> AudioSegment:
    sweep = _soft_edges(Sweep(200, 2400, 2.0, sample_rate=SAMPLE_RATE).to_audio_segment(duration=2000, volume=-9))
    hum = _soft_edges(_tone(Sawtooth, 90, 2500, -16), 80)
    return _silence(200) + sweep + _silence(300) + hum + _silence(200)


def steady_low_hum() -> AudioSegment:
    hum = _tone(Sawtooth, 60, 5000, -14).overlay(_tone(Sine, 120, 5000, -18))
    return _soft_edges(hum, 200)


def crackling_bursts() -> AudioSegment:
    rng = random.Random(5)
    segment = _silence(4000)
    for index in range(9):
        burst = _soft_edges(_noise(100 + index, rng.randint(40, 160), rng.uniform(-14, -6)), 5)
        segment = segment.overlay(burst, position=rng.randint(100, 3700))
    return segment


def falling_slide() -> AudioSegment:
    slide = Sweep(3000, 300, 3.0, sample_rate=SAMPLE_RATE).to_audio_segment(duration=3000, volume=-9)
    return _silence(200) + _soft_edges(slide, 20) + _silence(300)


def two_tone_siren() -> AudioSegment:
    high = _soft_edges(_tone(Square, 880, 250, -16), 5)
    low = _soft_edges(_tone(Square, 660, 250, -16), 5)
    return (high + low) * 10


def beep_over_quiet_noise() -> AudioSegment:
    background = _noise(8, 5000, -32)
    beep = _soft_edges(_tone(Sine, 1000, 1000, -10), 20)
    return background.overlay(beep, position=2000)


# external id -> recipe; the order is the demo dataset's clip order.
SOUNDS: dict[str, Callable[[], AudioSegment]] = {
    "beep-three-times": beep_three_times,
    "noise-swell": noise_swell,
    "rising-sweep-then-hum": rising_sweep_then_hum,
    "steady-low-hum": steady_low_hum,
    "crackling-bursts": crackling_bursts,
    "falling-slide": falling_slide,
    "two-tone-siren": two_tone_siren,
    "beep-over-quiet-noise": beep_over_quiet_noise,
}


def demo_sound_write(*, name: str, folder: Path) -> Path:
    """Synthesize the named sound as 16-bit mono WAV in `folder`; returns the file's path."""
    path = Path(folder) / f"{name}.wav"
    SOUNDS[name]().set_sample_width(2).export(path, format="wav")
    return path
