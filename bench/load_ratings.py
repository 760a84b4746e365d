"""Load bench of the rater flow: gunicorn (4 workers) with simulated raters on loopback, then exactly-once checks.

For each database (a private PostgreSQL cluster started here, and the SQLite default on a file) it
  1. migrates a fresh database and seeds a THumBS campaign: `--raters` raters (headphone screening passed,
     signed in by a session made here), `--clips` clips of `--clip-seconds` s with 2 captions each, every
     rater assigned every clip;
  2. starts gunicorn with config/gunicorn.py (the Docker image's settings, DEBUG off), `--web-workers` workers;
  3. runs one thread per rater for `--seconds` s, each doing what the rating page does: open the item
     (GET /ratings/items/<token>/), fetch its audio as the player does (GET …/audio/: the server records the
     bytes it sent), wait until the clip has played (`--clip-seconds`: the server refuses "listened" before
     the whole file went out and that long since its first byte, so this is the pace of a real rater; each
     rater starts at a random moment within the first clip), report listening (POST …/listened/), submit a
     THumBS rating with random scores
     (POST …/, answered by a redirect to the next item), then open the next item;
  4. stops gunicorn and checks the database: every accepted submission is stored exactly once with the
     values sent (one rating per caption, one `submitted` event), nothing refused or unanswered is stored,
     and there are no other ratings.
It prints p50/p95/p99 latency per endpoint, errors (unexpected status or transport error), requests/s and
the load generator's own CPU use (to show it was not the bottleneck). Bounded and self-stopping: a watchdog
kills everything this script started at `--deadline` s, whatever happens.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/load_ratings.py                    # both databases, 50 raters, 60 s
    HF_HUB_OFFLINE=1 .venv/bin/python bench/load_ratings.py --databases sqlite --seconds 20
    ... --database-url postgresql://captioneval:captioneval@127.0.0.1:5432/ce_9b   # an existing (empty) database

Target: p95 <= 50 ms on every endpoint and 0 errors.
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from scripts.stack import (  # noqa: E402  (no Django import)
    PrivatePostgres,
    free_port,
    gunicorn_start,
    gunicorn_stop,
    loopback_production_env,
)

CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
VERSION_RE = re.compile(r'name="version" value="(\d+)"')
CAPTION_RE = re.compile(r'name="precision_(\d+)"')
ITEM_PATH_RE = re.compile(r"/ratings/items/([^/]+)/$")
PENALTIES = ["0", "-0.5", "-1", "-1.5", "-2"]


# --- Inside the app's environment (subprocesses: seed and verify) ---------------------------------------


def _django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def seed(*, raters: int, clips: int, clip_seconds: float) -> dict:
    """The campaign, its raters and their sessions; returns what the load threads need."""
    _django()
    import io
    import wave

    from django.contrib.auth.models import Group, User
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.test import Client
    from django.utils import timezone

    from corpus.models import Caption, Clip, Dataset
    from ratings.models import HeadphoneCheck
    from ratings.services.campaigns import campaign_setup

    dataset = Dataset.objects.create(name="load-bench")
    # One quiet 8 kHz WAV of the clip's length for every clip, as audio and as its rater copy (already plain).
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(8000)
        output.writeframes(b"\x00\x01" * int(8000 * clip_seconds))
    audio_name = default_storage.save("rater-audio/load-bench.wav", ContentFile(buffer.getvalue()))
    clip_rows = Clip.objects.bulk_create(
        Clip(
            dataset=dataset,
            external_id=f"load-{index:05d}.wav",
            duration_seconds=clip_seconds,
            audio=audio_name,
            rater_audio=audio_name,
        )
        for index in range(clips)
    )
    Caption.objects.bulk_create(
        Caption(
            clip=clip, text=f"sound {index} number {position}", role="reference", author_kind="human", position=position
        )
        for index, clip in enumerate(clip_rows)
        for position in range(2)
    )
    group = Group.objects.get_or_create(name="rater")[0]
    users = []
    for index in range(raters):
        user = User(username=f"load-rater-{index:03d}")
        user.set_unusable_password()  # sessions are made below; hashing 50 passwords would only slow the seed
        user.save()
        user.groups.add(group)
        users.append(user)
    now = timezone.now()
    HeadphoneCheck.objects.bulk_create(
        HeadphoneCheck(rater=user, trials=[], correct_count=6, passed=True, completed_at=now) for user in users
    )
    campaign = campaign_setup(
        name="load-bench",
        dataset=dataset,
        task_type="thumbs",
        human_captions_per_clip=2,
        judgements_per_item=raters,
        raters=users,
    )
    sessions = []
    for user in users:
        client = Client()
        client.force_login(user)
        sessions.append(client.cookies["sessionid"].value)
    return {"campaign": campaign.pk, "sessions": sessions}


def verify(*, campaign_id: int, accepted: list[dict], refused: list[str]) -> dict:
    """Compare the database with what the server accepted; returns counts and the list of problems."""
    _django()
    from decimal import Decimal

    from ratings.models import AssignmentItem, ItemEvent, ThumbsRating

    problems: list[str] = []
    items = {
        item.token: item
        for item in AssignmentItem.objects.filter(assignment__campaign_id=campaign_id).select_related("assignment")
    }
    ratings = defaultdict(list)
    for rating in ThumbsRating.objects.filter(campaign_id=campaign_id):
        ratings[(rating.rater_id, rating.caption_id)].append(rating)
    submitted = defaultdict(int)
    for event in ItemEvent.objects.filter(item__assignment__campaign_id=campaign_id, kind="submitted"):
        submitted[event.item_id] += 1
    expected_keys = set()
    accepted_tokens = set()
    for submission in accepted:
        token = submission["token"]
        item = items.get(token)
        if item is None:
            problems.append(f"accepted item {token} does not exist")
            continue
        if token in accepted_tokens:
            problems.append(f"item {token} accepted twice")
        accepted_tokens.add(token)
        if submitted[item.pk] != 1:
            problems.append(f"item {token}: {submitted[item.pk]} 'submitted' events, expected 1")
        if item.completed_at is None:
            problems.append(f"item {token} accepted but not completed")
        for number, caption_id in enumerate(item.caption_order, start=1):
            key = (item.assignment.rater_id, caption_id)
            expected_keys.add(key)
            rows = ratings.get(key, [])
            if len(rows) != 1:
                problems.append(f"item {token} caption {number}: {len(rows)} ratings, expected 1")
                continue
            sent = submission["values"][str(number)]
            row = rows[0]
            stored = {
                "precision": row.precision,
                "recall": row.recall,
                "fluency": row.fluency,
                "conciseness": row.conciseness,
                "irrelevance": row.irrelevance,
                "comment": row.comment,
            }
            wanted = {
                "precision": int(sent["precision"]),
                "recall": int(sent["recall"]),
                **{name: Decimal(sent[name]) for name in ("fluency", "conciseness", "irrelevance")},
                "comment": sent["comment"],
            }
            if stored != wanted or row.synthesized != submission["synthesized"]:
                problems.append(f"item {token} caption {number}: stored {stored} differs from sent {wanted}")
    extra = set(ratings) - expected_keys
    if extra:
        problems.append(f"{len(extra)} ratings stored that no accepted submission made")
    for token in refused:
        if token not in accepted_tokens and items.get(token) and items[token].completed_at is not None:
            problems.append(f"refused item {token} is completed")
    completed_not_accepted = [
        token for token, item in items.items() if item.completed_at is not None and token not in accepted_tokens
    ]
    if completed_not_accepted:
        problems.append(f"{len(completed_not_accepted)} items completed without an accepted submission")
    return {
        "accepted_submissions": len(accepted),
        "ratings_in_database": sum(len(rows) for rows in ratings.values()),
        "ratings_expected": len(expected_keys),
        "completed_items": sum(1 for item in items.values() if item.completed_at is not None),
        "problems": problems[:20],
        "problem_count": len(problems),
    }


# --- The simulated raters (this process) ------------------------------------------------------------------


class Recorder:
    """Latencies per endpoint, errors, accepted and refused submissions, shared by the rater threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        # When each timed request began (time.perf_counter), in the order of `latencies`: for timelines of a run.
        self.started: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.accepted: list[dict] = []
        self.refused: list[str] = []

    def timed(self, endpoint: str, http, method: str, url: str, *, expect: int | tuple[int, ...], **options):
        """`http.request(method, url, **options)`, timed; the response when its status is `expect` (or one of
        them), else None."""
        expected = (expect,) if isinstance(expect, int) else expect
        started = time.perf_counter()
        try:
            response = http.request(method, url, timeout=30, **options)
        except Exception as error:  # noqa: BLE001 - every transport failure is an error of the run
            with self.lock:
                self.errors[endpoint].append(f"{type(error).__name__}: {error}"[:200])
            return None
        elapsed = time.perf_counter() - started
        with self.lock:
            self.latencies[endpoint].append(elapsed)
            self.started[endpoint].append(started)
            if response.status_code not in expected:
                self.errors[endpoint].append(f"HTTP {response.status_code}: {response.text[:200]!r}")
        return response if response.status_code in expected else None


