"""docker-compose.yml is valid (checked by docker-compose itself, client only) and runs what scripts/stack runs."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROJECT_DIR = Path(__file__).resolve().parents[2]


def rendered_compose(tmp_path) -> subprocess.CompletedProcess:
    # env_file: .env must exist; a fresh clone has only .env.example, which is what an operator copies.
    shutil.copy(PROJECT_DIR / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(PROJECT_DIR / ".env.example", tmp_path / ".env")
    return subprocess.run(
        ["docker-compose", "-f", str(tmp_path / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(
    shutil.which("docker-compose") is None, reason="needs docker-compose (Debian package docker-compose)"
)
def test_docker_compose_validates_the_file(tmp_path):
    result = rendered_compose(tmp_path)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert set(config["services"]) >= {"web", "worker", "postgres", "redis", "minio"}


@pytest.mark.skipif(
    shutil.which("docker-compose") is None, reason="needs docker-compose (Debian package docker-compose)"
)
def test_docker_compose_rejects_a_broken_file(tmp_path):
    broken = (PROJECT_DIR / "docker-compose.yml").read_text().replace("service_healthy", "service_healty", 1)
    (tmp_path / "docker-compose.yml").write_text(broken)
    shutil.copy(PROJECT_DIR / ".env.example", tmp_path / ".env")
    result = subprocess.run(
        ["docker-compose", "-f", str(tmp_path / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "service_healty" in result.stderr


def test_compose_services_use_the_health_endpoint_gunicorn_and_a_persistent_redis():
    compose = yaml.safe_load((PROJECT_DIR / "docker-compose.yml").read_text())
    web_check = " ".join(compose["services"]["web"]["healthcheck"]["test"])
    assert "/healthz?skip=worker" in web_check
    assert "celery -A config worker" in compose["services"]["worker"]["command"]
    assert "--appendonly yes" in compose["services"]["redis"]["command"]
    dockerfile = (PROJECT_DIR / "Dockerfile").read_text()
    assert "gunicorn -c config/gunicorn.py config.wsgi" in dockerfile and "runserver" not in dockerfile
