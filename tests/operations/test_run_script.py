"""`./scripts/run` is a safe one-machine production run: gunicorn + whitenoise, DEBUG off, a secret key made once in a
file only its owner reads, ALLOWED_HOSTS from HOST, a quiet console, and "Sign in" once the server answers.

The script runs as a user starts it (with --no-setup: the test's virtualenv is the project's, and --no-demo: the
demo has its own tests), on a throwaway database and a free port.
"""

import contextlib
import os
import queue
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc: children by parent id, recursively)."""
    children: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # "pid (command) state ppid ...": the command may hold spaces and parentheses
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat_file.parent.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return f"{pid} " + (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120])
    except OSError:
        return f"{pid} (gone)"


class RunScript:
    """./scripts/run in its own process group, its console read line by line."""

    def __init__(self, tmp_path: Path, port: int, *, product_priority: bool = False):
        self.port, self.lines, self._queue = port, [], queue.Queue()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE")
            and not key.startswith("SECURE_")
        }
        env.update(
            DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
            MEDIA_ROOT=str(tmp_path / "media"),
            STATIC_ROOT=str(tmp_path / "static"),
            SECRET_KEY_FILE=str(tmp_path / "secret_key"),
            PORT=str(port),
            HOST="127.0.0.1",
        )
        env.pop("REDIS_URL", None)
        if not product_priority:
            # The worker at normal priority: the suite's other process keeps a core busy at normal priority, and
            # these tests time what the worker does (the lowered priority has its own test).
            env.setdefault("WORKER_NICENESS", "0")
        else:
            env.pop("WORKER_NICENESS", None)
        self.process = subprocess.Popen(
            ["./scripts/run", "--no-setup", "--no-demo"],
            cwd=PROJECT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            # As from a terminal, where Ctrl-C is heard: a test process started in the background (`cmd &`, some
            # CI runners) ignores SIGINT, its children inherit that, and bash cannot trap an ignored signal.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 240, *, seen: bool = False) -> str:
        """The next console line holding `text` (with `seen`, a line already read counts too)."""
        if seen:
            earlier = [line for line in self.lines if text in line]
            if earlier:
                return earlier[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, "scripts/run exited:\n" + "\n".join(self.lines)
                continue
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} within {timeout} s:\n" + "\n".join(self.lines))

    def stop(self) -> list[str]:
        """Ctrl-C in the terminal: SIGINT to the whole process group; returns every console line."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                left = descendants(self.process.pid)
                for pid in [self.process.pid, *left]:  # the server and worker run in sessions of their own
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                raise AssertionError(
                    "scripts/run did not stop within 90 s of Ctrl-C:\n" + "\n".join(self.lines)
                    + "\nstill running: " + "; ".join(command_line(pid) for pid in left)
                ) from None
        time.sleep(0.5)
        while not self._queue.empty():
            self.lines.append(self._queue.get())
        return self.lines


def test_the_default_run_is_production_mode_with_a_quiet_console(tmp_path):
    port = free_port()
    run = RunScript(tmp_path, port)
    try:
        signed_in_line = run.wait_for("Sign in at")
        url = f"http://127.0.0.1:{port}"
        # "Sign in" came once the server answered the health probe (its access line is printed by another process,
        # so it may reach the console just after "Sign in")
        assert signed_in_line == f"Sign in at {url}/ (worker log: logs/worker.log; Ctrl-C stops)"
        run.wait_for("GET /healthz", timeout=60, seen=True)

        # No debug page: a mistyped URL gets the site's 404 page, never Django's list of routes
        missing = requests.get(f"{url}/no-such-page/", timeout=30)
        assert missing.status_code == 404 and "Caption Eval" in missing.text
        assert "URLconf" not in missing.text and "DEBUG = True" not in missing.text and "Traceback" not in missing.text
        # A host this site does not serve (Django logs it with a traceback)
        assert requests.get(f"{url}/healthz", headers={"Host": "evil.example"}, timeout=30).status_code in (200, 503)
        assert requests.get(f"{url}/accounts/login/", headers={"Host": "evil.example"}, timeout=30).status_code == 400
        # whitenoise serves the collected, compressed static files
        static = requests.get(f"{url}/static/core/js/live.js", headers={"Accept-Encoding": "gzip"}, timeout=30)
        assert static.status_code == 200 and static.headers.get("Content-Encoding") == "gzip"
        # the session cookie works over the plain http of this machine
        login = requests.Session()
        login.get(f"{url}/accounts/login/", timeout=30)
        assert "csrftoken" in login.cookies
        run.wait_for("GET /static/core/js/live.js")
    finally:
        lines = run.stop()

    # The secret key was made once, readable by its owner only
    key = tmp_path / "secret_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) >= 50
    # One line per request at most, no traceback, nothing twice
    console = "\n".join(lines)
    assert "Traceback" not in console, console
    assert [line for line in lines if "/no-such-page/" in line] == [
        next(line for line in lines if line.startswith("404 GET /no-such-page/"))
    ], console
    assert len([line for line in lines if "/accounts/login/" in line]) == 2, console  # the 400 and the 200
    assert sum("Sign in at" in line for line in lines) == 1, console

    # A second start keeps the key (sessions and signed links survive a restart)
    before = key.read_text()
    again = RunScript(tmp_path, port)
    try:
        again.wait_for("Sign in at")
    finally:
        again.stop()
    assert key.read_text() == before
