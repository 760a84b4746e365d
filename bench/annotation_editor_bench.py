"""Annotation editor figures, measured in headless Chromium against a real server on a throwaway database.

The clip is a real 20 s stereo recording (../shared/datasets/audio/34.wav); the product already holds the
AudioCaps-F gold annotations of another dataset (its words feed the type-ahead, as in a deployment).

- keystrokes plus clicks to annotate the clip with three events, each with a time span, a source and an
  attribute, and two temporal relations, by keyboard: each span is one drag on the waveform (a click), each
  word is typed until the highlighted suggestion is the wanted one (then Tab), and the relations are the
  ones the spans propose, taken with p; the seconds are the page's own latency (no human pauses);
- editor ready: from navigation start to the editor being usable (data-ready), median of cold loads, and
  until the spectrogram is drawn;
- page weight: bytes transferred for the editor page (HTML, CSS, JS, data), and with the clip's audio,
  waveform and spectrogram; the spectrogram image alone;
- autosave round trip: PUT of the draft until the page shows it saved, median / 95th percentile over N saves,
  and as a ratio to a plain GET of the same task from the API in the same page (the reference).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/annotation_editor_bench.py [--port 8391] [--saves 30] [--loads 5]

Needs Chromium at /usr/bin/chromium, ffmpeg, and ../shared beside the project.
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
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import annotation_audit_scenario as audit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
ANNOTATIONS = SHARED / "datasets/audiocaps_f_annotations.json"
SEED = """
import shutil
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from corpus.models import Clip, Dataset
from corpus.services.audio import clip_attach_audio
from annotation.services.audiocaps_f import audiocaps_f_import_from_path
from annotation.services.annotation_campaigns import annotation_campaign_create
audiocaps_f_import_from_path(path="{shared}/datasets/audiocaps_f_annotations.json", dataset_name="audiocaps-f")
user = get_user_model().objects.create_user("bench-annotator", password="bench-password-123")
user.groups.add(Group.objects.get(name="annotator"))
dataset = Dataset.objects.create(name="bench")
clip = Clip.objects.create(dataset=dataset, external_id="34.wav")
shutil.copy("{shared}/datasets/audio/34.wav", "{media}/34.wav")
clip_attach_audio(clip=clip, file="{media}/34.wav", file_name="34.wav")
annotation_campaign_create(name="bench", dataset=dataset, clips=[clip], annotators=[user], annotations_per_clip=1)
"""

# Suggestions an annotator reads without scrolling the list.
VISIBLE_SUGGESTIONS = 8
# (span in seconds, label, source, attribute): spans in this order propose "1 before 2" and "2 before 3".
EVENTS = [
    ((0.3, 6.0), "chirping", "birds", "high-pitched"),
    ((7.0, 8.0), "honking", "horn", "loud"),
    ((9.0, 14.0), "talking", "man", "muffled"),
]


class Counter:
    """Counts what the annotator does: a key (a chord such as Shift+Enter is one) or a click (a drag is one)."""

    def __init__(self, page):
        self.page = page
        self.keys = 0
        self.clicks = 0
        self.typed = []  # (word, letters typed before Tab took it, or None when typed whole and kept with Enter)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.keys += 1

    def type_until_suggested(self, word: str) -> None:
        """Type until the highlighted suggestion is `word`, then take it with Tab (which moves on: name ->
        sources -> attributes); a word no suggestion offers is typed whole and kept with Enter. Suggestions
        match the start of any word, so a phrase is typed from its longest word, the telling one ("distance"
        for "in the distance"); if that word runs out with the phrase shown lower in the list, the arrow keys
        reach it, else the phrase is completed around the word (Home, the words before, End, the words
        after). The keys follow what the page shows, as a user's would."""
        telling = max(word.split(), key=len)
        if self._type_letters(telling, word):
            return
        if telling != word:
            shown = self._shown()
            texts = [text for text, _active in shown]
            if word in texts[:VISIBLE_SUGGESTIONS]:
                for _ in range(texts.index(word) + 1):
                    self.press("ArrowDown")  # the first one takes the highlighted item, each next one moves
                self.press("Tab")
                self.typed.append((word, f"{telling}+{texts.index(word) + 1} arrows"))
                return
            # Not offered: the phrase is completed around the word typed (Home, the words before it, End,
            # the words after), checking the list at each letter as before.
            before, _telling, after = word.partition(telling)
            self.press("Home")
            if self._type_letters(before, word):
                return
            if after:
                self.press("End")
                if self._type_letters(after, word):
                    return
        self.press("Enter")  # exactly what was typed
        self.typed.append((word, None))  # typed whole

    def _type_letters(self, letters: str, word: str) -> bool:
        """Type `letters` one by one until `word` is the highlighted suggestion, then Tab; True when taken."""
        for count, letter in enumerate(letters, start=1):
            self.page.keyboard.type(letter)
            self.keys += 1
            if any(active and text == word for text, active in self._shown()):
                self.press("Tab")  # take the highlighted suggestion (Enter alone keeps what was typed)
                self.typed.append((word, letters[:count]))
                return True
        return False

    def _shown(self) -> list[tuple[str, bool]]:
        """The suggestion list as the page shows it: (text, highlighted)."""
        return self.page.evaluate(
            "() => Array.from(document.querySelectorAll('.suggest-box:not([hidden]) .suggest-option'))"
            ".map((option) => [option.querySelector('.suggest-text').textContent,"
            " option.classList.contains('is-active')])"
        )

    def to_attributes(self) -> None:
        """After a source: Tab already went on to the attributes; after Enter the focus is still in the sources,
        and an empty Enter goes on."""
        in_attributes = self.page.evaluate(
            "() => document.activeElement && document.activeElement.dataset.kind === 'attributes'"
        )
        if not in_attributes:
            self.press("Enter")

    def drag(self, start: float, end: float, duration: float) -> None:
        waveform = self.page.locator(".timeline-waveform")
        waveform.scroll_into_view_if_needed()  # a long event list scrolls the player away; scrolling is not counted
        box = waveform.bounding_box()
        gutter = self.page.evaluate("() => RegionPlayer.GUTTER")
        width = box["width"] - gutter
        y = box["y"] + box["height"] / 2
        self.page.mouse.move(box["x"] + gutter + width * start / duration, y)
        self.page.mouse.down()
        self.page.mouse.move(box["x"] + gutter + width * end / duration, y, steps=4)
        self.page.mouse.up()
        self.clicks += 1


