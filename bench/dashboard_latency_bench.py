"""Dashboard page latency, warm and cold: pages read stored results, so a view costs the same whatever the
computation behind it (CALIBRATED's fit, the THumBS bootstrap) costs.

Builds the data of bench/dashboards_bench.py (200 clips, 50 systems, 15 metrics with stored scores, 1,400 judged
pairs with votes, a THumBS campaign) in a temp SQLite file (or PostgreSQL with --database postgres and
DATABASE_URL), then, with Django's test client (server time, no network):
- cold, nothing stored: the first view of each dashboard page in a new process (as after a restart), which
  answers with the "computing" state; the refresh POST the browser sends (it only records and queues the task);
- the workers' computations themselves (each part run as the worker's task would: not in any page's time);
- cold, results stored: the first view of each page in another new process;
- warm: median and 95th percentile of 20 views of each page in one process.
Every time is also given as a ratio to the metrics home page (/metrics/) timed in the same process, the figure
to compare across machines (a loaded 2-core machine runs both slower).

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/dashboard_latency_bench.py [--database sqlite|postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

WARM_VIEWS = 20
STATE_FILE = "dashboard_latency_bench.json"


def _client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-admin"))
    return client


def _timed(client, url: str, method: str = "get") -> tuple[float, object]:
    start = time.perf_counter()
    response = getattr(client, method)(url)
    elapsed = (time.perf_counter() - start) * 1000
    assert response.status_code in (200, 202), (url, response.status_code)
    return elapsed, response


def _setup() -> None:
    import django

    django.setup()
    from django.test.utils import setup_test_environment

    setup_test_environment()


def _pages(state: dict) -> dict[str, str]:
    return {
        "agreement": f"/metrics/datasets/{state['dataset']}/agreement/",
        "leaderboard": f"/metrics/datasets/{state['dataset']}/leaderboard/",
        "thumbs": f"/metrics/campaigns/{state['campaign']}/thumbs/",
    }


def build_step(folder: Path) -> None:
    """Fresh database with the bench data; the ids go to the state file."""
    _setup()
    import dashboards_bench
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    data = dashboards_bench.build(random.Random(11))
    get_user_model().objects.create_user("bench-admin", is_staff=True)
    state = {"dataset": data["dataset"].pk, "campaign": data["campaign"].pk}
    (folder / STATE_FILE).write_text(json.dumps(state))
    print(
        f"built in {time.perf_counter() - start:.0f} s: {data['captions']} captions, {data['metric_scores']} metric "
        f"scores, {data['pairs']} pairs, {data['ratings']} ratings"
    )


def cold_step(folder: Path, label: str) -> None:
    """A new process: the first view of each page (then, with nothing stored, the browser's refresh POST)."""
    _setup()
    from config.celery import app

    # a worker is "somewhere": the POST only records and sends the task (to a broker folder nobody reads here)
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=False)
    state = json.loads((folder / STATE_FILE).read_text())
    client = _client()
    # a new process's first request loads the URLconf, the views and their modules: timed apart (gunicorn
    # pays it once per worker process, on whichever page comes first)
    process_first, _ = _timed(client, "/metrics/")
    first = {name: _timed(client, url) for name, url in _pages(state).items()}
    reference = statistics.median(_timed(client, "/metrics/")[0] for _ in range(5))
    print(f"[{label}] the process's first request (/metrics/): {process_first:7.1f} ms")
    for name, (elapsed, response) in first.items():
        computing = b"for the first time" in response.content or b"Fitting CALIBRATED" in response.content
        print(
            f"[{label}] {name:<11} first view after a restart: {elapsed:7.1f} ms ({elapsed / reference:5.1f}x "
            f"reference {reference:.1f} ms){' - computing state' if computing else ''}"
        )
        if label == "cold, nothing stored":
            kind_id = state["campaign"] if name == "thumbs" else state["dataset"]
            posted, response = _timed(client, f"/metrics/dashboards/{name}/{kind_id}/refresh/", "post")
            print(f"[{label}] {name:<11} refresh request (records and queues): {posted:7.1f} ms -> {response.json()}")


def compute_step(folder: Path) -> None:
    """The workers' side: each stored part computed as compute_dashboard_part does (timed, not a page's time)."""
    _setup()
    from metrics_bridge.services.dashboards import dashboard_part_compute

    state = json.loads((folder / STATE_FILE).read_text())
    for part, object_id in (
        ("agreement", state["dataset"]),
        ("calibration", state["dataset"]),
        ("leaderboard", state["dataset"]),
        ("thumbs", state["campaign"]),
    ):
        start = time.perf_counter()
        outcome = dashboard_part_compute(part=part, object_id=object_id)
        print(f"[worker] {part:<11} computed in {time.perf_counter() - start:6.1f} s ({outcome})")


def warm_step(folder: Path) -> None:
    _setup()
    state = json.loads((folder / STATE_FILE).read_text())
    client = _client()
    for url in _pages(state).values():
        _timed(client, url)  # first view: templates compiled, connections open
    reference = statistics.median(_timed(client, "/metrics/")[0] for _ in range(WARM_VIEWS))
    print(f"[warm] reference page /metrics/: {reference:.1f} ms (median of {WARM_VIEWS})")
    for name, url in _pages(state).items():
        times = sorted(_timed(client, url)[0] for _ in range(WARM_VIEWS))
        median, p95 = statistics.median(times), times[int(0.95 * (len(times) - 1))]
        page = client.get(url).content
        assert b'id="dashboard-stale"' not in page, f"{name}: stored results are not current"
        print(
            f"[warm] {name:<11} median {median:6.1f} ms ({median / reference:4.1f}x reference), "
            f"p95 {p95:6.1f} ms ({p95 / reference:4.1f}x)"
        )


STEPS = {"build": build_step, "compute": compute_step, "warm": warm_step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--step", choices=[*STEPS, "cold-empty", "cold-stored"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.step:
        folder = Path(args.folder)
        if args.step.startswith("cold"):
            cold_step(folder, "cold, nothing stored" if args.step == "cold-empty" else "cold, results stored")
        else:
            STEPS[args.step](folder)
        return
    folder = Path(tempfile.mkdtemp(prefix="dashboard-latency-bench-"))
    env = dict(os.environ, MEDIA_ROOT=str(folder / "media"), CELERY_BROKER_DIR=str(folder / "broker"))
    if args.database == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    elif not env.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("postgres: set DATABASE_URL=postgresql://...")
    # each step in a process of its own: "cold" is a process that never served a request (as after a restart)
    for step in ("build", "cold-empty", "compute", "cold-stored", "warm"):
        command = [sys.executable, __file__, "--database", args.database, "--step", step, "--folder", str(folder)]
        subprocess.run(command, env=env, check=True)


if __name__ == "__main__":
    main()
