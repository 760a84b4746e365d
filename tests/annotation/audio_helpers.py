"""Reference measurements of audio files made with ffprobe/ffmpeg and the wave module, independent of pydub."""

import json
import subprocess
from pathlib import Path


def ffprobe_audio(path: Path) -> dict:
    """sample_rate, channels and duration (seconds) of the first audio stream, as ffprobe reports them."""
    output = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "stream=sample_rate,channels,duration",
            "-show_entries",
            "format=duration",
            "-of",
            "json",
            str(path),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    info = json.loads(output)
    stream = info["streams"][0]
    return {
        "sample_rate": int(stream["sample_rate"]),
        "channels": int(stream["channels"]),
        "duration": float(stream.get("duration") or info["format"]["duration"]),
    }


def ffmpeg_tone(path: Path, *, seconds: float = 2.5, sample_rate: int = 44100, channels: int = 1) -> Path:
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            f"sine=frequency=440:duration={seconds}:sample_rate={sample_rate}",
            "-ac",
            str(channels),
            str(path),
        ],
        check=True,
    )
    return path


def media_files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file())


def ffmpeg_peaks(path: Path, *, channels: int, buckets: int = 800) -> list[float]:
    """Reference waveform: ffmpeg decodes to 16-bit PCM, numpy takes the max |sample| per bucket."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-f", "s16le", "-acodec", "pcm_s16le", "-"],
        check=True,
        capture_output=True,
    ).stdout
    import numpy as np

    magnitude = np.abs(np.frombuffer(raw, dtype="<i2").reshape(-1, channels).astype(np.float64)).max(axis=1) / 32768
    edges = np.linspace(0, len(magnitude), buckets + 1).astype(int)
    return [float(magnitude[a:b].max()) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def real_stereo_clip_attach(clip, *, shared_dir: Path, folder: Path):
    """Store ../shared's 34.wav (20 s of a real stereo recording, 44.1 kHz, 16 bit) as the clip's audio."""
    import shutil

    from annotation.services.audio import clip_attach_audio

    path = folder / "34.wav"
    shutil.copy(shared_dir / "datasets" / "audio" / "34.wav", path)
    clip_attach_audio(clip=clip, file=path, file_name="34.wav")
    clip.refresh_from_db()
    return clip
