"""Decoding and storing clip audio: WAV 16/24-bit, FLAC, MP3, OGG measured against ffmpeg; non-audio refused."""

import hashlib
import re
import wave

import numpy as np
import pytest

from corpus.models import Clip
from corpus.services.audio import AudioDecodeError, clip_attach_audio
from tests.annotation.audio_helpers import ffmpeg_audio_facts, ffmpeg_peaks, ffmpeg_tone, media_files

REAL_CLIPS = ["34.wav", "35.wav", "36.wav", "Example.flac"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", REAL_CLIPS)
def test_real_clips_are_measured_like_ffmpeg_and_stored_byte_for_byte(shared_dir, media_root, clip, name):
    source = shared_dir / "datasets" / "audio" / name
    reference = ffmpeg_audio_facts(source)

    changed = clip_attach_audio(clip=clip, file=source, file_name=name)

    clip.refresh_from_db()
    assert changed
    assert (clip.sample_rate, clip.channels) == (reference["sample_rate"], reference["channels"])
    assert clip.duration_seconds == pytest.approx(reference["duration"], abs=1e-3)
    assert clip.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert len(clip.waveform_peaks) == 800
    assert all(0 <= peak <= 1 and round(peak, 3) == peak for peak in clip.waveform_peaks)
    reference_peaks = ffmpeg_peaks(source, channels=reference["channels"])
    assert max(abs(a - b) for a, b in zip(clip.waveform_peaks, reference_peaks, strict=True)) <= 0.0015
    assert max(clip.waveform_peaks) > 0
    stored = media_root / clip.audio.name
    assert stored.read_bytes() == source.read_bytes()
    # A random key: nothing in a stored name (or an S3 URL) names the clip, its dataset or its upload.
    assert re.fullmatch(r"audio/[0-9a-f]{32}\.(wav|flac)", clip.audio.name)


def test_the_real_clips_are_what_the_readme_says(shared_dir):
    """Guards the test data itself: 34 is 16-bit, 35/36 are 24-bit, all stereo."""
    widths = {}
    for name in ("34.wav", "35.wav", "36.wav"):
        with open(shared_dir / "datasets" / "audio" / name, "rb") as handle:
            header = handle.read(64)
        widths[name] = int.from_bytes(header[34:36], "little")
    assert widths == {"34.wav": 16, "35.wav": 24, "36.wav": 24}


@pytest.mark.django_db
def test_16_bit_wav_duration_and_peaks_match_the_wave_module(shared_dir, media_root, clip):
    source = shared_dir / "datasets" / "audio" / "34.wav"
    with wave.open(str(source)) as reader:
        frame_rate, channels, frames = reader.getframerate(), reader.getnchannels(), reader.getnframes()
        samples = np.frombuffer(reader.readframes(frames), dtype="<i2").reshape(-1, channels)
    magnitude = np.abs(samples.astype(np.float64)).max(axis=1) / 32768
    edges = np.linspace(0, len(magnitude), 801).astype(int)
    expected_peaks = [round(float(magnitude[a:b].max()), 3) for a, b in zip(edges[:-1], edges[1:], strict=True)]

    clip_attach_audio(clip=clip, file=source, file_name="34.wav")

    clip.refresh_from_db()
    assert clip.duration_seconds == frames / frame_rate
    assert (clip.sample_rate, clip.channels) == (frame_rate, channels)
    assert clip.waveform_peaks == expected_peaks


@pytest.mark.django_db
@pytest.mark.parametrize(("extension", "sample_rate", "channels"), [("mp3", 44100, 2), ("ogg", 22050, 1)])
def test_mp3_and_ogg_made_with_ffmpeg(tmp_path, media_root, clip, extension, sample_rate, channels):
    source = ffmpeg_tone(tmp_path / f"tone.{extension}", seconds=2.5, sample_rate=sample_rate, channels=channels)
    reference = ffmpeg_audio_facts(source)

    clip_attach_audio(clip=clip, file=source, file_name=source.name)

    clip.refresh_from_db()
    assert (
        (clip.sample_rate, clip.channels)
        == (reference["sample_rate"], reference["channels"])
        == (sample_rate, channels)
    )
    # MP3 frames pad the start and end (encoder delay and padding): durations agree to a frame or two.
    assert clip.duration_seconds == pytest.approx(reference["duration"], abs=0.05)
    assert clip.duration_seconds == pytest.approx(2.5, abs=0.03)
    assert clip.audio.name.endswith(f".{extension}")
    reference_peaks = ffmpeg_peaks(source, channels=channels)
    assert len(clip.waveform_peaks) == len(reference_peaks) == 800
    assert max(abs(a - b) for a, b in zip(clip.waveform_peaks, reference_peaks, strict=True)) <= 0.0015


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.wav", b"this is a text file, not audio\n" * 20),
        ("noise.mp3", bytes(range(256)) * 40),
        ("empty.flac", b""),
    ],
)
def test_non_audio_is_refused_naming_the_file_and_nothing_is_saved(tmp_path, media_root, clip, name, content):
    fake = tmp_path / name
    fake.write_bytes(content)
    before = list(Clip.objects.values_list())

    with pytest.raises(AudioDecodeError, match=rf"^{name}: not decodable audio"):
        clip_attach_audio(clip=clip, file=fake, file_name=name)

    assert list(Clip.objects.values_list()) == before
    assert media_files(media_root) == []


@pytest.mark.django_db
def test_an_open_file_can_be_attached_and_the_same_file_twice_changes_nothing(shared_dir, media_root, clip):
    source = shared_dir / "datasets" / "audio" / "Example.flac"
    with open(source, "rb") as handle:
        assert clip_attach_audio(clip=clip, file=handle, file_name="Example.flac")
    row = list(Clip.objects.filter(pk=clip.pk).values_list())

    assert not clip_attach_audio(clip=clip, file=source, file_name="Example.flac")

    assert list(Clip.objects.filter(pk=clip.pk).values_list()) == row
    clip.refresh_from_db()
    stored = sorted(p.relative_to(media_root).as_posix() for p in media_files(media_root))
    assert stored == sorted([clip.audio.name, clip.rater_audio.name]), "the file and its rater copy, once"


@pytest.mark.django_db
def test_replacing_audio_deletes_the_old_file_after_commit(
    shared_dir, media_root, clip, django_capture_on_commit_callbacks
):
    audio_dir = shared_dir / "datasets" / "audio"
    clip_attach_audio(clip=clip, file=audio_dir / "34.wav", file_name="34.wav")
    old_name = clip.audio.name

    with django_capture_on_commit_callbacks(execute=True):
        clip_attach_audio(clip=clip, file=audio_dir / "35.wav", file_name="35.wav")

    stored = sorted(p.relative_to(media_root).as_posix() for p in media_files(media_root))
    assert stored == sorted([clip.audio.name, clip.rater_audio.name]), "the old file and its rater copy are gone"
    assert clip.audio.name != old_name
    assert re.fullmatch(r"audio/[0-9a-f]{32}\.wav", clip.audio.name)
    assert re.fullmatch(r"rater-audio/[0-9a-f]{32}\.wav", clip.rater_audio.name)


@pytest.mark.django_db
def test_an_uploaded_non_audio_file_is_refused_by_its_own_name(media_root, clip):
    import io

    upload = io.BytesIO(b"<html>not audio</html>" * 50)

    with pytest.raises(AudioDecodeError) as raised:
        clip_attach_audio(clip=clip, file=upload, file_name="upload.ogg")

    assert str(raised.value).startswith("upload.ogg: not decodable audio")
    assert "/tmp" not in str(raised.value)
    assert media_files(media_root) == []
