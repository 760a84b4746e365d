"""The docker-compose stack on loopback, without Docker: what `scripts/stack` runs and the full-stack tests reuse.

Services, each a real server process in a private temporary folder:
- PostgreSQL 15: a private cluster (initdb + pg_ctl from /usr/lib/postgresql/*/bin), or DATABASE_URL if given;
- Redis: a private redis-server with an append-only file (as in docker-compose.yml);
- S3: moto's standalone server (`python -m moto.server`, moto 5), an in-memory implementation of the S3
  HTTP API (pre-signed URLs, Range requests), standing in for compose's MinIO;
- web: gunicorn with config/gunicorn.py (whitenoise serves the collected static files), DEBUG off;
- worker: a separate Celery worker process on Redis.
The app runs with production settings (DEBUG=false, strong SECRET_KEY) except the https switches, which
are off because loopback has no TLS proxy.

    ./scripts/stack                   # start everything, create the demo, print URLs and accounts; Ctrl-C stops
    ./scripts/stack --web-port 8200   # fixed ports (default: free ones)
"""

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from metrics_bridge.worker_process import WorkerProcess  # noqa: E402  (no Django import)

S3_BUCKET = "captioneval-stack"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "stack-access-key", "AWS_SECRET_ACCESS_KEY": "stack-secret-key"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, *, timeout: float, process: subprocess.Popen | None = None, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what or 'process'} exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what or 'nothing'} is not listening on 127.0.0.1:{port} after {timeout:.0f} s")


def loopback_production_env() -> dict[str, str]:
    """Production settings (DEBUG off, a fresh strong SECRET_KEY) for a server on loopback."""
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # Loopback has no TLS: the https switches a TLS-terminating proxy would need are off.
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
    }


def gunicorn_start(*, env: dict, port: int, workers: int, log_path: Path) -> subprocess.Popen:
    """gunicorn with config/gunicorn.py on 127.0.0.1:`port` in its own process group; returns once it listens."""
    env = {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(workers)}
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    wait_for_port(port, timeout=60, process=process, what="gunicorn")
    return process


def gunicorn_stop(process: subprocess.Popen, *, timeout: float = 20) -> None:
    """Stop gunicorn's whole process group (master and workers): TERM, then KILL after `timeout` s."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def postgres_bin_dir() -> Path:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: int(path.parent.name))
    if not versions:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql (Debian package postgresql)")
    return versions[-1]


class PrivatePostgres:
    """A throwaway PostgreSQL cluster in its own temporary folder, on 127.0.0.1:`port` only, trust auth on loopback.

    The folder is not inside the stack's: as root the server runs as the `postgres` user, who must be able
    to reach it (pytest's and mkdtemp's folders are private to root).
    """

    def __init__(self, port: int):
        self.port = port
        self.folder = Path(tempfile.mkdtemp(prefix="captioneval-pg-"))
        self.data = self.folder / "data"
        self.bin = postgres_bin_dir()

    def _as_owner(self, command: list[str]) -> list[str]:
        # initdb and postgres refuse to run as root; run them as the postgres system user then.
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *command]
        return command

    def start(self) -> "PrivatePostgres":
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "captioneval",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off -c full_page_writes=off"
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.folder / "server.log"),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=90,
        )
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "createdb"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-U",
                    "captioneval",
                    "captioneval",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=60,
        )
        return self

    @property
    def url(self) -> str:
        return f"postgresql://captioneval@127.0.0.1:{self.port}/captioneval"

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                self._as_owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]),
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.folder, ignore_errors=True)


class PrivateRedis:
    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.process: subprocess.Popen | None = None

    def start(self) -> "PrivateRedis":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is missing (Debian package redis-server)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, timeout=20, process=self.process, what="redis-server")
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def restart(self, *, lose_data: bool = False) -> None:
        """Stop and start again on the same port. Queued messages survive in the append-only file, unless
        `lose_data` (a server replaced without its disk)."""
        self.stop()
        if lose_data:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.start()


class MotoS3:
    """moto's standalone S3 server with one bucket."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.process: subprocess.Popen | None = None

    def start(self) -> "MotoS3":
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "moto.log", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for_port(self.port, timeout=60, process=self.process, what="moto server")
        self.client().create_bucket(Bucket=S3_BUCKET)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            **{
                "aws_access_key_id": S3_KEYS["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": S3_KEYS["AWS_SECRET_ACCESS_KEY"],
            },
        )

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)


