"""The audit's scenario for the annotation editor bench: real clips, each annotated with 3 events, 3–6 spans,
6–9 attributes and 2 relations, counting keystrokes plus clicks; and the edit latency at 60 events.

Scenarios: the four real recordings of ../shared/datasets/audio (34.wav, 35.wav, 36.wav, Example.flac), twice
each (two annotators), every one taking its events, sources and attributes from one AudioCaps-F expert
annotation with exactly 3 events and 6–9 distinct attributes (those whose events all name a source, in file
order, from ../shared/datasets/audiocaps_f_annotations.json; typed in lower case), the spans 3, 4, 5, 6,
3, 4, 5, 6 (the extra ones on the first events), event k's spans in the k-th third of the clip so that the
spans propose "1 before 2" and "2 before 3" (taken with P when the page proposes just those two). Typing is as
in the main bench (Counter.type_until_suggested): letter by letter, a phrase from its longest word, until the
highlighted suggestion is the word, then Tab (which takes it and moves on), or the whole word and Enter when
no suggestion offers it. Scrolling the player
back into view (the event list grows under it) is not counted. The median over the eight runs is the figure.

Edit latency: a task holding 60 events (4 attributes, 1 span each); an attribute typed with Enter on the 30th
event, timed in the page from the Enter keydown to the next frame after the editor re-rendered
(performance.now, requestAnimationFrame then a task), median and max of 20 edits.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

CLIP_FILES = ["34.wav", "35.wav", "36.wav", "Example.flac"]
RUNS_PER_CLIP = 2
SPAN_COUNTS = [3, 4, 5, 6, 3, 4, 5, 6]
LATENCY_EVENTS = 60
LATENCY_EDITS = 20

SEED = """
import shutil
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from corpus.models import Clip, Dataset
from annotation.models import AnnotationTask
from corpus.services.audio import clip_attach_audio
from annotation.services.annotation_campaigns import annotation_campaign_create
from annotation.services.annotation_drafts import empty_draft
annotators = []
for index in range({runs}):
    user = get_user_model().objects.create_user(f"audit-annotator-{{index}}", password="bench-password-123")
    user.groups.add(Group.objects.get(name="annotator"))
    annotators.append(user)
dataset = Dataset.objects.create(name="audit")
clips = []
for name in {clip_files!r}:
    clip = Clip.objects.create(dataset=dataset, external_id=name)
    shutil.copy("{shared}/datasets/audio/" + name, "{media}/" + name)
    clip_attach_audio(clip=clip, file="{media}/" + name, file_name=name)
    clips.append(clip)
campaign = annotation_campaign_create(
    name="audit", dataset=dataset, clips=clips, annotators=annotators, annotations_per_clip={runs}
)
for user in annotators:
    for clip in clips:
        AnnotationTask.objects.create(campaign=campaign, clip=clip, annotator=user, draft=empty_draft())
heavy = get_user_model().objects.create_user("audit-latency", password="bench-password-123")
heavy.groups.add(Group.objects.get(name="annotator"))
latency = annotation_campaign_create(
    name="latency", dataset=dataset, clips=clips[:1], annotators=[heavy], annotations_per_clip=1
)
draft = {{"events": [
    {{"id": f"e{{i + 1}}", "label": f"event {{i + 1}}", "sources": ["dog"],
      "attributes": ["loud", "short", "indoors", "muffled"], "spans": [[i * 0.3, i * 0.3 + 0.2]]}}
    for i in range({events})], "relations": [], "note": ""}}
