"""The web server kills a request after 30 s: pages read stored results, so nothing legitimate takes longer, and a
stuck request must not hold one of the few workers of a 2-core machine for a minute."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _printed_config(*, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """gunicorn's own reading of config/gunicorn.py (`--print-config`), as ./scripts/run and the image start it."""
    env = {key: value for key, value in os.environ.items() if key != "GUNICORN_TIMEOUT"}
    env.update(extra_env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--print-config", "config.wsgi"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(re.findall(r"^(\w+)\s+= (.*)$", completed.stdout, flags=re.MULTILINE))


def test_gunicorn_kills_a_request_after_30_seconds_by_default():
    settings = _printed_config()

    assert settings["timeout"] == "30"
    assert settings["graceful_timeout"] == "30"


def test_gunicorn_timeout_follows_the_environment_variable():
    assert _printed_config(extra_env={"GUNICORN_TIMEOUT": "45"})["timeout"] == "45"


def test_run_script_and_compose_set_no_timeout_of_their_own():
    run_script = (ROOT / "scripts" / "run").read_text()
    assert "-c config/gunicorn.py" in run_script
    for path in (ROOT / "scripts" / "run", ROOT / "docker-compose.yml", ROOT / "Dockerfile"):
        if path.exists():
            gunicorn_lines = [line for line in path.read_text().splitlines() if "gunicorn" in line]
            assert not any("--timeout" in line or "-t " in line for line in gunicorn_lines), path
            assert not re.search(r"GUNICORN_TIMEOUT\s*[:=]", path.read_text()), path
