"""Reference measurements of audio files made with ffmpeg and the wave module, independent of pydub.

ffmpeg is the one the product decodes with (corpus/services/ffmpeg.py: the system's, else the binary the
imageio-ffmpeg wheel ships), so the tests need nothing the README does not list. That wheel has no ffprobe:
stream facts come from what `ffmpeg -i` prints, durations from counting the frames ffmpeg decodes.
"""

import re
import subprocess
from pathlib import Path

from corpus.services.ffmpeg import ffmpeg_executable

_CHANNEL_LAYOUTS = {"mono": 1, "stereo": 2, "2.1": 3, "quad": 4, "5.0": 5, "5.1": 6, "7.1": 8}


def ffmpeg_audio_facts(path: Path) -> dict:
    """sample_rate and channels of the first audio stream as ffmpeg reports them, and the duration (seconds) of
    the audio it decodes: decoded frames / sample rate."""
    described = subprocess.run(
        [ffmpeg_executable(), "-hide_banner", "-i", str(path)], capture_output=True, text=True, check=False
    ).stderr  # with no output file ffmpeg exits 1 after describing the input
    stream = re.search(r"Stream #\S+.*?Audio: .*?, (\d+) Hz, ([^,\n]+)", described)
    assert stream, f"ffmpeg found no audio stream in {path}:\n{described}"
    layout = stream.group(2).strip()
    counted = re.fullmatch(r"(\d+) channels", layout)
    channels = int(counted.group(1)) if counted else _CHANNEL_LAYOUTS[layout.split("(")[0].strip()]
    raw = ffmpeg_pcm16(path)
    sample_rate = int(stream.group(1))
    return {"sample_rate": sample_rate, "channels": channels, "duration": len(raw) / (2 * channels) / sample_rate}


def ffmpeg_pcm16(path: Path) -> bytes:
    """The first audio stream decoded by ffmpeg: interleaved 16-bit little-endian samples at the file's own rate."""
    return subprocess.run(
        [ffmpeg_executable(), "-v", "error", "-i", str(path), "-map", "0:a:0", "-f", "s16le", "-c:a", "pcm_s16le", "-"],
        check=True,
        capture_output=True,
    ).stdout


def ffmpeg_tone(path: Path, *, seconds: float = 2.5, sample_rate: int = 44100, channels: int = 1) -> Path:
    subprocess.run(
        [
            ffmpeg_executable(),
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
        [ffmpeg_executable(), "-v", "error", "-i", str(path), "-f", "s16le", "-acodec", "pcm_s16le", "-"],
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

    from corpus.services.audio import clip_attach_audio

    path = folder / "34.wav"
    shutil.copy(shared_dir / "datasets" / "audio" / "34.wav", path)
    clip_attach_audio(clip=clip, file=path, file_name="34.wav")
    clip.refresh_from_db()
    return clip
