"""Audio ingestion: decode a file with pydub/ffmpeg, measure it, and store it on a Clip.

Decoding happens before anything is written, so a file that is not audio is refused with an error
naming it and leaves no row change and no stored file behind. Files go to the configured default
storage (local folder or S3) under a random name (corpus.models.clip_audio_path): a changed
file never overwrites the stored copy of the old one, so a failed transaction cannot lose audio.
Storing a file also stores its rater copy (services/rater_audio.py: the samples only, no metadata).
"""

import hashlib
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import transaction
from pydub import AudioSegment

from corpus.models import Clip
from corpus.services.ffmpeg import audio_decode
from corpus.services.importing import ImportDataError
from corpus.services.rater_audio import rater_wav_from_path

WAVEFORM_BUCKETS = 800
HASH_CHUNK_BYTES = 1024 * 1024


class AudioDecodeError(ImportDataError):
    """The file is not decodable audio; the message names it."""


@dataclass(frozen=True)
class AudioInfo:
    sha256: str
    duration_seconds: float
    sample_rate: int
    channels: int
    waveform_peaks: list[float]


@dataclass(frozen=True)
class AudioAttachment:
    """A decoded file ready to be stored on a clip."""

    clip: Clip
    path: Path
    file_name: str
    info: AudioInfo


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def waveform_peaks_compute(segment: AudioSegment, buckets: int = WAVEFORM_BUCKETS) -> list[float]:
    """Max |amplitude| per bucket over all channels, scaled to [0, 1] by full scale, 3 decimals."""
    samples = np.asarray(segment.get_array_of_samples(), dtype=np.float64)
    frames = samples.reshape(-1, segment.channels)
    if len(frames) == 0:
        return []
    full_scale = float(2 ** (8 * segment.sample_width - 1))
    magnitude = np.abs(frames).max(axis=1) / full_scale
    bucket_count = min(buckets, len(magnitude))
    edges = np.linspace(0, len(magnitude), bucket_count + 1).astype(int)
    peaks = np.maximum.reduceat(magnitude, edges[:-1])
    return [round(float(value), 3) for value in np.clip(peaks, 0.0, 1.0)]


def audio_inspect(*, path: Path | str, file_name: str) -> AudioInfo:
    """Decode the file and measure it. Raises AudioDecodeError (naming `file_name`) if it is not audio."""
    path = Path(path)
    try:
        # pydub reads PCM WAV itself; everything else goes through ffmpeg (the system's or the bundled one).
        segment = audio_decode(path)
    except Exception as error:  # pydub raises several types (CouldntDecodeError, IndexError on no audio stream, ...)
        reason = _decode_failure_reason(error).replace(f"{path}: ", "")  # the path may be a temporary copy
        raise AudioDecodeError(f"{file_name}: not decodable audio ({reason})") from None
    frame_count = int(segment.frame_count())
    if frame_count == 0 or not segment.frame_rate:
        raise AudioDecodeError(f"{file_name}: not decodable audio (no audio samples)")
    return AudioInfo(
        sha256=file_sha256(path),
        duration_seconds=frame_count / segment.frame_rate,
        sample_rate=int(segment.frame_rate),
        channels=int(segment.channels),
        waveform_peaks=waveform_peaks_compute(segment),
    )


def _decode_failure_reason(error: Exception) -> str:
    """ffmpeg's last message line (e.g. "Invalid data found when processing input"), else the error's first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[-1] if "Output from ffmpeg" in str(error) else lines[0]


def clip_attach_audio(*, clip: Clip, file: Path | str | BinaryIO, file_name: str) -> bool:
    """Decode `file` (a path or an open binary file) and store it as the clip's audio.

    Returns True when the clip changed, False when it already held this exact file (same sha256).
    """
    if isinstance(file, (str, Path)):
        if clip_audio_is_current(clip=clip, sha256=file_sha256(Path(file))):
            return False
        attachment = AudioAttachment(
            clip=clip, path=Path(file), file_name=file_name, info=audio_inspect(path=file, file_name=file_name)
        )
        return clips_store_audio(attachments=[attachment]) == 1
    # pydub and ffmpeg want a path whose extension says the format: copy the upload to a temporary file.
    suffix = Path(file_name).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as temporary:
        if getattr(file, "seekable", lambda: False)():
            file.seek(0)
        shutil.copyfileobj(file, temporary)
        temporary.flush()
        info = audio_inspect(path=temporary.name, file_name=file_name)
        attachment = AudioAttachment(clip=clip, path=Path(temporary.name), file_name=file_name, info=info)
        return clips_store_audio(attachments=[attachment]) == 1


def clip_audio_is_current(*, clip: Clip, sha256: str) -> bool:
    return bool(clip.audio) and clip.sha256 == sha256 and clip.audio.storage.exists(clip.audio.name)


def clips_store_audio(*, attachments: Iterable[AudioAttachment]) -> int:
    """Store already decoded files on their clips in one transaction; returns how many clips changed.

    If anything fails, the files stored so far are deleted again; replaced files are deleted only
    after the transaction commits.
    """
    stored_names: list[tuple] = []
    changed = 0
    try:
        with transaction.atomic():
            for attachment in attachments:
                clip, info = attachment.clip, attachment.info
                if clip_audio_is_current(clip=clip, sha256=info.sha256):
                    continue
                old_names = [field.name for field in (clip.audio, clip.rater_audio) if field]
                with open(attachment.path, "rb") as handle:
                    clip.audio.save(_stored_file_name(attachment.file_name, info.sha256), File(handle), save=False)
                stored_names.append((clip.audio.storage, clip.audio.name))
                clip.rater_audio.save("rater.wav", ContentFile(rater_wav_from_path(attachment.path)), save=False)
                stored_names.append((clip.rater_audio.storage, clip.rater_audio.name))
                clip.sha256 = info.sha256
                clip.duration_seconds = info.duration_seconds
                clip.sample_rate = info.sample_rate
                clip.channels = info.channels
                clip.waveform_peaks = info.waveform_peaks
                clip.save(
                    update_fields=[
                        "audio",
                        "rater_audio",
                        "sha256",
                        "duration_seconds",
                        "sample_rate",
                        "channels",
                        "waveform_peaks",
                        "updated_at",
                    ]
                )
                for old_name in old_names:
                    if old_name not in (clip.audio.name, clip.rater_audio.name):
                        transaction.on_commit(_deleter(clip.audio.storage, old_name))
                changed += 1
    except BaseException:
        for storage, name in stored_names:
            storage.delete(name)
        raise
    return changed


def _stored_file_name(file_name: str, sha256: str) -> str:
    name = Path(file_name)
    return f"{name.stem}-{sha256[:12]}{name.suffix.lower()}"


def _deleter(storage, name: str):
    return lambda: storage.delete(name)
