"""The adversarial suite: each test is an attack a careful rater (or a careless admin) could make on blinding,
written as that attack, and asserts that it fails. (The attacks are those docs/studies.md guards against;
tests/ratings holds the unit tests of each mechanism.)"""

from pathlib import Path

import pytest

from tests.ratings.campaign_data import secrets_made_repeatable


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def repeatable_secrets(monkeypatch):
    """The server's secret random draws (order keys, tokens) made repeatable, so an attack's outcome is too."""
    secrets_made_repeatable(monkeypatch, 23)