def rater_loop(
    *,
    base_url: str,
    campaign_id: int,
    session_id: str,
    clip_seconds: float,
    stop_at: float,
    recorder: Recorder,
    seed_value: int,
) -> None:
    import requests

    chooser = random.Random(seed_value)
    http = requests.Session()
    http.cookies.set("sessionid", session_id, domain="127.0.0.1")
    # Raters do not start in lockstep: each begins within the first clip length.
    time.sleep(chooser.uniform(0, clip_seconds))
    first = recorder.timed(
        "GET next (campaign)",
        http,
        "GET",
        f"{base_url}/ratings/campaigns/{campaign_id}/next/",
        allow_redirects=False,
        expect=302,
    )
    if first is None:
        return
    item_url = (
        base_url + first.headers["Location"] if first.headers["Location"].startswith("/") else first.headers["Location"]
    )
    while time.monotonic() < stop_at:
        match = ITEM_PATH_RE.search(item_url)
        if match is None:
            return  # the campaign sent us to its "done" page
        token = match.group(1)
        page = recorder.timed("GET item", http, "GET", item_url, expect=200)
        if page is None:
            return
        csrf = CSRF_RE.search(page.text).group(1)
        version = VERSION_RE.search(page.text).group(1)
        captions = sorted({int(number) for number in CAPTION_RE.findall(page.text)})
        headers = {"X-CSRFToken": http.cookies.get("csrftoken"), "Referer": item_url}
        if recorder.timed("GET audio", http, "GET", item_url + "audio/", expect=200) is None:
            continue
        # The player reports "listened" when the clip has played to its end: the whole clip after the audio
        # arrived (its first byte went out before this moment, so the server's clock agrees).
        time.sleep(clip_seconds + 0.02)
        if time.monotonic() >= stop_at:
            return
        listened = recorder.timed(
            "POST listened", http, "POST", item_url + "listened/", headers=headers, json={}, expect=200
        )
        if listened is None:
            continue
        values = {
            str(number): {
                "precision": str(chooser.randint(1, 5)),
                "recall": str(chooser.randint(1, 5)),
                "fluency": chooser.choice(PENALTIES),
                "conciseness": chooser.choice(PENALTIES),
                "irrelevance": chooser.choice(PENALTIES),
                "comment": chooser.choice(["", "clear", f"bench {token[:6]}"]),
            }
            for number in captions
        }
        synthesized = chooser.choice(["yes", "no"])
        form = {"csrfmiddlewaretoken": csrf, "version": version, "synthesized": synthesized}
        for number, row in values.items():
            form.update({f"{name}_{number}": value for name, value in row.items()})
        submitted = recorder.timed(
            "POST submit",
            http,
            "POST",
            item_url,
            data=form,
            headers={"Referer": item_url},
            allow_redirects=False,
            expect=302,
        )
        with recorder.lock:
            if submitted is None:
                recorder.refused.append(token)
            else:
                recorder.accepted.append({"token": token, "values": values, "synthesized": synthesized})
        if submitted is None:
            return
        location = submitted.headers["Location"]
        item_url = base_url + location if location.startswith("/") else location


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


