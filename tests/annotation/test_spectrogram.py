"""The clip spectrogram: log-mel image computed on the server, cached in storage, served to annotators only."""

import struct

import numpy as np
import pytest

from annotation.services.spectrogram import MEL_BANDS, clip_spectrogram_ensure, log_mel_image, mel_filterbank
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

    monkeypatch.setattr(spectrogram, "_decoded_mono", lambda clip: pytest.fail("decoded again"))
    assert clip_spectrogram_ensure(clip=clip) == f"spectrograms/{stored[0].name}"
    assert api_client(rater).get(f"/clips/{clip.pk}/spectrogram.png").status_code == 403
    clip.audio = ""
    clip.save()
    assert api_client(annotator).get(f"/clips/{clip.pk}/spectrogram.png").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", [".flac", ".mp3"])
def test_compressed_audio_gets_a_spectrogram_with_its_tone(clip, media_root, tmp_path, suffix):
    from annotation.services.audio import clip_attach_audio
    from tests.annotation.audio_helpers import ffmpeg_tone

    path = ffmpeg_tone(tmp_path / f"tone{suffix}", seconds=1.5, sample_rate=22050)
    clip_attach_audio(clip=clip, file=path, file_name=path.name)
    clip.refresh_from_db()
    name = clip_spectrogram_ensure(clip=clip)
    assert name.startswith(f"spectrograms/{clip.sha256}")
    assert struct.unpack(">II", (media_root / name).read_bytes()[16:24])[1] == MEL_BANDS
    # Decoded from the stored file, the 440 Hz tone lights the band around 440 Hz.
    from annotation.services.spectrogram import _decoded_mono

    samples, rate = _decoded_mono(clip)
    assert rate == 22050 and abs(len(samples) / rate - 1.5) < 0.05
    image = log_mel_image(samples, rate)
    filters = mel_filterbank(sample_rate=rate, fft_size=1024)
    centre = np.linspace(0, rate / 2, filters.shape[1])[int(np.argmax(filters[int(np.argmax(image.mean(axis=1)))]))]
    assert abs(centre - 440) < 40
