"""Load bench of a crowd study along the path a participant's browser takes, behind a proxy, served as ./scripts/run
serves it.

bench/crowd_study.py's study and checks (seeded on a fresh database: clips with audio, gold checks, the antiphase
screen, shares sized for 90 % of the consenting arrivals; afterwards every item exactly at its judgement count from
distinct participants, nobody over their share, every participant shown the code of their outcome), with what that
bench leaves out of a browser's requests:

- **static files**: every page's stylesheets, scripts and icons are fetched as a browser does, through a cache of
  its own per participant that keeps a file for its `Cache-Control: max-age` (content-hashed names are immutable,
  config/static_storage.py): the first page fetches them, a returning page only what expired or is new;
- **autosaves**: the choice is saved as a draft (POST /ratings/items/<token>/draft/) before it is submitted, as
  static/ratings/js/pairwise_item.js does on every change;
- **polls**: the study bar's heartbeat (POST /study/<slug>/alive/) every `--heartbeat-seconds` from each page's
  load while the participant is on it (static/ratings/js/study_clock.js); STUDY_HEARTBEAT_SECONDS is set to it,
  by default the product's default of 60 s, so pages read for less than a minute send none (a smaller value such
  as 5 makes every page beat: a heavier load than a real study's);
- **distinct addresses behind a trusted proxy**: each participant's requests carry `X-Forwarded-For: <its own
  address>` from 127.0.0.1, listed in TRUSTED_PROXIES (common/client_address.py), with the default
  STUDY_ARRIVALS_PER_ADDRESS (20): were the proxy's address counted, the 21st arrival would be refused;
- **MTurk workers** (every `--mturk-every`-th participant; the study recruits on Prolific and MTurk): MTurk shows the
  landing page in the HIT's frame, which asks the participant's status (GET /study/<slug>/status/<token>/, no
  cookies) on arrival, every 30 s until the study is over, and at once when the study window's end page tells it
  (static/ratings/js/study_mturk_frame.js), while the worker does the study in a window of its own opened from the
  frame's signed link; the code the frame reads must be the end page's;
- **gunicorn as ./scripts/run starts it**: config/gunicorn.py with (2 x cores) + 1 workers (at most 9; `--web-workers`
  sets another count), its log level and access-log format, DEBUG off, `collectstatic` run first.

Listening is shortened by the documented test setting MUST_LISTEN_SECONDS (`--listen-seconds`, the clips last that
long). STUDY_UNSTARTED_LIMIT is raised to the number of participants: with everyone arriving within a minute, the
default 50 would ask the later ones to come back in a few minutes (a 503 the bench would count as an error).

Before the crowd, one participant walks the same path alone on the same server (the reference): the report gives
each endpoint's p95 under load as a ratio to its median alone, and a timeline: per 10 s from the first arrival, the
crowd's app requests (static files excepted) with their p50 and p95, which tells a peak during the arrivals from
one in the steady state after.

The server runs on PostgreSQL with the embedded broker and the database's cache table, as ./scripts/run without
REDIS_URL; `--redis-url` serves it on PostgreSQL and Redis (the shared cache, the sessions read from it, the broker)
as docker-compose deploys it. That Redis database is flushed first: give one the tests leave alone (they use 0, 1 and
15 down).

    runuser -u postgres -- psql -c "drop database if exists captioneval_crowdload" \\
        -c "create database captioneval_crowdload owner captioneval"
    HF_HUB_OFFLINE=1 .venv/bin/python bench/crowd_load_bench.py \\
        --database-url postgres://captioneval:captioneval@127.0.0.1:5432/captioneval_crowdload \\
        --redis-url redis://127.0.0.1:6390/5

Targets: 300 participants arriving within 60 s, p95 <= 100 ms on every app endpoint, 0 errors, exact coverage.
"""

import os
import re
import sys
import threading
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from bench import crowd_study, thin_http  # noqa: E402
from bench.load_ratings import Recorder, percentile, process_tree_cpu  # noqa: E402
from scripts.stack import wait_for_port  # noqa: E402  (no Django import)