AnnotationTask.objects.create(campaign=latency, clip=clips[0], annotator=heavy, draft=draft, draft_version=1)
# The annotations the scenarios copy are not in the type-ahead's words: the annotator types them unseen.
from annotation.models import ExpertAnnotation
unseen = ExpertAnnotation.objects.filter(clip__dataset__name="audiocaps-f", clip__file_name__in={unseen!r})
assert unseen.count() == {unseen_count}, unseen.count()
unseen.delete()
"""


def seed_code(shared: Path, media: str, annotations_path: Path) -> str:
    return SEED.format(
        runs=RUNS_PER_CLIP,
        clip_files=CLIP_FILES,
        shared=shared,
        media=media,
        events=LATENCY_EVENTS,
        unseen=sorted({key for key, _events in chosen_annotations(annotations_path)}),
        unseen_count=len({key for key, _events in chosen_annotations(annotations_path)}),
    )


def chosen_annotations(annotations_path: Path) -> list[tuple[str, dict]]:
    """The AudioCaps-F annotations the eight scenarios copy, in file order: (clip key, {label: (sources,
    attributes)})."""
    annotations = json.loads(annotations_path.read_text())
    chosen = []
    for key, events in annotations.items():
        # as an annotator types them: lower case, trimmed, each attribute once per event
        cleaned = {
            label.lower().strip(): (
                [source.lower().strip() for source in node.get("source", [])],
                list(dict.fromkeys(a.lower().strip() for a in node.get("attr", []))),
            )
            for label, node in events.items()
        }
        if (
            len(cleaned) == 3
            and 6 <= sum(len(attributes) for _sources, attributes in cleaned.values()) <= 9
            and all(sources for sources, _attributes in cleaned.values())
        ):
            chosen.append((key, cleaned))
    return chosen[: len(SPAN_COUNTS)]


def scenarios(annotations_path: Path) -> list[dict]:
    """Eight scenarios: (clip file, events [(label, source, [attributes], span count)])."""
    chosen = [events for _key, events in chosen_annotations(annotations_path)]
    result = []
    for run, spans in enumerate(SPAN_COUNTS):
        events = chosen[run % len(chosen)]
        counts = [1, 1, 1]
        for extra in range(spans - 3):
            counts[extra % 3] += 1
        result.append(
            {
                "clip": CLIP_FILES[run % len(CLIP_FILES)],
                "annotator": f"audit-annotator-{run // len(CLIP_FILES)}",
                "events": [
                    (label, sources[0], attributes, count)
                    for (label, (sources, attributes)), count in zip(events.items(), counts, strict=False)
                ],
            }
        )
    return result


def span_positions(duration: float, event_index: int, count: int) -> list[tuple[float, float]]:
    """`count` spans inside the event's third of the clip, apart from one another."""
    third = duration / 3
    start = event_index * third + third * 0.05
    width = third * 0.9 / count
    return [(start + width * k, start + width * k + width * 0.7) for k in range(count)]


def annotate_scenario(counter, scenario: dict) -> None:
    """Keyboard-first, as an annotator who knows the keys: the first span by a drag, the extra spans by a drag
    while still in the event's fields, relations as proposed (P when the page proposes just the wanted ones)."""
    page = counter.page
    duration = page.evaluate("() => window.annotationPage.player.duration")
    counter.press("n")
    last = len(scenario["events"]) - 1
    for index, (label, source, attributes, count) in enumerate(scenario["events"]):
        spans = span_positions(duration, index, count)
        counter.drag(*spans[0], duration)
        counter.type_until_suggested(label)
        counter.type_until_suggested(source)
        counter.to_attributes()
        for attribute in attributes:
            counter.type_until_suggested(attribute)
        for start, end in spans[1:]:
            add_extra_span(counter, start, end, duration)
        if EXTRA_SPAN_BY_R and count > 1:
            counter.keys += 1  # "n" from the card to the new event (focused above)
        elif index < last:
            counter.press("Enter")  # empty: on to the next event
    counter.press("Escape")  # done typing: to the card, where the page's keys work
    take_proposals(counter, wanted=2)


def take_proposals(counter, wanted: int) -> None:
    """The relations the spans propose: P takes them all when the panel lists just the wanted ones, else p
    takes one at a time."""
    listed = counter.page.locator("#relations-panel .relations-proposed li.is-proposed").count()
    if listed == wanted:
        counter.press("Shift+P")  # one chord, one action
        return
    for _ in range(wanted):
        counter.press("p")


def add_extra_span(counter, start: float, end: float, duration: float) -> None:
    if EXTRA_SPAN_BY_R:  # the editor before drags carried the focused event: Esc to the card, drag, r
        counter.press("Escape")
        counter.drag(start, end, duration)
        counter.press("r")
        counter.page.locator(".new-event-input").focus()  # stands for the Enter below (1 action, counted there)
        return
    counter.drag(start, end, duration)  # in the event's field: the drag adds the span to that event


