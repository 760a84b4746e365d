"""The clip spectrogram (mel or linear, mixed or per channel, a grey PNG small enough for the page) and the
per-channel waveform: computed on the server, cached in storage, served to annotators only."""

import base64
import io
import struct

import numpy as np
import pytest
from PIL import Image

from annotation.services.spectrogram import (
    LINEAR_BINS,
    MEL_BANDS,
    clip_spectrogram_ensure,
    log_linear_image,
    log_mel_image,
    mel_filterbank,
)
from tests.annotation.audio_helpers import real_stereo_clip_attach
from tests.annotation.workspace_data import api_client
from tests.ratings.campaign_data import clip_audio_attach


def test_a_tone_lights_the_mel_band_of_its_frequency():
    rate = 16000
    time = np.arange(rate * 2) / rate
    image = log_mel_image(np.sin(2 * np.pi * 1000 * time), rate)
    assert image.shape[0] == MEL_BANDS and 200 <= image.shape[1] <= 1600
    loudest_band = int(np.argmax(image.mean(axis=1)))
    filters = mel_filterbank(sample_rate=rate, fft_size=1024)
    frequencies = np.linspace(0, rate / 2, filters.shape[1])
    centre = frequencies[int(np.argmax(filters[loudest_band]))]
    assert abs(centre - 1000) < 60
    assert image.max() == 1.0 and image.min() >= 0.0


@pytest.mark.django_db
def test_the_view_serves_a_png_computed_once(clip, media_root, make_user, monkeypatch):
    clip_audio_attach(clip, seconds=1.0)
    annotator, rater = make_user("ann-s", "annotator"), make_user("rat-s", "rater")
    response = api_client(annotator).get(f"/clips/{clip.pk}/spectrogram.png")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    png = b"".join(response.streaming_content)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert height == MEL_BANDS and width >= 200
    stored = list((media_root / "spectrograms").iterdir())
    assert len(stored) == 1

    from annotation.services import spectrogram

    monkeypatch.setattr(spectrogram, "_decoded", lambda clip: pytest.fail("decoded again"))
    assert clip_spectrogram_ensure(clip=clip) == f"spectrograms/{stored[0].name}"
    assert api_client(annotator).get(f"/clips/{clip.pk}/spectrogram.png?scale=log").status_code == 400
    assert api_client(rater).get(f"/clips/{clip.pk}/spectrogram.png").status_code == 403
    clip.audio = ""
    clip.save()
    assert api_client(annotator).get(f"/clips/{clip.pk}/spectrogram.png").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", [".flac", ".mp3"])
def test_compressed_audio_gets_a_spectrogram_with_its_tone(clip, media_root, tmp_path, suffix):
    from corpus.services.audio import clip_attach_audio
    from tests.annotation.audio_helpers import ffmpeg_tone

    path = ffmpeg_tone(tmp_path / f"tone{suffix}", seconds=1.5, sample_rate=22050)
    clip_attach_audio(clip=clip, file=path, file_name=path.name)
    clip.refresh_from_db()
    name = clip_spectrogram_ensure(clip=clip)
    assert name.startswith(f"spectrograms/{clip.sha256}")
    assert struct.unpack(">II", (media_root / name).read_bytes()[16:24])[1] == MEL_BANDS
    # Decoded from the stored file, the 440 Hz tone lights the band around 440 Hz.
    from annotation.services.spectrogram import _decoded, channel_samples

    samples, rate = _decoded(clip)
    assert rate == 22050 and abs(len(samples) / rate - 1.5) < 0.05
    image = log_mel_image(channel_samples(samples, "mix"), rate)
    filters = mel_filterbank(sample_rate=rate, fft_size=1024)
    centre = np.linspace(0, rate / 2, filters.shape[1])[int(np.argmax(filters[int(np.argmax(image.mean(axis=1)))]))]
    assert abs(centre - 440) < 40


def test_the_linear_scale_puts_a_tone_at_its_frequency():
    rate = 16000
    time = np.arange(rate) / rate
    image = log_linear_image(np.sin(2 * np.pi * 3000 * time), rate)
    assert image.shape[0] == LINEAR_BINS
    row = int(np.argmax(image.mean(axis=1)))
    assert abs((row + 0.5) * (rate / 2) / LINEAR_BINS - 3000) < rate / 2 / LINEAR_BINS


@pytest.fixture
def real_stereo_clip(clip, media_root, shared_dir, tmp_path):
    """34.wav of the THumBS study: 20 s of a real stereo recording (44.1 kHz, 16 bit)."""
    real_stereo_clip_attach(clip, shared_dir=shared_dir, folder=tmp_path)
    assert (clip.channels, round(clip.duration_seconds)) == (2, 20)
    return clip


@pytest.mark.django_db
@pytest.mark.parametrize("scale", ["mel", "linear"])
@pytest.mark.parametrize("channel", ["mix", "left", "right"])
def test_a_real_20_second_stereo_clip_gets_images_under_150_kb(real_stereo_clip, media_root, scale, channel):
    name = clip_spectrogram_ensure(clip=real_stereo_clip, scale=scale, channel=channel)
    png = (media_root / name).read_bytes()
    assert len(png) <= 150_000, f"{scale}/{channel}: {len(png)} bytes"
    image = Image.open(io.BytesIO(png))
    assert image.mode == "L" and image.size[1] == (MEL_BANDS if scale == "mel" else LINEAR_BINS)
    assert image.size[0] >= 1600  # ~10 ms per column of the 20 s


