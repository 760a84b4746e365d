"""ffmpeg for decoding audio: the system's when one is on PATH, else the binary the `imageio-ffmpeg` package ships.

So a machine with nothing but Python imports MP3, FLAC and OGG. Decoding does not go through pydub's
`AudioSegment.from_file`, which finds ffmpeg on PATH only and asks `ffprobe` (which the PyPI package does
not ship) for the sample format first: here ffmpeg writes 16-bit PCM WAV and pydub reads that (a WAV file
pydub can read itself never goes through ffmpeg). Nothing in the product exports anything but WAV, which
pydub writes without ffmpeg.
"""

import functools
import shutil
import subprocess
from pathlib import Path

from pydub import AudioSegment
from pydub.audio_segment import fix_wav_headers
from pydub.exceptions import CouldntDecodeError

#: Seconds a decode may take before it is abandoned (a clip is seconds to minutes of audio).
DECODE_TIMEOUT_SECONDS = 300


@functools.cache
def ffmpeg_executable() -> str:
    """Path of the ffmpeg binary used for decoding; the system's takes precedence over the bundled one."""
    system = shutil.which("ffmpeg")
    if system:
        return system
    import imageio_ffmpeg  # ships a static ffmpeg build inside the wheel

    return imageio_ffmpeg.get_ffmpeg_exe()


def audio_decode(path: Path | str) -> AudioSegment:
    """The file's audio as a pydub segment. Raises CouldntDecodeError with ffmpeg's own message when it is not audio."""
    path = Path(path)
    if path.suffix.lower() == ".wav":
        try:
            return AudioSegment.from_wav(path)
        except Exception:  # noqa: BLE001 - a WAV layout pydub cannot read (float, ADPCM, ...): ffmpeg reads it
            pass
    command = [
        ffmpeg_executable(),
        "-nostdin",
        "-v",
        "error",
        "-i",
        str(path),
        "-vn",
        "-f",
        "wav",
        "-acodec",
        "pcm_s16le",
        "-",
    ]
    completed = subprocess.run(command, capture_output=True, check=False, timeout=DECODE_TIMEOUT_SECONDS)
    if completed.returncode != 0 or not completed.stdout:
        # pydub's wording, which callers already parse for ffmpeg's last line (corpus.services.audio)
        raise CouldntDecodeError(
            f"Decoding failed. ffmpeg returned error code: {completed.returncode}\n\nOutput from ffmpeg/avlib:\n\n"
            + completed.stderr.decode(errors="ignore")
        )
    data = bytearray(completed.stdout)
    fix_wav_headers(data)  # a WAV written to a pipe has no sizes in its header
    return AudioSegment(data=bytes(data))