def annotate(counter: Counter) -> None:
    page = counter.page
    duration = page.evaluate("() => window.annotationPage.player.duration")
    counter.press("n")
    for (start, end), label, source, attribute in EVENTS:
        counter.drag(start, end, duration)  # the focus stays in the new event's field
        counter.type_until_suggested(label)  # the event takes the selection as its span
        counter.type_until_suggested(source)
        counter.to_attributes()
        counter.type_until_suggested(attribute)
        counter.press("Enter")  # empty: on to the next event
    counter.press("Escape")
    counter.press("p")  # the first relation the spans propose
    counter.press("p")  # the second


def wait_saved(page) -> None:
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'", timeout=20_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8391)
    parser.add_argument("--saves", type=int, default=30)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--audit-only", action="store_true", help="only the audit's scenario and the edit latency")
    parser.add_argument("--extra-spans-by-r", action="store_true", help="extra spans as before: Esc, drag, r")
    options = parser.parse_args()
    audit.EXTRA_SPAN_BY_R = options.extra_spans_by_r
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
            [python, "manage.py", "shell", "-c", SEED.format(media=f"{folder}/media", shared=SHARED)],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [python, "manage.py", "shell", "-c", audit.seed_code(SHARED, f"{folder}/media", ANNOTATIONS)],
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
                    urllib.request.urlopen(base + "/accounts/login/", timeout=1)
                    break
                except OSError:
                    time.sleep(0.3)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                figures = {} if options.audit_only else run(browser, base, options.saves, options.loads)
                figures.update(audit.run_audit(browser, base, Counter, ANNOTATIONS))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(json.dumps(figures, indent=2))
    return 0


