"""The zoomed stretch of a spectrogram: computed for [start, end] at the page's pixel width, sharper in time
than the stored whole-clip image stretched, as bright as the whole-clip image, and served like it."""

import io
import struct

import numpy as np
import pytest
from PIL import Image

from annotation.services.spectrogram import LINEAR_BINS, MEL_BANDS, log_linear_image
from annotation.services.spectrogram_zoom import spectrogram_range_image
from tests.annotation.audio_helpers import real_stereo_clip_attach
from tests.annotation.workspace_data import api_client

RATE = 44100


def _click_train() -> np.ndarray:
    """20 s of silence with a 2 kHz tone burst from 10.00 to 10.05 s (the physical truth the images are checked on)."""
    samples = np.zeros(RATE * 20)
    burst = np.arange(int(0.05 * RATE)) / RATE
    samples[10 * RATE : 10 * RATE + len(burst)] = np.sin(2 * np.pi * 2000 * burst)
    return samples


def _lit_seconds(image: np.ndarray, start: float, end: float) -> float:
    """Seconds of columns whose loudest cell is within 20 dB of the top."""
    lit = image.max(axis=0) >= 0.75
    return lit.sum() * (end - start) / image.shape[1]


def test_a_50_ms_burst_is_sharper_zoomed_than_stretched_from_the_whole_clip():
    samples = _click_train()
    start, end, columns = 9.8, 10.3, 1000
    zoomed = spectrogram_range_image(samples, RATE, scale="linear", start=start, end=end, columns=columns)
    assert zoomed.shape == (LINEAR_BINS, columns)
    whole = log_linear_image(samples, RATE)
    first = int(start / 20 * whole.shape[1])
    last = int(np.ceil(end / 20 * whole.shape[1]))
    stretched = whole[:, first:last]
    assert stretched.shape[1] < 50  # what the page had to stretch over 1000 pixels
    truth = 0.05
    zoomed_error = abs(_lit_seconds(zoomed, start, end) - truth)
    stretched_error = abs(_lit_seconds(stretched, start, end) - truth)
    assert zoomed_error < stretched_error and zoomed_error < 0.03
    # the burst sits where it is in time: 10.00-10.05 s is columns 400-500 of 9.8-10.3 s
    lit = np.flatnonzero(zoomed.max(axis=0) >= 0.75)
    assert 380 <= lit.min() and lit.max() <= 520
    # and at its frequency: 2 kHz on a linear axis to 22.05 kHz
    row = int(np.argmax(zoomed[:, lit].mean(axis=1)))
    assert abs(row - 2000 / (RATE / 2) * LINEAR_BINS) <= 2
    # levels are relative to the whole clip, as in the stored image (its loudest cell is the burst too)
    assert zoomed.max() == pytest.approx(1.0, abs=0.05)


@pytest.mark.django_db
def test_the_view_serves_the_stretch_at_the_asked_width(clip, media_root, make_user, shared_dir, tmp_path):
    real_stereo_clip_attach(clip, shared_dir=shared_dir, folder=tmp_path)
    annotator, rater = make_user("ann-z", "annotator"), make_user("rat-z", "rater")
    url = f"/clips/{clip.pk}/spectrogram.png?scale=mel&channel=left&start=2.5&end=3.5&columns=900"
    response = api_client(annotator).get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    width, height = struct.unpack(">II", response.content[16:24])
    assert (width, height) == (900, MEL_BANDS)
    grey = np.asarray(Image.open(io.BytesIO(response.content)))
    assert grey.std() > 5  # a real recording, not a blank image (no mel band left empty by the short window)
    assert (grey.max(axis=1) > 0).all()
    client = api_client(annotator)
    for bad in (
        "start=3&end=2&columns=900",
        "start=0&end=1&columns=99999",
        "start=a&end=1&columns=10",
        "start=0&end=60&columns=10",
    ):
        assert client.get(f"/clips/{clip.pk}/spectrogram.png?{bad}").status_code == 400, bad
    assert api_client(rater).get(url).status_code == 403
