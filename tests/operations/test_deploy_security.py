"""Deployment hardening: check --deploy, SECRET_KEY refusal, login lockout, password rules, no public media."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.urls import Resolver404, resolve

PROJECT_DIR = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    # The browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (set in this process when they run first) is not a deploy setting.
    clean = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SECURE_", "SESSION_", "CSRF_")) and key != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_DIR,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def check_deploy(**env: str) -> subprocess.CompletedProcess:
    """`check --deploy --fail-level WARNING` with only DEBUG=false, a strong SECRET_KEY, ALLOWED_HOSTS, and `env`."""
    production = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "eval.example.org"}
    return manage("check", "--deploy", "--fail-level", "WARNING", **production, **env)


def test_check_deploy_is_clean_with_only_debug_secret_key_and_allowed_hosts():
    result = check_deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_switching_off_https_behind_a_proxy_is_possible_and_named_by_check_deploy():
    result = check_deploy(SECURE_SSL_REDIRECT="false", SESSION_COOKIE_SECURE="false")
    assert result.returncode != 0
    assert "security.W008" in result.stderr and "security.W012" in result.stderr
    assert "security.W004" not in result.stderr  # HSTS still on


@pytest.mark.parametrize(
    "key, reason",
    [("change-me", "placeholder"), ("x" * 49, "49 characters"), ("ab" * 30, "fewer than 5 different"), ("", "not set")],
)
def test_a_weak_secret_key_is_refused_at_start_up_without_debug(key, reason):
    result = manage("check", DEBUG="false", SECRET_KEY=key, ALLOWED_HOSTS="eval.example.org")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and reason in result.stderr


def test_debug_mode_still_starts_with_the_example_key():
    assert manage("check", DEBUG="true", SECRET_KEY="change-me").returncode == 0


@pytest.mark.django_db
def test_login_page_locks_a_username_out_after_repeated_failures(client, make_user, settings):
    make_user("alice")
    make_user("bob")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    # The failure that reaches the limit, then even the right password is refused
    assert client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code == 429
    locked = client.post("/accounts/login/", {"username": "alice", "password": "pass-alice"})
    assert locked.status_code == 429
    assert b"Too many failed sign-ins" in locked.content
    assert "_auth_user_id" not in client.session
    # Another account from the same address is not affected
    assert client.post("/accounts/login/", {"username": "bob", "password": "pass-bob"}).status_code == 302


@pytest.mark.django_db
def test_a_successful_login_resets_the_failure_count(client, make_user, settings):
    make_user("carol")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/accounts/login/", {"username": "carol", "password": "wrong"})
    assert client.post("/accounts/login/", {"username": "carol", "password": "pass-carol"}).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/accounts/login/", {"username": "carol", "password": "wrong"}).status_code == 200


@pytest.mark.django_db
def test_token_endpoint_locks_out_after_repeated_failures(client, make_user, settings):
    make_user("dave")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/api/token/", {"username": "dave", "password": "wrong"}).status_code == 400
    assert client.post("/api/token/", {"username": "dave", "password": "wrong"}).status_code == 429
    response = client.post("/api/token/", {"username": "dave", "password": "pass-dave"})
    assert response.status_code == 429
    assert "token" not in response.content.decode()


@pytest.mark.django_db
def test_token_endpoint_still_gives_a_token_with_the_right_password(client, make_user):
    make_user("erin")
    response = client.post("/api/token/", {"username": "erin", "password": "pass-erin"})
    assert response.status_code == 200 and response.json()["token"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "password, rule",
    [
        ("short1!", "too short"),
        ("password123", "too common"),
        ("48151623420", "entirely numeric"),
        ("frank-the-rater", "too similar"),
    ],
)
def test_full_password_validators(make_user, password, rule):
    user = make_user("frank-the-rater")
    with pytest.raises(ValidationError, match=rule):
        validate_password(password, user=user)


@pytest.mark.django_db
def test_demo_passwords_pass_the_validators(capsys):
    from django.contrib.auth import get_user_model

    from demo.dataset import demo_accounts_ensure

    for account in demo_accounts_ensure(reset_passwords=True):
        validate_password(account.password, user=get_user_model().objects.get(username=account.username))


def test_media_files_have_no_public_route():
    with pytest.raises(Resolver404):
        resolve("/media/audio/anything.wav")
