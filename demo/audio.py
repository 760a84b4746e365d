"""The demo clips' sounds, synthesized from their scenes (demo/scenes.py) with numpy.

Each event kind has a recipe (a beep is a few sine bursts, a hum a sawtooth drone, static seeded white noise, ...)
shaped by the event's attributes: pitch, volume, how many times, how fast. The noise generators are seeded by the
scene and the event, so running the demo again writes byte-identical WAV files and the audio ingestion sees them
unchanged. 16-bit mono WAV at 16 kHz, written with the standard library's `wave` (no ffmpeg needed).
"""

import wave
from pathlib import Path

import numpy as np

from demo.scenes import Scene, SceneEvent, scene_by_id

SAMPLE_RATE = 16_000
PEAK = 0.9  # of full scale, after mixing


def _time(seconds: float) -> np.ndarray:
    return np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE


def _fade(signal: np.ndarray, seconds: float = 0.01) -> np.ndarray:
    """Soft edges (no click where a sound starts or stops)."""
    length = min(len(signal) // 2, int(seconds * SAMPLE_RATE))
    if length:
        ramp = np.linspace(0.0, 1.0, length)
        signal[:length] *= ramp
        signal[-length:] *= ramp[::-1]
    return signal


def _sine(frequency: float, seconds: float) -> np.ndarray:
    return np.sin(2 * np.pi * frequency * _time(seconds))


def _saw(frequency: float, seconds: float) -> np.ndarray:
    return 2 * ((_time(seconds) * frequency) % 1.0) - 1


def _sweep(start: float, end: float, seconds: float) -> np.ndarray:
    frequency = np.linspace(start, end, len(_time(seconds)))
    return np.sin(2 * np.pi * np.cumsum(frequency) / SAMPLE_RATE)


def _noise(rng: np.random.Generator, seconds: float) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, len(_time(seconds)))


def _repeat(unit: np.ndarray, gap_seconds: float, count: int) -> np.ndarray:
    gap = np.zeros(int(gap_seconds * SAMPLE_RATE))
    return np.concatenate([part for _ in range(count) for part in (unit, gap)][:-1])


def _event_signal(event: SceneEvent, rng: np.random.Generator) -> np.ndarray:
    seconds = event.offset - event.onset
    high = event.pitch in ("high-pitched", "shrill", "sharp")
    kind = event.kind
    if kind == "beep":
        return _repeat(_fade(_sine(1760 if high else 520, 0.3)), 0.3, event.count)
    if kind == "hum":
        return _fade(0.6 * _saw(70, seconds) + 0.4 * _sine(140, seconds), 0.15)
    if kind == "siren":
        period = 0.18 if event.tempo == "rapidly" else 0.35
        halves = max(2, int(seconds / period))
        return np.concatenate([_fade(np.sign(_sine(880 if n % 2 else 660, period)) * 0.6) for n in range(halves)])
    if kind in ("rising", "falling"):
        top = 3200 if high else 1800
        start, end = (300, top) if kind == "rising" else (top, 300)
        return _fade(_sweep(start, end, seconds), 0.02)
    if kind == "hiss":
        return _fade(_noise(rng, seconds) * 0.7, 0.1)
    if kind == "crackle":
        signal = np.zeros(len(_time(seconds)))
        for _ in range(int(seconds * 5)):
            burst = _fade(_noise(rng, rng.uniform(0.02, 0.09)), 0.003) * rng.uniform(0.4, 1.0)
            at = rng.integers(0, max(1, len(signal) - len(burst)))
            signal[at : at + len(burst)] += burst
        return signal
    if kind == "whoosh":
        noise = np.convolve(_noise(rng, seconds), np.ones(12) / 12, mode="same") * 3
        envelope = np.sin(np.linspace(0, np.pi, len(noise))) ** 2
        return noise * envelope
    if kind == "tick":
        period = 0.35 if event.tempo == "steadily" else 0.5
        click = _noise(rng, 0.012) * np.exp(-np.linspace(0, 6, int(0.012 * SAMPLE_RATE)))
        return _repeat(click, period - 0.012, max(2, int(seconds / period)))
    if kind == "knock":
        decay = np.exp(-_time(0.18) * 30)
        return _repeat(_sine(110, 0.18) * decay + _noise(rng, 0.18) * decay * 0.3, 0.25, event.count)
    if kind == "chime":
        ring = 1.2
        base = 1320 if high else 440
        tone = sum(_sine(base * partial, ring) / partial for partial in (1, 2.76, 5.4)) * np.exp(-_time(ring) * 3)
        return _repeat(_fade(tone, 0.005), 0.15, event.count)
    raise ValueError(f"no recipe for {kind!r}")


def scene_samples(scene: Scene) -> np.ndarray:
    """The scene mixed to 16-bit samples: each event at its onset, its level from its volume."""
    mix = np.zeros(int(scene.seconds * SAMPLE_RATE))
    for index, event in enumerate(scene.events):
        rng = np.random.default_rng([int(byte) for byte in f"{scene.external_id}:{index}".encode()])
        signal = _event_signal(event, rng)
        level = {"loud": 1.0, "faint": 0.18}.get(event.volume, 0.5)
        if len(scene.events) > 1 and index == len(scene.events) - 1 and event.onset < 0.2:
            level *= 0.5  # a background event under the others
        start = int(event.onset * SAMPLE_RATE)
        end = min(len(mix), start + len(signal))
        mix[start:end] += level * signal[: end - start]
    peak = np.max(np.abs(mix)) or 1.0
    return np.round(mix / peak * PEAK * 32767).astype("<i2")


def demo_sound_write(*, name: str, folder: Path) -> Path:
    """Synthesize the named scene as 16-bit mono WAV in `folder`; returns the file's path."""
    path = Path(folder) / f"{name}.wav"
    with wave.open(str(path), "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(SAMPLE_RATE)
        audio.writeframes(scene_samples(scene_by_id(name)).tobytes())
    return path
