"""Fixtures of the annotation tests: a throwaway media folder and a clip to attach audio to."""

from pathlib import Path

import pytest

from corpus.models import Clip, Dataset


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root


@pytest.fixture
def clip(db) -> Clip:
    return Clip.objects.create(dataset=Dataset.objects.create(name="audio-test"), external_id="c1", file_name="c1.wav")
