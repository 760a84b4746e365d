"""Fresh databases for whole-command benchmarks: Clotho-Eval imported once, a pristine copy for every timed run.

SQLite (default): the imported database file is copied for each run (with nothing else beside it, so the
embedded broker's folder starts empty too). PostgreSQL (`--database-url`): the imported database is a
template and every run gets `CREATE DATABASE ... TEMPLATE` on the same server (needs CREATEDB).
Commands run as subprocesses with the environment of `env`: the same `manage.py` a user runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

PROJECT_DIR = Path(__file__).resolve().parent.parent

def warm_up_items(clips: int = 150) -> list[dict]:
    """A dataset of made-up captions (none is a Clotho text) in the Clotho-Eval layout: a standing worker scores
    it before the timed run, as a worker kept running has scored earlier runs. That loads METEOR's JVM and
    gives its JIT the scoring code to compile (~1,400 segments), without filling any cache with the texts
    of the timed run."""
    import random

    draw = random.Random(20261123)
    sources = ["a dog", "the kettle", "a car engine", "rain", "birds", "a crowd", "the wind", "a train", "water",
               "a door", "someone", "an old clock", "the waves", "a motorbike", "children", "a cat", "thunder"]
    actions = ["barks", "whistles", "rumbles", "falls", "chirp", "cheers", "howls", "passes by", "drips",
               "creaks", "speaks", "ticks", "crash", "revs", "laugh", "purrs", "roars", "hums", "knocks"]
    manners = ["loudly", "softly", "in the distance", "nearby", "repeatedly", "slowly", "quickly", "outside",
               "for a while", "and then stops", "steadily", "while people talk", "in a small room", "at night"]

    def caption() -> str:
        first = f"{draw.choice(sources)} {draw.choice(actions)} {draw.choice(manners)}"
        if draw.random() < 0.5:
            return first
        return f"{first} {draw.choice(['while', 'as', 'and'])} {draw.choice(sources)} {draw.choice(actions)}"

    return [
        {
            "raw_name": f"warm-up-{clip}.wav",
            "references": [caption() for _ in range(5)],
            **{split: [caption(), caption(), "human_1", "human_2", [1, -1, 1, 1]]
               for split in ["HC", "HI", "HM", "MM_1", "MM_2", "MM_3", "MM_4"]},
        }
        for clip in range(clips)
    ]


class BenchDatabase:
    """A migrated database holding Clotho-Eval (as `clotho-eval`) and the warm-up dataset (`warm-up`)."""

    def __init__(self, *, workdir: Path, clotho_path: Path, database_url: str | None = None):
        self.workdir, self.clotho_path = workdir, clotho_path
        self.server_url = database_url
        if database_url:
            parsed = urlparse(database_url)
            base = parsed.path.lstrip("/") or "captioneval"
            self.template_name, self.run_name = f"{base}_bench_template", f"{base}_bench_run"
            self.template_url = urlunparse(parsed._replace(path=f"/{self.template_name}"))
            self.url = urlunparse(parsed._replace(path=f"/{self.run_name}"))
        else:
            self.template_file = workdir / "template" / "db.sqlite3"
            self.run_dir = workdir / "run"
            self.url = f"sqlite:///{self.run_dir / 'db.sqlite3'}"
            self.template_url = f"sqlite:///{self.template_file}"

    @property
    def kind(self) -> str:
        return "PostgreSQL" if self.server_url else "SQLite"

    def env(self, url: str | None = None, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_DIR")}
        env.update(
            DATABASE_URL=url or self.url,
            MEDIA_ROOT=str(self.workdir / "media"),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            **extra,
        )
        return env

    def manage(self, *args: str, url: str | None = None, env: dict | None = None, check: bool = True):
        completed = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=PROJECT_DIR,
            env=env or self.env(url),
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if check and completed.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{completed.stdout}\n{completed.stderr}")
        return completed

    def prepare(self) -> None:
        """Migrate and import once into the template."""
        if self.server_url:
            self._sql(f'DROP DATABASE IF EXISTS "{self.run_name}"', f'DROP DATABASE IF EXISTS "{self.template_name}"',
                      f'CREATE DATABASE "{self.template_name}"')
        else:
            self.template_file.parent.mkdir(parents=True, exist_ok=True)
        warm_up_path = self.workdir / "warm_up.json"
        warm_up_path.write_text(json.dumps(warm_up_items()))
        self.manage("migrate", "--noinput", url=self.template_url)
        self.manage("import_pairwise_judgements", str(self.clotho_path), "--dataset", "clotho-eval",
                    url=self.template_url)
        self.manage("import_pairwise_judgements", str(warm_up_path), "--dataset", "warm-up", url=self.template_url)

    def fresh(self) -> None:
        """Make the run database a pristine copy of the template (close Django connections to it first)."""
        if self.server_url:
            self._sql(f'DROP DATABASE IF EXISTS "{self.run_name}" WITH (FORCE)',
                      f'CREATE DATABASE "{self.run_name}" TEMPLATE "{self.template_name}"')
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir.mkdir(parents=True)
            shutil.copyfile(self.template_file, self.run_dir / "db.sqlite3")

    def drop(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.server_url:
            self._sql(f'DROP DATABASE IF EXISTS "{self.run_name}" WITH (FORCE)',
                      f'DROP DATABASE IF EXISTS "{self.template_name}" WITH (FORCE)')

    def _sql(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.server_url, autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)


def timed_command(database: BenchDatabase, *args: str, env: dict | None = None) -> tuple[float, str]:
    """Wall time of `manage.py args` from process start to exit, and its output."""
    started = time.perf_counter()
    completed = database.manage(*args, env=env)
    return time.perf_counter() - started, completed.stdout + completed.stderr


def load_average() -> float:
    return os.getloadavg()[0]
