"""Annotation editor figures, measured in headless Chromium against a real server on a throwaway database.

- keystrokes and seconds to annotate a clip with three events (sources, attributes) and one relation, typed by
  a script as a person would with the keyboard only (the seconds are the page's own latency: no human pauses);
- page weight: bytes transferred for the editor page (HTML, CSS, JS, data), and with the clip's audio and
  spectrogram;
- autosave round trip: PUT of the draft until the page shows it saved, median / 95th percentile over N saves,
  and as a ratio to a plain GET of the same task from the API in the same page (the reference).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/annotation_editor_bench.py [--port 8391] [--saves 30]

Needs Chromium at /usr/bin/chromium and ffmpeg (the clip's audio is synthesised with pydub).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from pydub.generators import Sine, WhiteNoise
from annotation.models import Clip, Dataset
from annotation.services.audio import clip_attach_audio
from annotation.services.annotation_campaigns import annotation_campaign_create
user = get_user_model().objects.create_user("bench-annotator", password="bench-password-123")
user.groups.add(Group.objects.get(name="annotator"))
dataset = Dataset.objects.create(name="bench")
clip = Clip.objects.create(dataset=dataset, external_id="bench-clip")
sound = Sine(440).to_audio_segment(duration=4000).overlay(WhiteNoise().to_audio_segment(duration=4000) - 30)
path = "{media}/bench.wav"
sound.export(path, format="wav")
clip_attach_audio(clip=clip, file=path, file_name="bench.wav")
annotation_campaign_create(name="bench", dataset=dataset, clips=[clip], annotators=[user], annotations_per_clip=1)
"""

# The session: (label, sources, library attributes, free attributes); then event 1 before event 2.
EVENTS = [
    ("barking", ["dog"], ["loud", "repeatedly"], []),
    ("door slam", ["door"], ["suddenly"], []),
    ("talking", ["man"], ["muffled"], ["hoarse"]),
]


class CountingKeyboard:
    def __init__(self, keyboard):
        self.keyboard = keyboard
        self.count = 0

    def press(self, key: str) -> None:
        self.keyboard.press(key)
        self.count += 1  # a chord (Shift+Enter) is one keystroke of the annotator's

    def type(self, text: str) -> None:
        self.keyboard.type(text)
        self.count += len(text)


def annotate(keyboard: CountingKeyboard) -> None:
    keyboard.press("n")
    for label, sources, attributes, free in EVENTS:
        keyboard.type(label)
        keyboard.press("Enter")
        for source in sources:
            keyboard.type(source)
            keyboard.press("Enter")
        keyboard.press("Enter")
        for attribute in attributes:
            keyboard.type(attribute[:4])  # the type-ahead completes from the tag library
            keyboard.press("Enter")
        for attribute in free:
            keyboard.type(attribute)
            keyboard.press("Shift+Enter")
        keyboard.press("Enter")
    keyboard.press("Escape")
    keyboard.press("k")
    keyboard.press("k")
    keyboard.press("x")
    keyboard.press("j")
    keyboard.press("b")


def wait_saved(page) -> None:
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'", timeout=20_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8391)
    parser.add_argument("--saves", type=int, default=30)
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="annotation-bench-") as folder:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{folder}/db.sqlite3",
            "MEDIA_ROOT": f"{folder}/media",
            "HF_HUB_OFFLINE": "1",
            "DEBUG": "true",
        }
        env.pop("REDIS_URL", None)
        python = sys.executable
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        os.makedirs(f"{folder}/media", exist_ok=True)
        subprocess.run(
            [python, "manage.py", "shell", "-c", SEED.format(media=f"{folder}/media")],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        server = subprocess.Popen(
            [python, "manage.py", "runserver", f"127.0.0.1:{options.port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{options.port}"
        try:
            for _ in range(100):
                try:
                    import urllib.request

                    urllib.request.urlopen(base + "/accounts/login/", timeout=1)
                    break
                except OSError:
                    time.sleep(0.3)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                figures = run(browser, base, options.saves)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(json.dumps(figures, indent=2))
    return 0


def run(browser, base: str, saves: int) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(base + "/accounts/login/")
    page.fill("input[name=username]", "bench-annotator")
    page.fill("input[name=password]", "bench-password-123")
    page.click("button[type=submit], input[type=submit]")
    page.goto(base + "/annotate/")
    page.click("form[action*='/next/'] button")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    task_url = page.url

    # Page weight, from a cold cache.
    cold = browser.new_context(viewport={"width": 1280, "height": 800}, storage_state=context.storage_state())
    weighed = cold.new_page()
    sizes: dict[str, int] = {}

    def count(request):
        request_sizes = request.sizes()
        kind = "media" if "/audio/" in request.url or "spectrogram" in request.url else "page"
        sizes[kind] = sizes.get(kind, 0) + request_sizes["responseBodySize"] + request_sizes["responseHeadersSize"]

    weighed.on("requestfinished", count)
    weighed.goto(task_url, wait_until="networkidle")
    weighed.wait_for_selector("#annotation-page[data-ready=true]")
    cold.close()

    # Keystrokes and seconds for a 3-event clip with one relation.
    keyboard = CountingKeyboard(page.keyboard)
    started = time.perf_counter()
    annotate(keyboard)
    wait_saved(page)
    seconds = time.perf_counter() - started
    draft = page.evaluate("() => window.annotationPage.editor.draft")
    assert len(draft["events"]) == 3 and len(draft["relations"]) == 1, draft

    # Autosave round trips (edit a label, wait for "saved"), and the reference GET.
    round_trips, reads = [], []
    label = page.locator(".event-card").nth(0).locator(".event-label")
    for index in range(saves):
        label.fill(f"barking {index}")
        page.wait_for_function(
            f"() => document.querySelector('.event-label').value === 'barking {index}'"
            " && document.getElementById('save-status').dataset.state === 'saved'"
        )
        round_trips.append(float(page.locator("#save-status").get_attribute("data-round-trip-ms")))
        task_id = json.loads(page.locator("#task-data").text_content())["id"]
        reads.append(
            page.evaluate(
                "async (id) => { const t = performance.now();"
                " await fetch(`/api/annotation-tasks/${id}/`, {credentials: 'same-origin'}).then(r => r.json());"
                " return performance.now() - t; }",
                task_id,
            )
        )
    median_save, median_read = statistics.median(round_trips), statistics.median(reads)
    return {
        "keystrokes_3_events_1_relation": keyboard.count,
        "scripted_seconds_until_saved": round(seconds, 2),
        "page_weight_bytes_without_audio": sizes.get("page", 0),
        "page_weight_bytes_with_audio_and_spectrogram": sizes.get("page", 0) + sizes.get("media", 0),
        "autosave_round_trip_ms_median": round(median_save, 1),
        "autosave_round_trip_ms_p95": round(sorted(round_trips)[int(0.95 * (len(round_trips) - 1))], 1),
        "reference_get_ms_median": round(median_read, 1),
        "autosave_to_get_ratio": round(median_save / median_read, 2),
        "saves": len(round_trips),
    }


if __name__ == "__main__":
    sys.exit(main())
