"""Per-request cost of a crowd participant's endpoints, measured in-process: database queries and CPU time
(time.process_time, fair on a shared machine where wall time is not) for each request, middleware included.

Participants walk bench/crowd_load_bench.py's browser path (landing, consent, questionnaire, headphone screen,
practice, items with their audio, autosaves and answers, heartbeats, the end page, static files) through Django's
test client with DEBUG off; every 4th arrives from MTurk and its frame's status poll is measured too. Then each
endpoint that a participant repeats without changing anything (item page, heartbeat, status poll, end page) is
requested `--repeats` more times for a steadier CPU figure; `--profile ENDPOINT` prints cProfile's top functions
for that endpoint's repeats.

    runuser -u postgres -- psql -c "drop database if exists captioneval_crowdcpu" \\
        -c "create database captioneval_crowdcpu owner captioneval"
    DATABASE_URL=postgres://captioneval:captioneval@127.0.0.1:5432/captioneval_crowdcpu \\
        .venv/bin/python bench/crowd_request_cost.py --participants 8
"""

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

os.environ.update(
    {
        "DEBUG": "false",
        "SECRET_KEY": "crowd-request-cost-" + "x" * 40,
        "ALLOWED_HOSTS": "testserver",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
        "MUST_LISTEN_SECONDS": "1",
        "STUDY_HEARTBEAT_SECONDS": "1",
        "TRUSTED_PROXIES": "127.0.0.1",
        "EVENT_LOG_LEVEL": "WARNING",
    }
)
os.environ.setdefault("STUDY_UNSTARTED_LIMIT", "1000")
os.environ.setdefault("MEDIA_ROOT", "/tmp/crowd_request_cost/media")
os.environ.setdefault("STATIC_ROOT", "/tmp/crowd_request_cost/static")

from bench import crowd_load_bench, crowd_study  # noqa: E402

REPEATED = ("POST alive", "GET mturk status", "GET end")  # the item page, once answered, redirects


class Response:
    """What the walkers read of a `requests` response, from a Django test response."""

    def __init__(self, response):
        self.status_code = response.status_code
        self.content = b"".join(response.streaming_content) if response.streaming else response.content
        self.headers = {key: value for key, value in response.items()}

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        import json

        return json.loads(self.content)


_HANDLER = []


def _shared_handler():
    """One request handler for every participant's client, its middleware loaded before any request is measured, as
    in a web worker: a test client of its own would load them on its first request (WhiteNoise scanning every static
    file), which made each participant's first request, the arrival link, cost 150-250 ms more than it does."""
    if not _HANDLER:
        from django.test.client import ClientHandler

        handler = ClientHandler()
        handler.load_middleware()
        _HANDLER.append(handler)
    return _HANDLER[0]


class ClientSession:
    """requests.Session's surface over Django's test client (its cookies, headers of the session)."""

    def __init__(self, *, cookies: bool = True):
        from django.test import Client

        self.client = Client(REMOTE_ADDR="127.0.0.1")
        self.client.handler = _shared_handler()
        self.headers: dict = {}
        self.keep_cookies = cookies

    @property
    def cookies(self) -> dict:
        return {name: morsel.value for name, morsel in self.client.cookies.items()}

    def request(self, method, url, *, data=None, json=None, headers=None, **_transport):
        # _transport: requests' timeout and allow_redirects; the test client neither waits nor follows redirects.
        path = url.removeprefix("http://testserver")
        headers = {**self.headers, **(headers or {})}
        if not self.keep_cookies:
            self.client.cookies.clear()
        if method == "GET":
            response = self.client.get(path, headers=headers)
        elif json is not None:
            response = self.client.post(path, data=json, content_type="application/json", headers=headers)
        else:
            response = self.client.post(path, data=data or {}, headers=headers)
        return Response(response)


class CostRecorder:
    """bench.load_ratings.Recorder's `timed`, measuring each request's queries and CPU time instead."""

    def __init__(self, *, profiled: str = ""):
        import threading

        self.profiled = profiled
        self.profiler = cProfile.Profile()
        self.lock = threading.Lock()
        self.cpu = defaultdict(list)
        self.queries = defaultdict(list)
        self.errors = defaultdict(list)
        self.sql = {}  # endpoint -> its last request's queries
        self.last = {}  # endpoint -> (http, method, url, options) of its last request, for the repeats

    def timed(self, endpoint, http, method, url, *, expect, **options):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        expected = (expect,) if isinstance(expect, int) else expect
        with CaptureQueriesContext(connection) as captured:
            if endpoint == self.profiled:
                self.profiler.enable()
            started = time.process_time()
            response = http.request(method, url, **options)
            spent = time.process_time() - started
            if endpoint == self.profiled:
                self.profiler.disable()
        self.cpu[endpoint].append(spent)
        self.queries[endpoint].append(len(captured))
        self.last[endpoint] = (http, method, url, options)
        self.sql[endpoint] = [query["sql"] for query in captured.captured_queries]
        if response.status_code not in expected:
            self.errors[endpoint].append(f"HTTP {response.status_code}: {response.text[:200]!r}")
            return None
        return response


