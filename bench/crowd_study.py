"""Load bench of a crowd study: participants arriving from Prolific over real HTTP, each doing the whole path.

For each database (a private PostgreSQL cluster started here, or --database-url; and the SQLite default on a
file) it
  1. migrates a fresh database and seeds a pairwise study: clips with audio (a tone of its own per clip),
     five references and two machine captions each, HC/HM/MM pairs to cover and gold HI pairs as attention
     checks, published as a Prolific study with a questionnaire, the antiphase headphone screen, shares of
     `--share` items plus `--checks` checks, `--judgements` judgements per item; the pairs are sized so that 90 %
     of the participants who consent fill the study exactly (the others find it full);
  2. starts gunicorn with config/gunicorn.py (DEBUG off, the Docker image's settings), `--web-workers` workers,
     with MUST_LISTEN_SECONDS set to `--listen-seconds` (the test setting that shortens listening);
  3. lets `--participants` simulated participants (threads) arrive at random moments within `--arrival-seconds`
     and do what a participant's browser does: the arrival link, landing, consent (one in 50 declines), the
     questionnaire, the headphone screen (calibration and six trial sounds, each answered by the levels a
     listener hears), the instructions and practice sound, then every item of the share (page, audio, listening
     report after `--listen-seconds`, the answer after `--think-seconds` more; gold pairs answered like a
     listener who heard the clip: the caption of the clip whose tone was served), and the end page with its code.
     The pace is a person's, with listening shortened: `--page-seconds` (3 s) reading each page of the path
     before sending it, the trial sounds fetched one after another as the page plays them, each clip's 2 s heard
     in full and 8 s to read the two captions and choose (a real AudioCaps clip lasts 10 s, so the bench asks
     for about twice a real study's requests per second). `--listen-seconds 1 --think-seconds 1 --page-seconds 0`
     is the stress pace of earlier runs (about 3 times what two cores serve);
  4. stops gunicorn and checks the database: every item exactly at its judgement count from distinct
     participants (included judgements), nobody over their share, every completed participant shown the study's
     completion code, the others the code of their outcome, nobody excluded.
It prints p50/p95/p99/max per endpoint, errors (unexpected status or transport error), requests/s, the load
average before and after, the load generator's and gunicorn's CPU and how many workers gunicorn restarted during the
run (config/gunicorn.py's max_requests). A watchdog kills what it started at
`--deadline` s.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/crowd_study.py                   # PostgreSQL 200, then SQLite 50
    HF_HUB_OFFLINE=1 .venv/bin/python bench/crowd_study.py --databases sqlite --participants 50

Targets (a study with hundreds of people arriving at once): 0 errors, p95 <= 100 ms on every endpoint,
exact coverage, valid codes.
"""

import argparse
import hashlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

import numpy as np

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from bench import thin_http  # noqa: E402
from bench.load_ratings import Recorder, latency_table, process_tree_cpu, wait_until_idle  # noqa: E402
from bench.load_ratings import Run as LoadRun  # noqa: E402
from scripts.stack import free_port, gunicorn_start, loopback_production_env  # noqa: E402  (no Django import)

CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
VERSION_RE = re.compile(r'name="version" value="(\d+)"')
CHECK_RE = re.compile(r'name="check_id" value="(\d+)"')
TRIAL_RE = re.compile(r'data-url="(/ratings/headphones/attempts/\d+/trials/\d+\.wav)"')
CALIBRATION_RE = re.compile(r'src="(/ratings/headphones/antiphase/calibration\.wav)"')
CAPTION_RE = re.compile(r'<span class="caption-text">([^<]*)</span>')
CODE_RE = re.compile(r'id="completion-code">([A-Z0-9]+)<')
STATUS_RE = re.compile(r'data-status="([a-z_]+)"')
ITEM_RE = re.compile(r"^/ratings/items/([a-z0-9]+)/$")
CLIP_WORD_RE = re.compile(r"\bsound(\d{4})\b")
SAMPLE_RATE = 16000
DECLINE_EVERY = 50


# --- Inside the app's environment (subprocesses: seed and verify) ---------------------------------------


