"""Fixtures of the demo's tests: a throwaway media folder for the synthesized clips."""

from pathlib import Path

import pytest


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root
