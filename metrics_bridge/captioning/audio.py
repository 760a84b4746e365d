"""The stored clip transcoded to what a provider accepts: format, sample rate, channels, and a length limit.

Decoding goes through corpus/services/ffmpeg.py (ffmpeg, the bundled one when the machine has none, for
anything but plain WAV); encoding MP3 through the same ffmpeg. A clip longer than the provider's limit
(Qwen-Audio: 30 s) is cut to its first `max_seconds`, and the answer carries a note saying so.
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from pathlib import PurePath

from pydub import AudioSegment

from corpus.services.ffmpeg import audio_decode, ffmpeg_executable

MIME_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac"}


class AudioPrepareError(ValueError):
    """The clip's audio could not be decoded or encoded; the message names the clip."""


@dataclass(frozen=True)
class AudioSpec:
    """What a provider accepts: container/codec, sample rate, channels, and the longest clip (None: no limit)."""

    format: str = "wav"  # 16-bit PCM WAV, or mp3
    sample_rate: int = 16_000
    channels: int = 1
    max_seconds: float | None = None

    @property
    def mime_type(self) -> str:
        return MIME_TYPES[self.format]

    def label(self) -> str:
        limit = f", first {self.max_seconds:g} s" if self.max_seconds else ""
        return f"{self.format} {self.sample_rate} Hz {'mono' if self.channels == 1 else f'{self.channels} ch'}{limit}"


@dataclass(frozen=True)
class PreparedAudio:
    data: bytes
    format: str
    mime_type: str
    sample_rate: int
    channels: int
    seconds: float  # what is sent
    original_seconds: float  # the stored clip

    @property
    def trimmed(self) -> bool:
        return self.seconds < self.original_seconds - 1e-3


def prepare_audio(data: bytes, spec: AudioSpec, *, source_name: str) -> PreparedAudio:
    """Decode `data` (any format ffmpeg reads) and encode it as `spec` says. Raises AudioPrepareError."""
    hint = PurePath(source_name).suffix.lower().lstrip(".") or None
    try:
        with tempfile.NamedTemporaryFile(suffix=f".{hint}" if hint else "") as local:
            local.write(data)
            local.flush()
            segment = audio_decode(local.name)
    except Exception as error:  # pydub raises several types (CouldntDecodeError, IndexError, ...)
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise AudioPrepareError(
            f"{source_name}: audio cannot be decoded ({lines[-1] if lines else type(error).__name__})"
        ) from None
    original_seconds = len(segment) / 1000
    if original_seconds <= 0:
        raise AudioPrepareError(f"{source_name}: the audio has no samples")
    if spec.max_seconds and original_seconds > spec.max_seconds:
        segment = segment[: int(spec.max_seconds * 1000)]
    segment = segment.set_channels(spec.channels).set_frame_rate(spec.sample_rate).set_sample_width(2)
    buffer = io.BytesIO()
    try:
        if spec.format != "wav":  # pydub writes WAV itself; other formats go through ffmpeg
            AudioSegment.converter = ffmpeg_executable()
        segment.export(buffer, format=spec.format)
    except Exception as error:
        raise AudioPrepareError(f"{source_name}: cannot encode the audio as {spec.format} ({error})") from None
    return PreparedAudio(
        data=buffer.getvalue(),
        format=spec.format,
        mime_type=spec.mime_type,
        sample_rate=spec.sample_rate,
        channels=spec.channels,
        seconds=len(segment) / 1000,
        original_seconds=original_seconds,
    )


def trim_note(audio: PreparedAudio, *, model: str) -> str:
    """The note stored with a caption made from a trimmed clip ('' when the whole clip was sent)."""
    if not audio.trimmed:
        return ""
    return (
        f"Only the first {audio.seconds:g} s of the {audio.original_seconds:.1f} s clip were sent: "
        f"{model} accepts at most {audio.seconds:g} s of audio."
    )