@pytest.mark.django_db
def test_left_and_right_are_the_channels_of_the_file(real_stereo_clip, media_root, make_user):
    from annotation.services.spectrogram import _decoded, log_mel_image

    samples, rate = _decoded(real_stereo_clip)
    assert not np.allclose(samples[:, 0], samples[:, 1])  # the recording's channels differ
    client = api_client(make_user("ann-c", "annotator"))
    pngs = {}
    for channel in ("left", "right"):
        response = client.get(f"/clips/{real_stereo_clip.pk}/spectrogram.png?channel={channel}&scale=mel")
        assert response.status_code == 200
        pngs[channel] = np.asarray(Image.open(io.BytesIO(b"".join(response.streaming_content))), dtype=float)
        expected = np.flipud(log_mel_image(samples[:, 0 if channel == "left" else 1], rate)) * 255
        assert np.abs(pngs[channel] - expected).max() <= 255 / 63 / 2 + 1  # the image is that channel, quantised
    assert np.abs(pngs["left"] - pngs["right"]).mean() > 1


@pytest.mark.django_db
def test_the_waveform_has_each_channels_peaks_at_five_milliseconds(real_stereo_clip, make_user):
    from annotation.services.spectrogram import _decoded

    response = api_client(make_user("ann-w", "annotator")).get(f"/clips/{real_stereo_clip.pk}/waveform.json")
    assert response.status_code == 200
    data = __import__("json").loads(b"".join(response.streaming_content))
    assert data["channels"] == 2 and data["peaks_per_second"] == pytest.approx(200, abs=0.1)
    samples, rate = _decoded(real_stereo_clip)
    for channel, encoded in enumerate(data["peaks"]):
        peaks = np.frombuffer(base64.b64decode(encoded), dtype=np.uint8)
        assert len(peaks) == 4000
        # The bucket of 0.50-0.505 s holds that stretch's loudest sample (independently: numpy on the decoded file).
        stretch = np.abs(samples[int(0.5 * rate) : int(0.505 * rate), channel]).max()
        assert abs(int(peaks[100]) - round(stretch * 255)) <= 1


def _stereo_wav_write(path, *, rate: int, seconds: float) -> np.ndarray:
    """A 16-bit stereo WAV written with the standard library: left a loud 500 Hz tone, right a quiet 4 kHz one.
    Returns the frames as the file holds them, (frames, 2) int16, left first."""
    import wave

    time = np.arange(int(rate * seconds)) / rate
    left = np.round(0.8 * 32767 * np.sin(2 * np.pi * 500 * time)).astype("<i2")
    right = np.round(0.2 * 32767 * np.sin(2 * np.pi * 4000 * time)).astype("<i2")
    frames = np.stack([left, right], axis=1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames.tobytes())  # interleaved: left, right, left, right, ...
    return frames


def _wav_read_independently(path) -> np.ndarray:
    """(frames, channels) int16 of a PCM WAV, read with the wave module and numpy, not the product's decoder."""
    import wave

    with wave.open(str(path), "rb") as wav:
        assert wav.getsampwidth() == 2
        raw = wav.readframes(wav.getnframes())
        return np.frombuffer(raw, dtype="<i2").reshape(-1, wav.getnchannels())


@pytest.mark.django_db
def test_left_is_the_files_first_channel_by_an_independent_reader(clip, media_root, tmp_path, make_user):
    """Channel order checked against the file itself: a decoder that swapped left and right would still agree
    with its own output, so the expected values come from the WAV bytes (wave + numpy) and the tones' frequencies."""
    from annotation.services.spectrogram import _decoded
    from corpus.services.audio import clip_attach_audio

    rate = 16000
    path = tmp_path / "left-500-right-4000.wav"
    written = _stereo_wav_write(path, rate=rate, seconds=1.0)
    assert np.array_equal(_wav_read_independently(path), written)
    clip_attach_audio(clip=clip, file=path, file_name=path.name)
    clip.refresh_from_db()
    assert clip.channels == 2

    samples, decoded_rate = _decoded(clip)
    assert decoded_rate == rate
    assert np.array_equal(np.round(samples * 32768).astype(np.int64), written.astype(np.int64))

    client = api_client(make_user("ann-order", "annotator"))
    filters = mel_filterbank(sample_rate=rate, fft_size=1024)
    frequencies = np.linspace(0, rate / 2, filters.shape[1])
    for channel, tone in (("left", 500), ("right", 4000)):
        response = client.get(f"/clips/{clip.pk}/spectrogram.png?channel={channel}&scale=mel")
        assert response.status_code == 200
        image = np.asarray(Image.open(io.BytesIO(b"".join(response.streaming_content))), dtype=float)
        loudest_band = MEL_BANDS - 1 - int(np.argmax(image.mean(axis=1)))  # the PNG has low frequencies at the bottom
        centre = frequencies[int(np.argmax(filters[loudest_band]))]
        assert abs(centre - tone) < tone * 0.1, f"{channel}: loudest band at {centre:.0f} Hz, the file has {tone} Hz"

    response = client.get(f"/clips/{clip.pk}/waveform.json")
    data = __import__("json").loads(b"".join(response.streaming_content))
    left, right = (np.frombuffer(base64.b64decode(encoded), dtype=np.uint8) for encoded in data["peaks"])
    assert abs(int(left.max()) - round(0.8 * 255)) <= 1 and abs(int(right.max()) - round(0.2 * 255)) <= 1