# --- Orchestration --------------------------------------------------------------------------------------


class Run:
    """One database's run: the processes it started, stopped by `stop()` (idempotent) or the watchdog."""

    def __init__(self, *, kind: str, args, folder: Path):
        self.kind = kind
        self.args = args
        self.folder = folder
        self.postgres: PrivatePostgres | None = None
        self.web: subprocess.Popen | None = None
        self.env: dict[str, str] = {}

    def database_url(self) -> str:
        if self.kind == "sqlite":
            return f"sqlite:///{self.folder / 'db.sqlite3'}"
        if self.args.database_url:
            return self.args.database_url
        self.postgres = PrivatePostgres(free_port())
        self.postgres.start()
        return self.postgres.url

    def app(self, *arguments: str, timeout: float = 600) -> str:
        result = subprocess.run(
            [sys.executable, *arguments],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode:
            raise RuntimeError(f"{' '.join(arguments)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result.stdout

    def start(self) -> dict:
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SECURE_"))}
        self.env.pop("REDIS_URL", None)
        self.env.update(
            {
                **loopback_production_env(),
                "DATABASE_URL": self.database_url(),
                "MEDIA_ROOT": str(self.folder / "media"),
                "STATIC_ROOT": str(self.folder / "static"),
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
            }
        )
        began = time.monotonic()
        self.app("manage.py", "migrate", "--noinput")
        self.app("manage.py", "collectstatic", "--noinput")
        out = self.app(
            __file__,
            "seed",
            "--raters",
            str(self.args.raters),
            "--clips",
            str(self.args.clips),
            "--clip-seconds",
            str(self.args.clip_seconds),
        )
        seeded = json.loads(out.strip().splitlines()[-1])
        print(f"[{self.kind}] migrated and seeded in {time.monotonic() - began:.1f} s", flush=True)
        port = free_port()
        self.web = gunicorn_start(
            env=self.env, port=port, workers=self.args.web_workers, log_path=self.folder / "gunicorn.log"
        )
        base_url = f"http://127.0.0.1:{port}"
        warm_up(base_url, seeded["sessions"][: 4 * self.args.web_workers])
        settled = wait_until_idle(self.web.pid, timeout=self.args.settle_seconds)
        print(
            f"[{self.kind}] gunicorn ({self.args.web_workers} workers) on port {port}; idle after start-up: {settled}",
            flush=True,
        )
        return {"base_url": base_url, **seeded}

    def stop(self) -> None:
        self.stop_web()
        if self.postgres:
            self.postgres.stop()
            self.postgres = None

    def stop_web(self) -> None:
        if self.web:
            gunicorn_stop(self.web)


def warm_up(base_url: str, sessions: list[str]) -> None:
    """A running server is warm: every worker has served a rater page (templates, URLconf, connections).

    The rater home page changes nothing in the database; one request per session, all at once, twice.
    """
    import requests

    def visit(session_id: str) -> None:
        for _ in range(2):
            requests.get(f"{base_url}/ratings/", cookies={"sessionid": session_id}, timeout=120)

    threads = [threading.Thread(target=visit, args=(session_id,)) for session_id in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def process_tree_cpu(pid: int) -> float:
    """CPU seconds used so far by `pid` and its children (gunicorn master + workers)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        process, parent = int(stat.parent.name), int(fields[1])
        if process == pid or parent == pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
        if process == pid:
            # Workers gunicorn recycled (max_requests) and reaped: their CPU is the master's children time.
            total += (int(fields[13]) + int(fields[14])) / ticks
    return total


def wait_until_idle(pid: int, *, timeout: float) -> str:
    """Wait until gunicorn's workers finished their start-up work (they load the metric scorers in a thread)."""
    deadline = time.monotonic() + timeout
    previous = process_tree_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        current = process_tree_cpu(pid)
        if current - previous < 0.05:
            return "yes"
        previous = current
    return f"no (still busy after {timeout:.0f} s)"


def drive(target: dict, args) -> tuple[Recorder, dict]:
    recorder = Recorder()
    stop_at = time.monotonic() + args.seconds
    threads = [
        threading.Thread(
            target=rater_loop,
            kwargs={
                "base_url": target["base_url"],
                "campaign_id": target["campaign"],
                "session_id": session_id,
                "clip_seconds": args.clip_seconds,
                "stop_at": stop_at,
                "recorder": recorder,
                "seed_value": index,
            },
            daemon=True,
        )
        for index, session_id in enumerate(target["sessions"])
    ]
    wall_began, cpu_began = time.monotonic(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1.0, stop_at + 40 - time.monotonic()))
    wall = time.monotonic() - wall_began
    return recorder, {"wall_seconds": wall, "client_cpu_seconds": time.process_time() - cpu_began}


def latency_table(recorder: Recorder) -> tuple[list[str], dict]:
    """Lines of p50/p95/p99/max and errors per endpoint (and over all requests), and the figures per endpoint."""
    lines = [f"{'endpoint':22} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>6}"]
    figures = {}
    for endpoint in sorted(set(recorder.latencies) | set(recorder.errors)):
        values = recorder.latencies.get(endpoint) or [float("nan")]
        row = {
            "count": len(recorder.latencies.get(endpoint, [])),
            "p50_ms": percentile(values, 0.50) * 1000,
            "p95_ms": percentile(values, 0.95) * 1000,
            "p99_ms": percentile(values, 0.99) * 1000,
            "max_ms": max(values) * 1000,
            "errors": len(recorder.errors.get(endpoint, [])),
        }
        figures[endpoint] = row
        lines.append(
            f"{endpoint:22} {row['count']:6d} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} "
            f"{row['p99_ms']:8.1f} {row['max_ms']:8.1f} {row['errors']:6d}"
        )
    for endpoint, messages in recorder.errors.items():
        for message in sorted(set(messages))[:3]:
            lines.append(f"  error at {endpoint}: {message}")
    all_latencies = [value for values in recorder.latencies.values() for value in values]
    if all_latencies:
        lines.append(
            f"{'all':22} {len(all_latencies):6d} {statistics.median(all_latencies) * 1000:8.1f} "
            f"{percentile(all_latencies, 0.95) * 1000:8.1f} {percentile(all_latencies, 0.99) * 1000:8.1f}"
        )
    return lines, figures


def report(kind: str, recorder: Recorder, timing: dict, server_cpu: float, checked: dict) -> dict:
    requests_total = sum(len(values) for values in recorder.latencies.values())
    errors_total = sum(len(values) for values in recorder.errors.values())
    lines = [
        f"\n== {kind}: {requests_total} requests in {timing['wall_seconds']:.1f} s = "
        f"{requests_total / timing['wall_seconds']:.0f} req/s; errors {errors_total}; "
        f"load generator CPU {timing['client_cpu_seconds'] / timing['wall_seconds'] * 100:.0f}% of one core, "
        f"gunicorn CPU {server_cpu / timing['wall_seconds'] * 100:.0f}% of one core"
    ]
    table, figures = latency_table(recorder)
    lines.extend(table)
    lines.append(
        f"exactly-once check: {checked['accepted_submissions']} accepted submissions, "
        f"{checked['ratings_in_database']} ratings stored / {checked['ratings_expected']} expected, "
        f"{checked['completed_items']} items completed, {len(recorder.refused)} refused; "
        f"problems: {checked['problem_count']}"
    )
    lines.extend(f"  problem: {problem}" for problem in checked["problems"])
    slowest = max((row["p95_ms"] for row in figures.values()), default=float("nan"))
    verdict = "MET" if slowest <= 50 and errors_total == 0 and checked["problem_count"] == 0 else "MISSED"
    lines.append(f"target (p95 <= 50 ms every endpoint, 0 errors, exactly once): {verdict}")
    print("\n".join(lines), flush=True)
    return {
        "database": kind,
        "requests": requests_total,
        "errors": errors_total,
        "endpoints": figures,
        "check": checked,
        **timing,
    }


def bench_one(kind: str, args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"load-ratings-{kind}-"))
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
    run = Run(kind=kind, args=args, folder=folder)
    RUNS.append(run)
    try:
        target = run.start()
        cpu_before = process_tree_cpu(run.web.pid)
        recorder, timing = drive(target, args)
        server_cpu = process_tree_cpu(run.web.pid) - cpu_before
        run.stop_web()  # every request is answered (or failed) before the check reads the database
        results = folder / "results.json"
        results.write_text(json.dumps({"accepted": recorder.accepted, "refused": recorder.refused}))
        checked = json.loads(
            run.app(__file__, "verify", "--campaign", str(target["campaign"]), "--results", str(results))
            .strip()
            .splitlines()[-1]
        )
        return report(kind, recorder, timing, server_cpu, checked)
    finally:
        run.stop()
        shutil.rmtree(folder, ignore_errors=True)


RUNS: list[Run] = []


def watchdog(deadline: float) -> None:
    """Hard stop: kill what this script started and exit, whatever the main thread is doing."""
    time.sleep(deadline)
    print(f"\nwatchdog: hard deadline of {deadline:.0f} s reached; stopping everything", file=sys.stderr, flush=True)
    for run in RUNS:
        try:
            run.stop()
        except Exception as error:  # noqa: BLE001 - keep stopping the others
            print(f"watchdog: {error}", file=sys.stderr)
    os._exit(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    seed_parser = sub.add_parser("seed")
    verify_parser = sub.add_parser("verify")
    for command_parser in (parser, seed_parser):
        command_parser.add_argument("--raters", type=int, default=50)
        command_parser.add_argument("--clips", type=int, default=150)
        command_parser.add_argument(
            "--clip-seconds",
            type=float,
            default=10.0,
            help="listening time each item needs (default 10 s, an AudioCaps clip; 1 s is a 10x stress)",
        )
    verify_parser.add_argument("--campaign", type=int, required=True)
    verify_parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--databases", default="postgresql,sqlite", help="comma-separated: postgresql, sqlite")
    parser.add_argument(
        "--database-url",
        default="",
        help="use this (empty, migratable) PostgreSQL database instead of a private cluster",
    )
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=90,
        help="longest wait for gunicorn's workers to finish starting before the load",
    )
    parser.add_argument("--deadline", type=float, default=900, help="hard limit of the whole script (s)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.command == "seed":
        print(json.dumps(seed(raters=args.raters, clips=args.clips, clip_seconds=args.clip_seconds)))
        return
    if args.command == "verify":
        results = json.loads(args.results.read_text())
        print(json.dumps(verify(campaign_id=args.campaign, accepted=results["accepted"], refused=results["refused"])))
        return
    threading.Thread(target=watchdog, args=(args.deadline,), daemon=True).start()
    print(
        f"{args.raters} raters, {args.seconds:.0f} s, clips of {args.clip_seconds} s, "
        f"gunicorn {args.web_workers} workers, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    figures = [bench_one(kind.strip(), args) for kind in args.databases.split(",") if kind.strip()]
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