ASSET_RE = re.compile(r'<(?:script|link|img)\b[^>]*?\b(?:src|href)="(/static/[^"]+)"')
ALIVE_RE = re.compile(r'data-alive-url="([^"]+)"')
DRAFT_RE = re.compile(r'data-draft-url="([^"]+)"')
MAX_AGE_RE = re.compile(r"max-age=(\d+)")
START_FORM_RE = re.compile(r'<form [^>]*id="start-form"')
STATUS_URL_RE = re.compile(r'data-status-url="([^"]+)"')
ENTER_URL_RE = re.compile(r'href="([^"]+\?framed=1)"')
MTURK_POLL_SECONDS = 30  # study_mturk_frame.js, while the study window has not told the frame
MTURK_RETRY_SECONDS = 10  # after a failed poll (the frame doubles it on each failure in a row)
MTURK_RETRY_MAX_SECONDS = 120
STATIC_ENDPOINT = "GET static"
TIMELINE_WINDOW_SECONDS = 10


def run_script_workers() -> int:
    """gunicorn's worker count as ./scripts/run sets it: (2 x cores) + 1, at most 9."""
    return min(9, 2 * (os.cpu_count() or 1) + 1)


class BrowserParticipant(crowd_study.Participant):
    """A participant whose requests are a browser's: static files through a cache, autosaves, heartbeats, from an
    address of its own behind the proxy."""

    def __init__(self, **options):
        super().__init__(**options)
        self.address = f"10.{self.index // 65536 % 256}.{self.index // 256 % 256}.{self.index % 256}"
        self.http.headers["X-Forwarded-For"] = self.address
        self.cache: dict[str, float] = {}  # static URL -> when the browser's copy expires (monotonic)
        self.requests_made = 0
        self.static_requests = 0
        self.alive_url = ""
        self.page_loaded_at = 0.0
        self.busy_retries = 0  # starts refused with "Not yet" (every share reserved by someone still rating)

    def request(self, endpoint: str, method: str, path: str, *, expect, **options):
        response = super().request(endpoint, method, path, expect=expect, **options)
        self.requests_made += 1
        if response is not None and "text/html" in response.headers.get("Content-Type", ""):
            self.page_loaded(response.text)
        return response

    def page_loaded(self, html: str) -> None:
        """What the browser does with a page it shows: fetch the files its cache lacks, start the page's clock."""
        now = time.monotonic()
        for url in dict.fromkeys(ASSET_RE.findall(html)):
            if self.cache.get(url, 0.0) > now:
                continue
            served = super().request(STATIC_ENDPOINT, "GET", url, expect=200)
            self.requests_made += 1
            self.static_requests += 1
            if served is not None:
                lifetime = MAX_AGE_RE.search(served.headers.get("Cache-Control", ""))
                self.cache[url] = now + (int(lifetime.group(1)) if lifetime else 0)
        alive = ALIVE_RE.search(html)
        self.alive_url = alive.group(1) if alive else ""
        self.page_loaded_at = time.monotonic()

    def wait(self, seconds: float) -> None:
        """The participant stays on the page for `seconds`; its heartbeat beats meanwhile, counted from the page's
        load (the script's setInterval)."""
        until = time.monotonic() + seconds
        every = self.args.heartbeat_seconds
        while self.alive_url and every > 0:
            beats = int((time.monotonic() - self.page_loaded_at) // every) + 1
            next_beat = self.page_loaded_at + beats * every
            if next_beat >= until:
                break
            time.sleep(max(0.0, next_beat - time.monotonic()))
            self.request(
                "POST alive",
                "POST",
                self.alive_url,
                expect=200,
                headers={"X-CSRFToken": self.http.cookies.get("csrftoken"), "Referer": self.base_url},
            )
        time.sleep(max(0.0, until - time.monotonic()))

    def _post_form(self, endpoint: str, path: str, page_text: str, data: dict):
        self.wait(self.args.page_seconds)  # the person reads the page and fills it in before sending it
        return self.request(
            endpoint,
            "POST",
            path,
            expect=302,
            data={"csrfmiddlewaretoken": self._csrf(page_text), **data},
            headers={"Referer": self.base_url + path},
        )

    def practice(self, path: str, text: str):
        """The instructions page. Back on it after "Not yet" (every share reserved, some may come back), the page
        offers the start button only, the practice being done: a browser sends no practice again, and the person,
        told to try again in a few minutes, waits on the page (its heartbeat beating) before pressing it again."""
        if START_FORM_RE.search(text) is None:
            return super().practice(path, text)
        self.busy_retries += 1
        self.wait(self.args.busy_retry_seconds)
        return self.request(
            "POST start share",
            "POST",
            f"/study/{self.slug}/start/",
            expect=302,
            data={"csrfmiddlewaretoken": self._csrf(text)},
            headers={"Referer": self.base_url + path},
        )

    def item(self, path: str):
        page = self.request("GET item", "GET", path, expect=200)
        if page is None:
            return None
        audio = self.request("GET item audio", "GET", f"{path}audio/", expect=200)
        if audio is None:
            return None
        served = time.monotonic()  # listening runs from when the server sent the audio
        word = self.oracle.get(crowd_study.hashlib.sha256(audio.content).hexdigest())
        if word is None:
            with self.recorder.lock:
                self.recorder.errors["GET item audio"].append("the audio served is no clip's rater copy")
        texts = crowd_study.CAPTION_RE.findall(page.text)
        self.wait(max(0.0, served + self.args.listen_seconds + 0.05 - time.monotonic()))
        json_headers = {"X-CSRFToken": self.http.cookies.get("csrftoken"), "Referer": self.base_url + path}
        if self.request("POST listened", "POST", f"{path}listened/", expect=200, json={}, headers=json_headers) is None:
            return None
        fits = [word is not None and crowd_study.CLIP_WORD_RE.search(text) and word in text for text in texts[:2]]
        side = (
            "left"
            if fits == [True, False]
            else "right"
            if fits == [False, True]
            else self.rng.choice(["left", "right", "none"])
        )
        version = crowd_study.VERSION_RE.search(page.text).group(1)
        # The choice is made halfway through reading the captions and autosaved at once; the rest of the time the
        # participant checks it before submitting.
        self.wait(self.args.think_seconds / 2)
        draft = {"version": int(version), "fields": {"side": side}}
        if (
            self.request(
                "POST draft", "POST", DRAFT_RE.search(page.text).group(1), expect=200, json=draft, headers=json_headers
            )
            is None
        ):
            return None
        self.wait(self.args.think_seconds / 2)
        data = {"csrfmiddlewaretoken": self._csrf(page.text), "version": version, "side": side}
        return self.request(
            "POST answer", "POST", path, expect=302, data=data, headers={"Referer": self.base_url + path}
        )


class MTurkParticipant(BrowserParticipant):
    """A worker arriving from MTurk: the HIT's frame shows the landing page and polls the participant's status
    while the worker does the study in a window of its own (the same browser: its cache and cookies), whose end
    page tells the frame to ask at once."""

    def __init__(self, **options):
        super().__init__(**options)
        self.pid = f"W{self.index + 1:023X}"  # MTurk's ids are capital letters and digits
        self.status_polls = 0
        self.frame_status: dict = {}
        self.end_page_told = threading.Event()  # the end page's message to the frame (study_end_opener.js)

    def run(self) -> None:
        hit = f"workerId={self.pid}&assignmentId=A{self.pid}&hitId={'H' * 20}&turkSubmitTo=https://www.mturk.com"
        frame = self.request("GET arrival link", "GET", f"/study/{self.slug}/?{hit}", expect=200)
        if frame is None:
            return
        poller = threading.Thread(target=self.frame_poll, args=(STATUS_URL_RE.search(frame.text).group(1),))
        poller.start()
        response = self.request("GET enter link", "GET", ENTER_URL_RE.search(frame.text).group(1), expect=302)
        steps = 0
        while response is not None and steps < 200:
            steps += 1
            response = self.step(response.headers["Location"].removeprefix(self.base_url))
        if self.seen["status"]:
            self.end_page_told.set()
        poller.join(timeout=self.args.deadline)
        if self.frame_status.get("code", "") != self.seen["code"]:
            with self.recorder.lock:
                self.recorder.errors["GET mturk status"].append(
                    f"the frame read {self.frame_status}, the end page showed {self.seen}"
                )

    def frame_poll(self, url: str) -> None:
        """The frame's script: fetch the status without cookies on arrival, then every 30 s or at once when the end
        page told the frame (after a failure 10 s, doubling), until finished."""
        http = thin_http.Session()
        http.headers["X-Forwarded-For"] = self.address
        failures = 0
        while True:
            response = self.recorder.timed(
                "GET mturk status", http, "GET", self.base_url + url, expect=200, allow_redirects=False
            )
            self.status_polls += 1
            if response is None:
                failures += 1
                time.sleep(min(MTURK_RETRY_SECONDS * 2 ** (failures - 1), MTURK_RETRY_MAX_SECONDS))
                continue
            failures = 0
            status = response.json()
            if status["finished"]:
                self.frame_status = status
                return
            # A message that came while the poll was on its way is not lost: the event stays set until waited on.
            if self.end_page_told.wait(timeout=MTURK_POLL_SECONDS):
                self.end_page_told.clear()  # one poll per message, as the frame does


def mturk_enable(slug: str) -> None:
    """Inside the app's environment: the study recruits on MTurk too (which pays in USD)."""
    crowd_study._django()
    from ratings.models_study import Study

    Study.objects.filter(slug=slug).update(platforms=["prolific", "mturk"], reward_currency="USD")


class Run(crowd_study.Run):
    """crowd_study's run behind the proxy, with gunicorn started by ./scripts/run's command line."""

    def extra_env(self, participants: int) -> dict:
        return {
            "TRUSTED_PROXIES": "127.0.0.1",
            "STUDY_ARRIVALS_PER_ADDRESS": "20",  # the default: the distinct addresses must be told apart
            "STUDY_UNSTARTED_LIMIT": str(participants),
            "STUDY_HEARTBEAT_SECONDS": str(self.args.heartbeat_seconds),
            "EVENT_LOG_LEVEL": "WARNING",
        }

    def web_start(self, port: int):
        import subprocess

        env = {**self.env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(self.args.web_workers)}
        with open(self.folder / "gunicorn.log", "ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "-c",
                    "config/gunicorn.py",
                    "--log-level",
                    "warning",
                    "--access-logformat",
                    "%(s)s %(m)s %(U)s %(M)sms",
                    "config.wsgi",
                ],
                cwd=PROJECT_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for_port(port, timeout=120, process=process, what="gunicorn")
        return process


def drive(target: dict, args, indexes: range, arrival_seconds: float) -> tuple[Recorder, dict, list]:
    """The participants `indexes` arriving at random moments within `arrival_seconds`; returns the recorder, the
    wall and load-generator CPU, and the participants."""
    recorder = Recorder()
    arrivals = crowd_study.random.Random(indexes.start)
    every = args.mturk_every
    people = [
        (MTurkParticipant if every and index % every == every - 1 else BrowserParticipant)(
            base_url=target["base_url"],
            slug=target["slug"],
            index=index,
            oracle=target["oracle"],
            args=args,
            recorder=recorder,
        )
        for index in indexes
    ]
    offsets = sorted(arrivals.uniform(0, arrival_seconds) for _ in people)
    began = time.monotonic()

    def run(person, offset: float) -> None:
        time.sleep(max(0.0, began + offset - time.monotonic()))
        try:
            person.run()
        except Exception as error:  # noqa: BLE001 - a participant that broke down is an error of the run
            with recorder.lock:
                recorder.errors["participant"].append(f"{type(error).__name__}: {error}"[:200])

    threads = [threading.Thread(target=run, args=pair, daemon=True) for pair in zip(people, offsets, strict=True)]
    cpu_began = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1.0, args.deadline - (time.monotonic() - began)))
    timing = {"wall_seconds": time.monotonic() - began, "client_cpu_seconds": time.process_time() - cpu_began}
    return recorder, timing, people