def _weigh(request, sizes: dict) -> None:
    """Add the request's response (body and headers) to its kind: the spectrogram, other media, the page."""
    url = request.url
    if "spectrogram.png" in url:
        kind = "spectrogram"
    elif "/audio/" in url or "waveform" in url:
        kind = "media"
    else:
        kind = "page"
    transferred = request.sizes()
    sizes[kind] = sizes.get(kind, 0) + transferred["responseBodySize"] + transferred["responseHeadersSize"]


def run(browser, base: str, saves: int, loads: int) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(base + "/accounts/login/")
    page.fill("input[name=username]", "bench-annotator")
    page.fill("input[name=password]", "bench-password-123")
    page.click("button[type=submit], input[type=submit]")
    page.goto(base + "/annotate/")
    page.click("form[action*='/next/'] button")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    task_url = page.url
    page.wait_for_function("() => window.annotationPage.player.spectrogram.isLoaded")  # computed once, then stored

    # Editor ready and page weight, from cold caches (a new browser context each load).
    ready, drawn, sizes = [], [], {}
    for load in range(loads):
        cold = browser.new_context(viewport={"width": 1280, "height": 900}, storage_state=context.storage_state())
        weighed = cold.new_page()
        if load == 0:
            weighed.on("requestfinished", lambda request: _weigh(request, sizes))
        weighed.goto(task_url, wait_until="domcontentloaded")
        weighed.wait_for_selector("#annotation-page[data-ready=true]")
        ready.append(float(weighed.locator("#annotation-page").get_attribute("data-ready-ms")))
        weighed.wait_for_function("() => window.annotationPage.player.spectrogram.isLoaded")
        drawn.append(weighed.evaluate("() => performance.now()"))
        weighed.wait_for_load_state("networkidle")
        cold.close()

    # Keystrokes and clicks for a 3-event clip with spans, sources, attributes and two relations.
    counter = Counter(page)
    started = time.perf_counter()
    annotate(counter)
    wait_saved(page)
    seconds = time.perf_counter() - started
    draft = page.evaluate("() => window.annotationPage.editor.draft")
    made = [(e["label"], e["sources"], e["attributes"], len(e["spans"])) for e in draft["events"]]
    wanted = [(label, [source], [attribute], 1) for _span, label, source, attribute in EVENTS]
    assert made == wanted, made
    assert len(draft["relations"]) == 2, draft["relations"]

    # Autosave round trips (edit a label, wait for "saved"), and the reference GET.
    round_trips, reads = [], []
    label = page.locator(".event-card").nth(0).locator(".event-label")
    for index in range(saves):
        label.fill(f"chirping {index}")
        page.wait_for_function(
            f"() => document.querySelector('.event-label').value === 'chirping {index}'"
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
        "keystrokes_plus_clicks_3_events_spans_2_relations": counter.keys + counter.clicks,
        "keystrokes": counter.keys,
        "clicks_drags_on_the_waveform": counter.clicks,
        "scripted_seconds_until_saved": round(seconds, 2),
        "editor_ready_ms_median": round(statistics.median(ready)),
        "editor_ready_ms_max": round(max(ready)),
        "spectrogram_drawn_ms_median": round(statistics.median(drawn)),
        "cold_loads": loads,
        "page_weight_bytes_without_audio": sizes.get("page", 0),
        "spectrogram_bytes_20_s_stereo_clip": sizes.get("spectrogram", 0),
        "page_weight_bytes_with_audio_waveform_and_spectrogram": sum(sizes.values()),
        "autosave_round_trip_ms_median": round(median_save, 1),
        "autosave_round_trip_ms_p95": round(sorted(round_trips)[int(0.95 * (len(round_trips) - 1))], 1),
        "reference_get_ms_median": round(median_read, 1),
        "autosave_to_get_ratio": round(median_save / median_read, 2),
        "saves": len(round_trips),
    }


if __name__ == "__main__":
    sys.exit(main())
