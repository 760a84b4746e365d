"""Fixtures shared by every test package."""
from pathlib import Path

import pytest

SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the project (real datasets; the product never reads it)."""
    assert SHARED_DIR.is_dir(), f"{SHARED_DIR} is missing: tests need ../shared beside the project"
    return SHARED_DIR


@pytest.fixture
def make_user(db, django_user_model):
    from django.contrib.auth.models import Group

    def make(username: str, *roles: str, staff: bool = False):
        user = django_user_model.objects.create_user(username=username, password="pass-" + username, is_staff=staff)
        for role in roles:
            user.groups.add(Group.objects.get(name=role))
        return user

    return make