class Stack:
    """Start with `with Stack(folder) as stack:`; `stack.env` is what web, worker and `stack.manage()` run with."""

    def __init__(
        self,
        folder: Path,
        *,
        database_url: str | None = None,
        web_port: int | None = None,
        web_workers: int = 2,
        extra_env: dict | None = None,
        say=None,
    ):
        self.folder = Path(folder)
        self.say = say or (lambda message: None)
        self.database_url = database_url
        self.web_port = web_port or free_port()
        self.web_workers = web_workers
        self.extra_env = extra_env or {}
        self.postgres: PrivatePostgres | None = None
        self.redis = PrivateRedis(self.folder / "redis", free_port())
        self.s3 = MotoS3(self.folder / "s3", free_port())
        self.web: subprocess.Popen | None = None
        self.worker: WorkerProcess | None = None
        self.timings: dict[str, float] = {}
        self.env: dict[str, str] = {}

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _timed(self, name: str, start) -> None:
        began = time.monotonic()
        start()
        self.timings[name] = round(time.monotonic() - began, 2)
        self.say(f"{name}: ready in {self.timings[name]:.1f} s")

    def start(self) -> "Stack":
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.database_url:
            self.postgres = PrivatePostgres(free_port())
            self._timed("postgres", self.postgres.start)
            self.database_url = self.postgres.url
        self._timed("redis", self.redis.start)
        self._timed("s3 (moto)", self.s3.start)
        self.env = self._app_env()
        self._timed("migrate", lambda: self.manage("migrate", "--noinput", check=True))
        self._timed("collectstatic", lambda: self.manage("collectstatic", "--noinput", check=True))
        self._timed("web (gunicorn)", self._start_web)
        self._timed("worker (celery)", self.start_worker)
        return self

    def _app_env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SECURE_", "CELERY_"))}
        env.update(
            {
                **loopback_production_env(),
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis.url,
                "AWS_STORAGE_BUCKET_NAME": S3_BUCKET,
                "AWS_S3_ENDPOINT_URL": self.s3.url,
                "AWS_S3_REGION_NAME": "us-east-1",
                **S3_KEYS,
                "MEDIA_ROOT": str(self.folder / "media"),
                "STATIC_ROOT": str(self.folder / "static"),
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1",
                **self.extra_env,
            }
        )
        return env

    def manage(self, *args: str, check: bool = False, timeout: float = 600) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def _start_web(self) -> None:
        self.web = gunicorn_start(
            env=self.env, port=self.web_port, workers=self.web_workers, log_path=self.folder / "web.log"
        )
        self.wait_healthy(skip="worker", timeout=60)

    def start_worker(self, *, include: list[str] | None = None, **extra_env) -> WorkerProcess:
        """A (new) Celery worker process on the stack's Redis; waits until /healthz sees its heartbeat.

        `include`: more modules the worker imports (tests pass their hooks, e.g. tests.chunk_gate)."""
        index = len(list(self.folder.glob("worker*.log")))
        self.worker = WorkerProcess(
            name=f"stack-worker-{index}@localhost",
            log_path=self.folder / f"worker{index}.log",
            env={**self.env, **{key: str(value) for key, value in extra_env.items()}},
            pool="prefork",
            concurrency=1,
            include=include,
        ).start()
        self.wait_healthy(timeout=120)
        return self.worker

    def health(self, skip: str = "") -> tuple[int, dict]:
        import json

        url = f"{self.web_url}/healthz" + (f"?skip={skip}" if skip else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def wait_healthy(self, *, skip: str = "", timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        status, report = 0, {}
        while time.monotonic() < deadline:
            try:
                status, report = self.health(skip)
            except OSError:
                status = 0
            if status == 200:
                return report
            time.sleep(0.3)
        raise RuntimeError(f"/healthz not healthy after {timeout:.0f} s: {status} {report}\n{self.logs_tail()}")

    def logs_tail(self, lines: int = 30) -> str:
        parts = []
        for log in sorted(self.folder.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(parts)

    def stop(self) -> None:
        if self.worker:
            self.worker.stop(timeout=20)
        if self.web:
            gunicorn_stop(self.web)
        self.s3.stop()
        self.redis.stop()
        if self.postgres:
            self.postgres.stop()

    def __enter__(self) -> "Stack":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web-port", type=int, default=None, help="gunicorn port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--no-demo", action="store_true", help="do not create the demo data and accounts")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="captioneval-stack-"))
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
    stack = Stack(
        folder,
        database_url=os.environ.get("DATABASE_URL") or None,
        web_port=args.web_port,
        web_workers=args.web_workers,
        say=print,
    )
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    with stack:
        if not args.no_demo:
            demo = stack.manage("demo", "--url", stack.web_url + "/", check=True)
            print(demo.stdout)
        print(f"\nweb      {stack.web_url}  (gunicorn, {args.web_workers} workers)\nhealth   {stack.web_url}/healthz")
        print(f"worker   pid {stack.worker.pid} (log {stack.worker.log_path})\ndatabase {stack.database_url}")
        print(
            f"redis    {stack.redis.url}\ns3       {stack.s3.url} bucket {S3_BUCKET} (moto server)\nfiles    {folder}"
        )
        print("Ctrl-C stops everything.")
        try:
            while not stopping:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