def _django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _tone_wav(frequency: float, seconds: float) -> bytes:
    samples = 0.25 * np.sin(2 * np.pi * frequency * np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as output:
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(SAMPLE_RATE)
        output.writeframes((samples * 32767).astype("<i2").tobytes())
    return buffer.getvalue()


def seed(*, participants: int, share: int, checks: int, judgements: int, clip_seconds: float, screens: str) -> dict:
    """The study; returns its slug and, per clip's rater copy (sha256 of the bytes a participant is served), the
    word its own captions carry."""
    _django()
    from django.core.files.base import ContentFile

    from corpus.models import Caption, CaptioningSystem, Clip, Dataset
    from corpus.services.rater_audio import rater_audio_build_missing
    from ratings.services.campaigns import campaign_setup
    from ratings.services.studies import DEFAULT_QUESTIONNAIRE, questionnaire_parse, study_publish

    consenting = participants - participants // DECLINE_EVERY
    shares = max(1, int(consenting * 0.9))
    regular = shares * share // judgements
    per_split = -(-regular // 3)
    clip_count = per_split + 1
    hi_count = max(checks * 10, 20)
    # The gold HI pairs take their foreign caption from donor clips that are nobody's items (the campaign names
    # its clips, so the donors are the dataset's other clips): enough of them for one reference per HI pair.
    donor_count = -(-hi_count // 5)
    dataset = Dataset.objects.create(name="crowd-bench")
    systems = [CaptioningSystem.objects.create(name=f"bench-system-{index}") for index in range(2)]
    oracle = {}
    clips = []
    for index in range(clip_count + donor_count):
        word = f"sound{index:04d}"
        content = _tone_wav(180.0 + 7.0 * index, clip_seconds)
        clip = Clip(dataset=dataset, external_id=f"{word}.wav", duration_seconds=clip_seconds, sample_rate=SAMPLE_RATE)
        clip.audio.save(f"{word}.wav", ContentFile(content), save=False)
        clip.waveform_peaks = [0.5] * 100
        clip.save()
        if index < clip_count:
            clips.append(clip)
        Caption.objects.bulk_create(
            [
                Caption(
                    clip=clip,
                    text=f"{word}: a steady tone, take {position}",
                    role="reference",
                    author_kind="human",
                    position=position,
                )
                for position in range(5)
            ]
            + [
                Caption(
                    clip=clip,
                    text=f"{word}: a hum from system {number}",
                    role="candidate",
                    author_kind="machine",
                    system=system,
                )
                for number, system in enumerate(systems)
            ]
        )
    # Participants are served each clip's rater copy (the samples without the upload's metadata), made here as the
    # build_rater_audio command makes it; a listener "hears" which clip it is by the copy's bytes.
    rater_audio_build_missing(clips=clips)
    for clip in clips:
        clip.refresh_from_db(fields=["rater_audio"])
        with clip.rater_audio.open("rb") as served:
            oracle[hashlib.sha256(served.read()).hexdigest()] = clip.external_id.removesuffix(".wav")
    counts = {"HC": regular - 2 * (regular // 3), "HM": regular // 3, "MM": regular // 3, "HI": hi_count}
    campaign = campaign_setup(
        name="crowd-bench",
        dataset=dataset,
        task_type="pairwise",
        judgements_per_item=judgements,
        clips=clips,
        split_counts=counts,
        gold_from_hi=True,
        title="Which description fits the sound?",
    )
    study = study_publish(
        campaign=campaign,
        consent_text="A bench.",
        questionnaire=questionnaire_parse(DEFAULT_QUESTIONNAIRE),
        screens=screens,
        items_per_participant=share,
        attention_checks=checks,
        time_limit_minutes=60,
        reward=2,
    )
    return {"slug": study.slug, "oracle": oracle, "regular_pairs": regular, "shares": shares}


def verify(*, slug: str, seen: dict) -> dict:
    """Compare the database with what the participants saw; returns counts and the list of problems."""
    _django()
    from collections import Counter

    from ratings.models import AssignmentItem, PairwiseVote
    from ratings.models_study import Participant, Study
    from ratings.selectors import included_votes
    from ratings.services.study_report import participant_code
    from ratings.services.study_shares import study_coverage

    study = Study.objects.select_related("campaign").get(slug=slug)
    campaign, problems = study.campaign, []
    per_item = campaign.judgements_per_item
    votes = included_votes(PairwiseVote.objects.filter(campaign=campaign, pair__gold_choice=""))
    raters_by_pair: dict[int, list[int]] = {}
    for pair_id, rater_id in votes.values_list("pair_id", "rater_id"):
        raters_by_pair.setdefault(pair_id, []).append(rater_id)
    regular = set(campaign.pairs.filter(gold_choice="").values_list("pk", flat=True))
    for pair_id in regular:
        raters = raters_by_pair.get(pair_id, [])
        if len(raters) != per_item:
            problems.append(f"pair {pair_id}: {len(raters)} included judgements, expected {per_item}")
        if len(set(raters)) != len(raters):
            problems.append(f"pair {pair_id}: a participant judged it twice")
    items = Counter(
        AssignmentItem.objects.filter(assignment__campaign=campaign, pair__gold_choice="").values_list(
            "assignment__rater_id", flat=True
        )
    )
    over = [rater for rater, count in items.items() if count > study.items_per_participant]
    if over:
        problems.append(f"{len(over)} participants over their share")
    statuses = Counter()
    for participant in Participant.objects.filter(study=study).select_related("study"):
        statuses[participant.outcome] += 1
        shown = seen.get(participant.platform_id)
        if shown is None:
            problems.append(f"participant {participant.platform_id}: not seen by the load generator")
            continue
        if shown["status"] != participant.status or shown["code"] != participant_code(participant):
            problems.append(f"participant {participant.platform_id}: saw {shown}, database says {participant.status}")
        if participant.status == "completed" and shown["code"] != study.completion_code:
            problems.append(f"participant {participant.platform_id}: completed with an invalid code {shown['code']}")
    coverage = study_coverage(study=study)
    return {
        "participants": sum(statuses.values()),
        "outcomes": dict(statuses),
        "regular_pairs": len(regular),
        "judged": coverage.judged,
        "needed": coverage.judgements_needed,
        "problems": problems[:20],
        "problem_count": len(problems),
    }


# --- The simulated participants (this process) ------------------------------------------------------------


def _wav_seconds(wav_bytes: bytes) -> float:
    with wave.open(io.BytesIO(wav_bytes)) as reader:
        return reader.getnframes() / reader.getframerate()


def _quietest(wav_bytes: bytes) -> int:
    """The antiphase screen answered by ear: the tone with the lowest level in one ear."""
    from ratings.screening.antiphase import GAP_SECONDS, TONE_SECONDS

    with wave.open(io.BytesIO(wav_bytes)) as reader:
        rate = reader.getframerate()
        samples = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").reshape(-1, 2)[:, 0]
    tone, gap = int(rate * TONE_SECONDS), int(rate * GAP_SECONDS)
    levels = [
        float(np.sqrt(np.mean(samples[gap + i * (tone + gap) : gap + i * (tone + gap) + tone].astype(float) ** 2)))
        for i in range(3)
    ]
    return int(np.argmin(levels))


class Participant:
    def __init__(self, *, base_url: str, slug: str, index: int, oracle: dict, args, recorder: Recorder):
        # requests.Session's requests at a fraction of its CPU, which the server's cores would otherwise share.
        self.http = thin_http.Session()
        self.base_url, self.slug, self.index, self.oracle, self.args = base_url, slug, index, oracle, args
        self.recorder = recorder
        self.pid = f"{index + 1:024x}"
        self.rng = random.Random(index)
        self.seen = {"status": None, "code": ""}

    def request(self, endpoint: str, method: str, path: str, *, expect: int, **options):
        return self.recorder.timed(
            endpoint, self.http, method, self.base_url + path, expect=expect, allow_redirects=False, **options
        )

    def _csrf(self, text: str) -> str:
        return CSRF_RE.search(text).group(1)

    def _post_form(self, endpoint: str, path: str, page_text: str, data: dict):
        time.sleep(self.args.page_seconds)  # the person reads the page and fills it in before sending it
        return self.request(
            endpoint,
            "POST",
            path,
            expect=302,
            data={"csrfmiddlewaretoken": self._csrf(page_text), **data},
            headers={"Referer": self.base_url + path},
        )

    def run(self) -> None:
        study = f"/study/{self.slug}/"
        arrival = self.request(
            "GET arrival link",
            "GET",
            f"{study}?PROLIFIC_PID={self.pid}&STUDY_ID={'a' * 24}&SESSION_ID={'b' * 24}",
            expect=302,
        )
        response, steps = arrival, 0
        while response is not None and steps < 200:
            steps += 1
            location = response.headers["Location"]
            path = location.removeprefix(self.base_url)
            response = self.step(path)

    def step(self, path: str):
        slug = f"/study/{self.slug}/"
        item = ITEM_RE.match(path)
        if item:
            return self.item(path)
        stage = path.removeprefix(slug).strip("/")
        if not stage:
            return self.landing(path)
        page = self.request(f"GET {stage}", "GET", path, expect=302 if stage == "items" else 200)
        if page is None or stage == "items":
            return page
        if stage == "consent":
            decision = "decline" if self.index % DECLINE_EVERY == DECLINE_EVERY - 1 else "agree"
            return self._post_form("POST consent", path, page.text, {"decision": decision})
        if stage == "questionnaire":
            answers = {"age_band": "25-34", "hearing": "No", "device": "Over-ear headphones", "native_language": "en"}
            return self._post_form("POST questionnaire", path, page.text, answers)
        if stage == "headphones":
            return self.headphones(path, page.text)
        if stage == "instructions":
            return self.practice(path, page.text)
        if stage == "end":
            code = CODE_RE.search(page.text)
            self.seen = {"status": STATUS_RE.search(page.text).group(1), "code": code.group(1) if code else ""}
            return None
        raise RuntimeError(f"unexpected page {path}")

    def landing(self, path: str):
        """The landing page, then the start; an arrival after every share is taken is sent on to the "study full"
        end page instead."""
        page = self.request("GET landing", "GET", path, expect=(200, 302))
        if page is None or page.status_code == 302:
            return page
        return self._post_form("POST start", path, page.text, {})

    def headphones(self, path: str, text: str):
        self.request("GET screen sound", "GET", CALIBRATION_RE.search(text).group(1), expect=200)
        answers = {"check_id": CHECK_RE.search(text).group(1)}
        for number, url in enumerate(TRIAL_RE.findall(text), start=1):
            # The page fetches a trial's sound when its Play button is pressed; a listener plays them one by one.
            sound = self.request("GET screen sound", "GET", url, expect=200)
            answers[f"trial_{number}"] = str(_quietest(sound.content) + 1) if sound is not None else "1"
            if sound is not None and self.args.page_seconds > 0:
                time.sleep(_wav_seconds(sound.content))
        return self._post_form("POST screen", path, text, answers)

    def practice(self, path: str, text: str):
        # The practice answer is refused until the sound's listening time (MUST_LISTEN_SECONDS, the sound being
        # longer) has passed since the server sent it.
        if self.request("GET practice sound", "GET", f"/study/{self.slug}/practice.wav", expect=200) is None:
            return None
        time.sleep(self.args.listen_seconds + 0.05)
        feedback = self.request(
            "POST practice",
            "POST",
            path,
            expect=200,
            data={"csrfmiddlewaretoken": self._csrf(text), "side": "left"},
            headers={"Referer": self.base_url + path},
        )
        if feedback is None:
            return None
        return self._post_form("POST start share", f"/study/{self.slug}/start/", feedback.text, {})

    def item(self, path: str):
        page = self.request("GET item", "GET", path, expect=200)
        if page is None:
            return None
        audio = self.request("GET item audio", "GET", f"{path}audio/", expect=200)
        if audio is None:
            return None
        served = time.monotonic()  # listening runs from when the server sent the audio
        word = self.oracle.get(hashlib.sha256(audio.content).hexdigest())
        if word is None:
            with self.recorder.lock:
                self.recorder.errors["GET item audio"].append("the audio served is no clip's rater copy")
        texts = CAPTION_RE.findall(page.text)
        time.sleep(max(0.0, served + self.args.listen_seconds + 0.05 - time.monotonic()))
        headers = {"X-CSRFToken": self.http.cookies.get("csrftoken"), "Referer": self.base_url + path}
        if self.request("POST listened", "POST", f"{path}listened/", expect=200, json={}, headers=headers) is None:
            return None
        time.sleep(self.args.think_seconds)
        # A listener who heard the clip picks the caption of that clip when only one is; otherwise either.
        fits = [word is not None and CLIP_WORD_RE.search(text) and word in text for text in texts[:2]]
        side = (
            "left"
            if fits == [True, False]
            else "right"
            if fits == [False, True]
            else self.rng.choice(["left", "right", "none"])
        )
        data = {
            "csrfmiddlewaretoken": self._csrf(page.text),
            "version": VERSION_RE.search(page.text).group(1),
            "side": side,
        }
        return self.request(
            "POST answer", "POST", path, expect=302, data=data, headers={"Referer": self.base_url + path}
        )


# --- Orchestration --------------------------------------------------------------------------------------


class Run(LoadRun):
    """One database's run (the load_ratings bench's, seeded with a study instead)."""

    def start(self, participants: int) -> dict:
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SECURE_"))}
        # The embedded broker and the database's cache table unless --redis-url asks for Redis, as docker-compose
        # deploys it (the shared cache, the sessions read from it, the broker).
        self.env.pop("REDIS_URL", None)
        if getattr(self.args, "redis_url", ""):
            self.env["REDIS_URL"] = redis_emptied(self.args.redis_url)
        self.env.update(
            {
                **loopback_production_env(),
                "DATABASE_URL": self.database_url(),
                "MEDIA_ROOT": str(self.folder / "media"),
                "STATIC_ROOT": str(self.folder / "static"),
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "MUST_LISTEN_SECONDS": str(self.args.listen_seconds),
                "STUDY_ARRIVALS_PER_ADDRESS": str(10 * participants),
                # Every bench participant arrives within a minute and walks the path at once: none waits outside.
                "STUDY_UNSTARTED_LIMIT": str(10 * participants),
                "STUDY_END_REDIRECT_SECONDS": "5",
                **self.extra_env(participants),
            }
        )
        began = time.monotonic()
        self.app("manage.py", "migrate", "--noinput")
        self.app("manage.py", "collectstatic", "--noinput")
        seeded = json.loads(
            self.app(
                __file__,
                "seed",
                "--participants",
                str(participants),
                "--share",
                str(self.args.share),
                "--checks",
                str(self.args.checks),
                "--judgements",
                str(self.args.judgements),
                "--clip-seconds",
                str(self.args.clip_seconds),
                "--screens",
                self.args.screens,
            )
            .strip()
            .splitlines()[-1]
        )
        print(
            f"[{self.kind}] migrated and seeded in {time.monotonic() - began:.1f} s: {seeded['regular_pairs']} pairs "
            f"x {self.args.judgements} judgements = {seeded['shares']} shares of {self.args.share}",
            flush=True,
        )
        port = free_port()
        self.web = self.web_start(port)
        base_url = f"http://127.0.0.1:{port}"
        import requests

        for _ in range(4 * self.args.web_workers):  # every worker loads templates and URLconf before the load
            requests.get(f"{base_url}/study/{seeded['slug']}/", timeout=120)
        settled = wait_until_idle(self.web.pid, timeout=self.args.settle_seconds)
        print(f"[{self.kind}] gunicorn ({self.args.web_workers} workers) on {port}; idle after start-up: {settled}")
        return {"base_url": base_url, **seeded}

    def extra_env(self, participants: int) -> dict:
        """Settings a variant of this bench adds to the app's environment."""
        return {}

    def web_start(self, port: int):
        return gunicorn_start(
            env=self.env, port=port, workers=self.args.web_workers, log_path=self.folder / "gunicorn.log"
        )


def redis_emptied(url: str) -> str:
    """`url`, its Redis database flushed: a run starts without an earlier run's cache entries, sessions or messages."""
    import redis

    redis.Redis.from_url(url).flushdb()
    return url


RUNS: list[Run] = []


def drive(target: dict, args, participants: int) -> tuple[Recorder, dict, dict]:
    recorder = Recorder()
    arrivals = random.Random(0)
    people = [
        Participant(
            base_url=target["base_url"],
            slug=target["slug"],
            index=index,
            oracle=target["oracle"],
            args=args,
            recorder=recorder,
        )
        for index in range(participants)
    ]
    offsets = sorted(arrivals.uniform(0, args.arrival_seconds) for _ in people)
    began = time.monotonic()

    def run(person: Participant, offset: float) -> None:
        time.sleep(max(0.0, began + offset - time.monotonic()))
        try:
            person.run()
        except Exception as error:  # noqa: BLE001 - a participant that broke down is an error of the run
            with recorder.lock:
                recorder.errors["participant"].append(f"{type(error).__name__}: {error}"[:200])

    threads = [
        threading.Thread(target=run, args=(person, offset), daemon=True)
        for person, offset in zip(people, offsets, strict=True)
    ]
    cpu_began = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1.0, args.deadline - (time.monotonic() - began)))
    wall = time.monotonic() - began
    seen = {person.pid: person.seen for person in people}
    return recorder, {"wall_seconds": wall, "client_cpu_seconds": time.process_time() - cpu_began}, seen


def report(
    kind: str, participants: int, recorder: Recorder, timing: dict, server_cpu: float, checked: dict, loads
) -> dict:
    requests_total = sum(len(values) for values in recorder.latencies.values())
    errors_total = sum(len(values) for values in recorder.errors.values())
    lines = [
        f"\n== {kind}: {participants} participants arriving within {ARGS.arrival_seconds:.0f} s; "
        f"{requests_total} requests in {timing['wall_seconds']:.1f} s = "
        f"{requests_total / timing['wall_seconds']:.0f} req/s; errors {errors_total}; "
        f"load average {loads[0]:.1f} before, {loads[1]:.1f} after; load generator CPU "
        f"{timing['client_cpu_seconds'] / timing['wall_seconds'] * 100:.0f}% of one core, gunicorn CPU "
        f"{server_cpu / timing['wall_seconds'] * 100:.0f}% of one core, worker restarts {timing['worker_restarts']}"
    ]
    table, figures = latency_table(recorder)
    lines.extend(table)
    lines.append(
        f"database check: {checked['participants']} participants {checked['outcomes']}; {checked['judged']} of "
        f"{checked['needed']} judgements on {checked['regular_pairs']} pairs; problems: {checked['problem_count']}"
    )
    lines.extend(f"  problem: {problem}" for problem in checked["problems"])
    slowest = max((row["p95_ms"] for row in figures.values()), default=float("nan"))
    verdict = "MET" if slowest <= 100 and errors_total == 0 and checked["problem_count"] == 0 else "MISSED"
    lines.append(f"targets (p95 <= 100 ms every endpoint, 0 errors, exact coverage, valid codes): {verdict}")
    print("\n".join(lines), flush=True)
    return {
        "database": kind,
        "participants": participants,
        "requests": requests_total,
        "errors": errors_total,
        "endpoints": figures,
        "check": checked,
        "load_average": loads,
        **timing,
    }


def worker_restarts(gunicorn_log: Path) -> int:
    """Workers gunicorn recycled so far (max_requests): each restart costs a burst of CPU."""
    return gunicorn_log.read_text(errors="replace").count("Autorestarting worker")


def bench_one(kind: str, participants: int, args) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"crowd-bench-{kind}-"))
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
    run = Run(kind=kind, args=args, folder=folder)
    RUNS.append(run)
    try:
        target = run.start(participants)
        load_before = os.getloadavg()[0]
        cpu_before = process_tree_cpu(run.web.pid)
        restarts_before = worker_restarts(folder / "gunicorn.log")
        recorder, timing, seen = drive(target, args, participants)
        server_cpu = process_tree_cpu(run.web.pid) - cpu_before
        load_after = os.getloadavg()[0]
        run.stop_web()  # every request is answered before the check reads the database
        timing["worker_restarts"] = worker_restarts(folder / "gunicorn.log") - restarts_before
        results = folder / "seen.json"
        results.write_text(json.dumps(seen))
        checked = json.loads(
            run.app(__file__, "verify", "--slug", target["slug"], "--seen", str(results)).strip().splitlines()[-1]
        )
        return report(kind, participants, recorder, timing, server_cpu, checked, (load_before, load_after))
    finally:
        run.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    seed_parser = sub.add_parser("seed")
    verify_parser = sub.add_parser("verify")
    for command_parser in (parser, seed_parser):
        command_parser.add_argument("--share", type=int, default=20)
        command_parser.add_argument("--checks", type=int, default=2)
        command_parser.add_argument("--judgements", type=int, default=4)
        command_parser.add_argument("--clip-seconds", type=float, default=2.0)
        command_parser.add_argument("--screens", choices=["antiphase", "none"], default="antiphase")
    seed_parser.add_argument("--participants", type=int, required=True)
    verify_parser.add_argument("--slug", required=True)
    verify_parser.add_argument("--seen", type=Path, required=True)
    parser.add_argument("--participants", type=int, default=200, help="on PostgreSQL")
    parser.add_argument("--sqlite-participants", type=int, default=50)
    parser.add_argument("--arrival-seconds", type=float, default=60)
    parser.add_argument(
        "--listen-seconds", type=int, default=2, help="MUST_LISTEN_SECONDS: listening per item (the clips are 2 s)"
    )
    parser.add_argument(
        "--think-seconds", type=float, default=8.0, help="after listening, before answering (reading two captions)"
    )
    parser.add_argument(
        "--page-seconds",
        type=float,
        default=3.0,
        help="reading each page of the path before sending it (0: no pause, and headphone trials back to back)",
    )
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--databases", default="postgresql,sqlite", help="comma-separated: postgresql, sqlite")
    parser.add_argument("--database-url", default="", help="an existing empty PostgreSQL database instead of a cluster")
    parser.add_argument(
        "--redis-url",
        default="",
        help="serve with this Redis (cache, sessions, broker) as docker-compose does; its database is flushed first "
        "(use one the tests leave alone, e.g. redis://127.0.0.1:6390/5); default: none (embedded broker, cache table)",
    )
    parser.add_argument("--settle-seconds", type=float, default=90)
    parser.add_argument("--deadline", type=float, default=1500, help="hard limit of the whole script (s)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.command == "seed":
        print(
            json.dumps(
                seed(
                    participants=args.participants,
                    share=args.share,
                    checks=args.checks,
                    judgements=args.judgements,
                    clip_seconds=args.clip_seconds,
                    screens=args.screens,
                )
            )
        )
        return
    if args.command == "verify":
        print(json.dumps(verify(slug=args.slug, seen=json.loads(args.seen.read_text()))))
        return
    global ARGS
    ARGS = args
    threading.Thread(target=watchdog, args=(args.deadline,), daemon=True).start()
    print(
        f"crowd study bench: shares of {args.share} + {args.checks} checks, {args.judgements} judgements per item, "
        f"listening {args.listen_seconds} s + {args.think_seconds} s per item, {args.page_seconds} s per page of the "
        f"path, gunicorn {args.web_workers} workers, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    figures = []
    for kind in [kind.strip() for kind in args.databases.split(",") if kind.strip()]:
        participants = args.participants if kind == "postgresql" else args.sqlite_participants
        figures.append(bench_one(kind, participants, args))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))


def watchdog(deadline: float) -> None:
    time.sleep(deadline)
    print(f"\nwatchdog: hard deadline of {deadline:.0f} s reached; stopping everything", file=sys.stderr, flush=True)
    for run in RUNS:
        try:
            run.stop()
        except Exception as error:  # noqa: BLE001 - keep stopping the others
            print(f"watchdog: {error}", file=sys.stderr)
    os._exit(3)


ARGS = None

if __name__ == "__main__":
    main()