def per_participant(people: list) -> str:
    completed = [person for person in people if person.seen["status"] == "completed"]
    rest = [person for person in people if person.seen["status"] != "completed"]
    workers = [person for person in people if isinstance(person, MTurkParticipant)]

    def mean(values):
        return sum(values) / len(values) if values else float("nan")

    return (
        f"requests per completed participant {mean([p.requests_made for p in completed]):.1f} "
        f"(static {mean([p.static_requests for p in completed]):.1f}) over {len(completed)} participants; "
        f"per other participant (declined, found the study full) {mean([p.requests_made for p in rest]):.1f} "
        f'over {len(rest)}; starts refused with "Not yet" {sum(p.busy_retries for p in people)}; '
        f"MTurk workers {len(workers)} (status polls {sum(p.status_polls for p in workers)})"
    )


def timeline(recorder: Recorder, window_seconds: float = TIMELINE_WINDOW_SECONDS) -> list[dict]:
    """The app's requests (static files excepted) per window of `window_seconds` from the first arrival, by when they
    began: how many, their p50 and p95 (None in a window without requests)."""
    began_and_took = [
        (began, took)
        for endpoint, latencies in recorder.latencies.items()
        if endpoint != STATIC_ENDPOINT
        for began, took in zip(recorder.started[endpoint], latencies, strict=True)
    ]
    if not began_and_took:
        return []
    first = min(began for began, _ in began_and_took)
    windows: dict[int, list[float]] = {}
    for began, took in began_and_took:
        windows.setdefault(int((began - first) // window_seconds), []).append(took)
    rows = []
    for index in range(max(windows) + 1):
        took = windows.get(index, [])
        rows.append(
            {
                "from_seconds": index * window_seconds,
                "requests": len(took),
                "p50_ms": percentile(took, 0.50) * 1000 if took else None,
                "p95_ms": percentile(took, 0.95) * 1000 if took else None,
            }
        )
    return rows


def timeline_lines(rows: list[dict]) -> list[str]:
    lines = [f"timeline (app requests, static excepted, per {TIMELINE_WINDOW_SECONDS} s from the first arrival):"]
    lines.append(f"  {'from s':>6} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for row in rows:
        p50, p95 = (f"{row[key]:8.1f}" if row[key] is not None else f"{'-':>8}" for key in ("p50_ms", "p95_ms"))
        lines.append(f"  {row['from_seconds']:6.0f} {row['requests']:8d} {p50} {p95}")
    return lines


def bench(args) -> None:
    import argparse
    import json
    import shutil
    import tempfile

    participants = args.participants
    folder = Path(tempfile.mkdtemp(prefix="crowd-load-bench-"))
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
    args.web_workers = args.web_workers or run_script_workers()
    run = Run(kind="postgresql", args=args, folder=folder)
    crowd_study.RUNS.append(run)
    try:
        # One more participant than the crowd: the reference walks first and holds a share of its own.
        target = run.start(participants + 1)
        if args.mturk_every:
            run.app(__file__, "mturk-enable", target["slug"])
        # The reference walks without reading pauses (the listening time is still the server's rule): on a busy
        # machine a lone participant at a person's pace takes minutes that tell nothing more.
        quick = argparse.Namespace(**{**vars(args), "page_seconds": 0.0, "think_seconds": 0.0})
        reference, _, alone = drive(
            target, args=quick, indexes=range(participants, participants + 1), arrival_seconds=0.0
        )
        print(f"reference (one participant alone): {per_participant(alone)}", flush=True)
        load_before = os.getloadavg()[0]
        cpu_before = process_tree_cpu(run.web.pid)
        restarts_before = crowd_study.worker_restarts(folder / "gunicorn.log")
        recorder, timing, people = drive(target, args, range(participants), args.arrival_seconds)
        server_cpu = process_tree_cpu(run.web.pid) - cpu_before
        load_after = os.getloadavg()[0]
        run.stop_web()  # every request is answered before the check reads the database
        timing["worker_restarts"] = crowd_study.worker_restarts(folder / "gunicorn.log") - restarts_before
        seen = {person.pid: person.seen for person in [*people, *alone]}
        (folder / "seen.json").write_text(json.dumps(seen))
        checked = json.loads(
            run.app(crowd_study.__file__, "verify", "--slug", target["slug"], "--seen", str(folder / "seen.json"))
            .strip()
            .splitlines()[-1]
        )
        crowd_study.ARGS = args
        figures = crowd_study.report(
            "postgresql", participants, recorder, timing, server_cpu, checked, (load_before, load_after)
        )
        print(per_participant(people))
        print("p95 under load / median of the participant alone:")
        for endpoint, row in sorted(figures["endpoints"].items()):
            timed_alone = reference.latencies.get(endpoint)
            alone_median = percentile(timed_alone, 0.5) * 1000 if timed_alone else float("nan")
            ratio = row["p95_ms"] / alone_median if timed_alone else float("nan")
            print(f"  {endpoint:<24} {row['p95_ms']:7.1f} ms / {alone_median:6.1f} ms = {ratio:5.1f}x")
        figures["timeline"] = timeline(recorder)
        print("\n".join(timeline_lines(figures["timeline"])), flush=True)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=str))
    finally:
        run.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    import argparse

    if sys.argv[1:2] == ["mturk-enable"]:
        mturk_enable(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", type=int, default=300)
    parser.add_argument("--arrival-seconds", type=float, default=60)
    parser.add_argument("--share", type=int, default=20)
    parser.add_argument("--checks", type=int, default=2)
    parser.add_argument("--judgements", type=int, default=4)
    parser.add_argument("--clip-seconds", type=float, default=2.0)
    parser.add_argument("--screens", choices=["antiphase", "none"], default="antiphase")
    parser.add_argument("--listen-seconds", type=int, default=2, help="MUST_LISTEN_SECONDS (the clips are 2 s)")
    parser.add_argument("--think-seconds", type=float, default=8.0, help="after listening, before answering")
    parser.add_argument("--page-seconds", type=float, default=3.0, help="reading each page of the path")
    parser.add_argument(
        "--heartbeat-seconds", type=int, default=60, help="STUDY_HEARTBEAT_SECONDS (default: the product's, 60)"
    )
    parser.add_argument(
        "--busy-retry-seconds",
        type=float,
        default=30,
        help='how long a participant told "Not yet" (every share reserved) waits before pressing Start again',
    )
    parser.add_argument(
        "--mturk-every", type=int, default=4, help="every n-th participant arrives from MTurk (0: none)"
    )
    parser.add_argument("--database-url", default="", help="an empty PostgreSQL database (else a private cluster)")
    parser.add_argument(
        "--redis-url",
        default="",
        help="serve with this Redis as docker-compose does, its database flushed first (e.g. "
        "redis://127.0.0.1:6390/5); default: none (embedded broker, the database's cache table)",
    )
    parser.add_argument("--settle-seconds", type=float, default=90)
    parser.add_argument("--deadline", type=float, default=2400, help="hard limit of the whole script (s)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--web-workers", type=int, default=0, help="gunicorn workers (default: as ./scripts/run starts it)"
    )
    args = parser.parse_args()
    threading.Thread(target=crowd_study.watchdog, args=(args.deadline,), daemon=True).start()
    print(
        f"crowd load bench: {args.participants} participants within {args.arrival_seconds:.0f} s, shares of "
        f"{args.share} + {args.checks} checks, {args.judgements} judgements per item, gunicorn "
        f"{args.web_workers or run_script_workers()} workers, heartbeat every {args.heartbeat_seconds} s, MTurk every "
        f"{args.mturk_every or 'none'}, Redis {args.redis_url or 'none'}, load average "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    bench(args)


if __name__ == "__main__":
    main()