# Set by the bench's --extra-spans-by-r: measure the way extra spans were added before (for the before figure).
EXTRA_SPAN_BY_R = False


def check_made(page, scenario: dict) -> None:
    draft = page.evaluate("() => window.annotationPage.editor.draft")
    made = [(e["label"], e["sources"], [a.lower() for a in e["attributes"]], len(e["spans"])) for e in draft["events"]]
    wanted = [(label, [source], attributes, count) for label, source, attributes, count in scenario["events"]]
    assert made == wanted, (made, wanted)
    assert len(draft["relations"]) == 2, draft["relations"]


LATENCY_PROBE = """
() => {
  window.__editTimes = [];
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    const started = performance.now();
    requestAnimationFrame(() => setTimeout(() => window.__editTimes.push(performance.now() - started), 0));
  }, true);
}
"""


def edit_latency(page) -> dict:
    """Median and max ms from an attribute's Enter to the frame after the re-render, at 60 events."""
    page.evaluate(LATENCY_PROBE)
    words = ["sharp", "distant", "brief", "faint", "echoing"]
    for edit in range(LATENCY_EDITS):
        field = page.locator(".event-card").nth(29).locator('.chip-input[data-kind="attributes"]')
        field.focus()
        page.keyboard.type(words[edit % len(words)] + f"{edit}")
        page.keyboard.press("Enter")
        page.wait_for_function(f"() => window.__editTimes.length >= {edit + 1}")
    times = page.evaluate("() => window.__editTimes")
    events = page.evaluate("() => window.annotationPage.editor.draft.events.length")
    assert events == LATENCY_EVENTS, events
    return {"edit_ms_median_at_60_events": round(statistics.median(times), 1), "edit_ms_max": round(max(times), 1)}


def sign_in(browser, base: str, username: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(base + "/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "bench-password-123")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return context, page


def open_task(page, base: str, clip: str) -> None:
    page.goto(base + "/annotate/")
    # The seed made each annotator's tasks in CLIP_FILES order.
    task_id = page.evaluate(
        "async (index) => { const r = await fetch('/api/annotation-tasks/', {credentials: 'same-origin'});"
        " const body = await r.json(); return (body.results || body).map((t) => t.id).sort((a, b) => a - b)[index]; }",
        CLIP_FILES.index(clip),
    )
    page.goto(f"{base}/annotate/tasks/{task_id}/")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    page.wait_for_function("() => window.annotationPage.player.duration > 0")


def run_audit(browser, base: str, counter_class, annotations_path: Path) -> dict:
    """The eight runs' action counts (median is the figure) and the edit latency at 60 events."""
    counts, per_run = [], []
    contexts = {}
    for scenario in scenarios(annotations_path):
        if scenario["annotator"] not in contexts:
            contexts[scenario["annotator"]] = sign_in(browser, base, scenario["annotator"])
        _context, page = contexts[scenario["annotator"]]
        open_task(page, base, scenario["clip"])
        counter = counter_class(page)
        annotate_scenario(counter, scenario)
        check_made(page, scenario)
        counts.append(counter.keys + counter.clicks)
        spans = sum(count for *_rest, count in scenario["events"])
        attributes = sum(len(attrs) for _l, _s, attrs, _c in scenario["events"])
        letters = ", ".join(f"{word}: {'whole' if typed is None else typed}" for word, typed in counter.typed)
        per_run.append(f"{scenario['clip']}: {spans} spans, {attributes} attributes: {counts[-1]} ({letters})")
    for context, _page in contexts.values():
        context.close()
    context, page = sign_in(browser, base, "audit-latency")
    page.goto(base + "/annotate/")
    task_id = page.evaluate(
        "async () => { const r = await fetch('/api/annotation-tasks/', {credentials: 'same-origin'});"
        " const body = await r.json(); return (body.results || body)[0].id; }"
    )
    page.goto(f"{base}/annotate/tasks/{task_id}/")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    latency = edit_latency(page)
    context.close()
    return {
        "audit_actions_median": statistics.median(counts),
        "audit_actions_max": max(counts),
        "audit_runs": per_run,
        **latency,
    }