class Walker(crowd_load_bench.BrowserParticipant):
    def __init__(self, **options):
        super().__init__(**options)
        self.http = ClientSession()
        self.http.headers["X-Forwarded-For"] = self.address


class MTurkWalker(crowd_load_bench.MTurkParticipant):
    def __init__(self, **options):
        super().__init__(**options)
        self.http = ClientSession()
        self.http.headers["X-Forwarded-For"] = self.address

    def run(self) -> None:
        import threading

        # The frame's poller runs here as the worker's run waits for it (one request at a time in-process): once,
        # after the end page, as its last poll in the browser (the first ones, while working, cost the same).
        walker = self

        class FramePoll:
            def __init__(self, target, args):
                self.url = args[0]

            def start(self):
                pass

            def join(self, timeout=None):
                frame = ClientSession(cookies=False)
                frame.headers["X-Forwarded-For"] = walker.address
                response = walker.recorder.timed("GET mturk status", frame, "GET", self.url, expect=200)
                if response is not None:
                    walker.frame_status = response.json()

        original = threading.Thread
        threading.Thread = FramePoll
        try:
            super().run()
        finally:
            threading.Thread = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", type=int, default=8)
    parser.add_argument("--share", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--profile", default="", help="an endpoint name, e.g. 'POST alive'")
    parser.add_argument("--show-queries", action="append", default=[], help="print an endpoint's last queries")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        parser.error("set DATABASE_URL to an empty PostgreSQL database")

    crowd_study._django()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    seeded = crowd_study.seed(
        participants=args.participants, share=args.share, checks=1, judgements=3, clip_seconds=1.2, screens="antiphase"
    )
    crowd_load_bench.mturk_enable(seeded["slug"])
    recorder = CostRecorder(profiled=args.profile)
    walk = argparse.Namespace(
        page_seconds=0.0,
        listen_seconds=1.0,
        think_seconds=0.0,
        heartbeat_seconds=0.5,
        busy_retry_seconds=0.0,
        deadline=10,
    )
    for index in range(args.participants):
        kind = MTurkWalker if index % 4 == 3 else Walker
        person = kind(
            base_url="http://testserver",
            slug=seeded["slug"],
            index=index,
            oracle=seeded["oracle"],
            args=walk,
            recorder=recorder,
        )
        person.run()
    walked = {endpoint: list(values) for endpoint, values in recorder.cpu.items()}
    for endpoint in REPEATED:
        if endpoint not in recorder.last:
            continue
        http, method, url, options = recorder.last[endpoint]
        recorder.cpu[endpoint].clear()
        recorder.queries[endpoint].clear()
        for _ in range(args.repeats):
            recorder.timed(endpoint, http, method, url, expect=200, **options)
    print(f"load average {os.getloadavg()[0]:.2f}; participants {args.participants}, repeats {args.repeats}")
    print(f"{'endpoint':<22} {'n':>4} {'queries (median/max)':>21} {'CPU ms median':>14} {'mean':>7} {'min':>7}")
    for endpoint in sorted(recorder.cpu):
        cpu = recorder.cpu[endpoint] or walked[endpoint]
        queries = recorder.queries[endpoint]
        print(
            f"{endpoint:<22} {len(cpu):>4} {statistics.median(queries):>14.0f} / {max(queries):<4}"
            f" {1000 * statistics.median(cpu):>14.2f} {1000 * statistics.mean(cpu):>7.2f} {1000 * min(cpu):>7.2f}"
        )
    for endpoint, errors in recorder.errors.items():
        print(f"ERRORS {endpoint}: {len(errors)}, e.g. {errors[0]}")
    for endpoint in args.show_queries:
        print(f"--- {endpoint}")
        for sql in recorder.sql.get(endpoint, []):
            print("   ", sql[:300])
    if args.profile:
        pstats.Stats(recorder.profiler).sort_stats("tottime").print_stats(25)
        pstats.Stats(recorder.profiler).sort_stats("cumulative").print_stats(60)


if __name__ == "__main__":
    main()
