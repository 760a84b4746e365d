"""The rater copy of a clip's audio: its samples and nothing else.

An uploaded file carries more than sound: WAV LIST/INFO, bext, iXML and cue chunks, ID3 tags, Vorbis
comments, MP4 atoms, embedded pictures. A source file name or a title in any of them would reach a
rater who opens the file. So raters never get the uploaded file (admins, annotators and reviewers
still do): they get this copy, made once when the audio is stored. The file is decoded
(corpus/services/ffmpeg.py: WAV by pydub itself, everything else by ffmpeg, the bundled one when the
machine has none; only the audio samples are taken) and the samples are written again by Python's
`wave` module as 16-bit PCM, which writes exactly the RIFF header, the `fmt ` chunk (channels, rate,
sample width) and the `data` chunk. The copy is stored under a random key (`Clip.rater_audio`, see
corpus.models.rater_audio_path).

Clips stored before the copy existed get it from the `build_rater_audio` command (and its data
migration), or, failing that, the first time a rater asks for them (`clip_rater_audio_ensure`).
"""

import io
import shutil
import tempfile
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.files.base import ContentFile
from pydub import AudioSegment

from corpus.models import Clip
from corpus.services.ffmpeg import audio_decode

RATER_SAMPLE_WIDTH = 2  # bytes: 16-bit PCM, which every browser plays


class RaterAudioUnavailableError(FileNotFoundError):
    """No rater copy can be had: the clip has no audio, its file is missing or cannot be decoded."""


def rater_wav_bytes(segment: AudioSegment) -> bytes:
    """The decoded samples as a WAV holding only RIFF, `fmt ` and `data`."""
    segment = segment.set_sample_width(RATER_SAMPLE_WIDTH)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(segment.channels)
        output.setsampwidth(RATER_SAMPLE_WIDTH)
        output.setframerate(segment.frame_rate)
        output.writeframes(segment.raw_data)
    return buffer.getvalue()


def rater_wav_from_path(path: Path | str) -> bytes:
    """Decode an audio file and return its rater copy (raises what pydub raises for undecodable files)."""
    return rater_wav_bytes(audio_decode(path))


@contextmanager
def stored_audio_path(clip: Clip) -> Iterator[Path]:
    """A local path to the clip's stored audio (a temporary copy: storage may be S3), extension kept for ffmpeg."""
    suffix = Path(clip.audio.name).suffix
    with clip.audio.storage.open(clip.audio.name, "rb") as stored, tempfile.NamedTemporaryFile(suffix=suffix) as local:
        shutil.copyfileobj(stored, local)
        local.flush()
        yield Path(local.name)


def clip_rater_audio_build(*, clip: Clip) -> bool:
    """Make the rater copy of a clip whose audio has none yet; True when this call stored it.

    Safe to run twice at once (two first requests): the copy is recorded with a conditional UPDATE on
    the audio it was made from, and the loser deletes its own file.
    """
    if not clip.audio or clip.rater_audio:
        return False
    try:
        with stored_audio_path(clip) as path:
            content = rater_wav_from_path(path)
    except FileNotFoundError:
        raise RaterAudioUnavailableError("the audio file of this clip is missing from storage") from None
    except Exception as error:  # pydub raises several types for undecodable files
        raise RaterAudioUnavailableError(f"the audio of this clip cannot be decoded ({type(error).__name__})") from None
    storage = clip.rater_audio.storage
    name = storage.save(clip.rater_audio.field.generate_filename(clip, "rater.wav"), ContentFile(content))
    stored = Clip.objects.filter(pk=clip.pk, audio=clip.audio.name, rater_audio="").update(rater_audio=name)
    if not stored:
        storage.delete(name)
        clip.refresh_from_db(fields=["audio", "rater_audio"])
        return False
    clip.rater_audio.name = name
    return True


def clip_rater_audio_ensure(*, clip: Clip):
    """The clip's rater copy (a FieldFile), made now if the clip predates it; raises RaterAudioUnavailableError."""
    if not clip.audio:
        raise RaterAudioUnavailableError("this clip has no audio")
    if not clip.rater_audio:
        clip_rater_audio_build(clip=clip)
    if not clip.rater_audio:
        raise RaterAudioUnavailableError("the audio of this clip changed while its rater copy was made; ask again")
    return clip.rater_audio


def rater_audio_build_missing(*, clips) -> dict:
    """Build the missing rater copies of `clips`; undecodable or missing files are reported, not fatal."""
    summary = {"built": 0, "already_there": 0, "failed": []}
    for clip in clips:
        if clip.rater_audio:
            summary["already_there"] += 1
            continue
        try:
            built = clip_rater_audio_build(clip=clip)
        except Exception as error:  # one bad file must not stop the others; it is reported
            first_line = (str(error).splitlines() or [""])[0]
            summary["failed"].append(f"{clip}: {type(error).__name__} {first_line}".strip())
            continue
        summary["built" if built else "already_there"] += 1
    return summary
