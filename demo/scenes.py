"""The simulated study behind `manage.py demo`: sound scenes, their captions and what is true about them. Plain Python.

The data it draws from (event kinds, wordings, systems, annotators' habits) is in demo/scene_data.py.

Every clip is a scene of one to three sound events (a beep, a hum, a siren, ...) with attributes (pitch, volume,
how often) and temporal relations (one after the other, or at the same time). From the scene, deterministically:
- its audio (demo/audio.py synthesizes each event);
- five reference captions written from templates with varied wording;
- the captions of seven simulated captioning systems of graded quality, each making one kind of controlled error
  most of the time: none, disfluency, a missing event, events in the wrong order, a hallucinated event, a wrong
  source, or a vague description;
- the truth a careful listener would judge each caption by (`Truth`: how precise and complete it is, and its
  fluency / conciseness / irrelevance penalties), which the simulated raters start from (demo/judgements.py);
- the gold AudioCaps-F graph, and the drafts of three simulated annotators who each deviate from it a little.
Nothing here is random at run time: every choice comes from a generator seeded by the scene and what is written.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from demo.scene_data import (
    ANNOTATOR_HABITS,
    COUNT_NUMBERS,
    COUNT_WORDS,
    GENERIC,
    HALLUCINATIONS,
    KINDS,
    OWN_WORDS,
    REFERENCES_PER_CLIP,
    SCENE_COUNT,
    SEED,
    SYSTEMS,
    VOLUMES,
)


@dataclass(frozen=True)
class SceneEvent:
    kind: str
    pitch: str
    volume: str
    count: int
    tempo: str
    onset: float  # seconds
    offset: float

    @property
    def attributes(self) -> list[str]:
        """The gold annotation's attributes: tag-library words (the count is said in captions, not tagged)."""
        words = [self.pitch, self.volume, "repeatedly" if self.count > 1 else "", _tempo_tag(self.tempo)]
        return [word for word in dict.fromkeys(words) if word]


def _tempo_tag(tempo: str) -> str:
    return {"continuously": "continuous", "intermittently": "intermittent", "rhythmically": "rhythmic"}.get(
        tempo, tempo
    )


@dataclass(frozen=True)
class Scene:
    external_id: str
    events: tuple[SceneEvent, ...]
    relations: tuple[tuple[int, int, str], ...]  # (first event, second event, "before" | "simultaneous")
    seconds: float


@dataclass(frozen=True)
class Truth:
    """How a careful listener would judge a caption of this clip: precision and recall in [0, 1] (THumBS 1-5 is
    1 + 4x), and the penalties in [-2, 0]."""

    precision: float
    recall: float
    fluency: float = 0.0
    conciseness: float = 0.0
    irrelevance: float = 0.0

    @property
    def overall(self) -> float:
        return (2 + 4 * self.precision + 4 * self.recall) / 2 + self.fluency + self.conciseness + self.irrelevance


#: a caption written for another clip (the HI pairs' foreign captions): wrong on every count
WRONG_CLIP = Truth(precision=0.05, recall=0.05, irrelevance=-0.5)


@dataclass(frozen=True)
class CaptionPlan:
    text: str
    truth: Truth
    error: str = ""  # the controlled error this caption makes ("" none)


# --- Scenes ---------------------------------------------------------------------------------------------------


def _event(rng: random.Random, key: str, onset: float, seconds: float) -> SceneEvent:
    kind = KINDS[key]
    return SceneEvent(
        kind=key,
        pitch=rng.choice(kind.pitches),
        volume=rng.choice(VOLUMES) if rng.random() < 0.7 else "",
        count=rng.choice(kind.counts),
        tempo=rng.choice(kind.tempos),
        onset=round(onset, 2),
        offset=round(onset + seconds, 2),
    )


@functools.cache
def demo_scenes() -> tuple[Scene, ...]:
    """SCENE_COUNT scenes: one, two (in sequence or together) or three events, every kind used."""
    rng = random.Random(f"demo-scenes:{SEED}")
    keys = list(KINDS)
    scenes = []
    for index in range(SCENE_COUNT):
        shape = ("single", "sequence", "together", "sequence", "three")[index % 5]
        first = keys[index % len(keys)]
        others = [key for key in keys if key != first]
        if shape == "single":
            events, relations = (_event(rng, first, 0.3, rng.uniform(2.4, 3.4)),), ()
        elif shape == "sequence":
            second = rng.choice(others)
            one = _event(rng, first, 0.2, rng.uniform(1.4, 2.0))
            two = _event(rng, second, one.offset + 0.3, rng.uniform(1.4, 2.0))
            events, relations = (one, two), ((0, 1, "before"),)
        elif shape == "together":
            background = rng.choice([key for key in ("hum", "hiss", "tick", "crackle") if key != first])
            one = _event(rng, first, 1.0, rng.uniform(1.5, 2.2))
            events = (one, _event(rng, background, 0.1, one.offset + 0.8))
            relations = ((0, 1, "simultaneous"),)
        else:
            second = rng.choice(others)
            background = rng.choice([key for key in ("hum", "hiss", "tick") if key not in (first, second)])
            one = _event(rng, first, 0.3, rng.uniform(1.2, 1.6))
            two = _event(rng, second, one.offset + 0.3, rng.uniform(1.2, 1.6))
            events = (one, two, _event(rng, background, 0.1, two.offset))
            # the background spans both; X-ACE's relation rules have no "throughout" (simultaneous with the first
            # and before the second would make the second after the background), so it is left unrelated
            relations = ((0, 1, "before"),)
        seconds = round(max(event.offset for event in events) + 0.3, 2)
        name = "-".join(event.kind for event in events)
        scenes.append(Scene(f"scene-{index + 1:02d}-{name}", events, relations, seconds))
    return tuple(scenes)


# --- Writing captions ---------------------------------------------------------------------------------------------


def _fill(template: str, event: SceneEvent, *, attributes: bool = True) -> str:
    values = {
        "pitch": event.pitch if attributes else "",
        "volume": event.volume if attributes else "",
        "count": COUNT_WORDS.get(event.count, "") if attributes else "",
        "count_word": COUNT_NUMBERS.get(event.count, "several") if attributes else "several",
        "tempo": event.tempo if attributes else "",
    }
    return _tidy(template.format(**values))


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\b([Aa]) (?=[aeiou])", lambda match: match.group(1) + "n ", text)
    text = re.sub(r"\b([Aa])n (?=[^aeiou\s])", lambda match: match.group(1) + " ", text)
    return text


def _sentence(text: str) -> str:
    text = _tidy(text).rstrip(" ,")
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _clause(rng: random.Random, event: SceneEvent, *, attributes: bool = True) -> str:
    return _fill(rng.choice(KINDS[event.kind].clauses), event, attributes=attributes)


def _noun_phrase(rng: random.Random, event: SceneEvent, *, attributes: bool = True) -> str:
    return _fill(rng.choice(KINDS[event.kind].noun_phrases), event, attributes=attributes)


def _describe(rng: random.Random, scene: Scene, *, attributes: bool = True, order=None, only=None) -> str:
    """One caption of the scene: every event (or `only` the given ones), in `order` (default the scene's)."""
    events = list(scene.events) if only is None else [scene.events[index] for index in only]
    if order is not None:
        events = [events[index] for index in order]
    first = _clause(rng, events[0], attributes=attributes)
    if len(events) == 1:
        return _sentence(first)
    together = any(kind == "simultaneous" for _, _, kind in scene.relations) and len(events) == 2 and only is None
    if len(events) == 2 and together:
        background = _noun_phrase(rng, events[1], attributes=attributes)
        template = rng.choice(("{a} while {b_clause}", "{a} over {b}", "{a} as {b_clause}", "Over {b}, {a}"))
        return _sentence(
            template.format(a=first, b=background, b_clause=_clause(rng, events[1], attributes=attributes))
        )
    second_clause = _clause(rng, events[1], attributes=attributes)
    second_phrase = _noun_phrase(rng, events[1], attributes=attributes)
    sequence = rng.choice(
        ("{a}, then {b_clause}", "{a}, followed by {b}", "{a} before {b_clause}", "First {a}, and then {b_clause}")
    )
    text = sequence.format(a=first, b=second_phrase, b_clause=second_clause)
    if len(events) == 3:
        text += rng.choice((", while {c} continues in the background", " over {c}", ", with {c} throughout")).format(
            c=_noun_phrase(rng, events[2], attributes=attributes)
        )
    return _sentence(text)


@functools.cache
def scene_references(external_id: str) -> tuple[str, ...]:
    """Five distinct reference captions of the scene (as five people would write them)."""
    scene = scene_by_id(external_id)
    rng = random.Random(f"references:{SEED}:{external_id}")
    texts: list[str] = []
    while len(texts) < REFERENCES_PER_CLIP:
        text = _describe(rng, scene, attributes=rng.random() < 0.85)
        if text not in texts:
            texts.append(text)
    return tuple(texts)


REFERENCE_TRUTH = Truth(precision=0.95, recall=0.88)


# --- Simulated captioning systems -----------------------------------------------------------------------------------


def _disfluent(rng: random.Random, text: str) -> str:
    words = text.rstrip(".").split()
    how = rng.choice(("repeat", "truncate", "drop", "stutter"))
    if how == "repeat" and len(words) > 3:
        at = rng.randrange(1, len(words) - 1)
        words.insert(at, words[at])
    elif how == "truncate" and len(words) > 5:
        words = words[: len(words) - rng.choice((2, 3))]
    elif how == "drop" and len(words) > 4:
        words = [word for word in words if word.lower() not in ("a", "an", "the", "then", "is", "are")]
    else:
        at = rng.randrange(0, len(words))
        words[at:at] = [words[at], words[at]]
    return " ".join(words) + ("." if how != "truncate" else "")


def _swapped_pitch(scene: Scene) -> Scene:
    swaps = {"high-pitched": "low", "low": "high-pitched", "deep": "high-pitched", "shrill": "deep", "sharp": "deep"}
    events = tuple(
        SceneEvent(e.kind, swaps.get(e.pitch, e.pitch), e.volume, e.count, e.tempo, e.onset, e.offset)
        for e in scene.events
    )
    return Scene(scene.external_id, events, scene.relations, scene.seconds)


def system_caption(external_id: str, system: str) -> CaptionPlan:
    """The caption `system` writes for the scene, the error it made and its truth. Never word for word one of the
    clip's references (a system does not copy the people who described the clip)."""
    references = scene_references(external_id)
    for attempt in range(20):
        plan = _system_caption(external_id, system, attempt)
        if plan.text not in references:
            return plan
    return plan


def _system_caption(external_id: str, system: str, attempt: int) -> CaptionPlan:
    scene = scene_by_id(external_id)
    rng = random.Random(f"system:{SEED}:{system}:{external_id}:{attempt}")
    _description, error, rate = SYSTEMS[system]
    events = len(scene.events)
    if not error or rng.random() >= rate:
        if rng.random() < (0.1 if not error else 0.5):  # an accurate caption that leaves details out
            return CaptionPlan(_describe(rng, scene, attributes=False), Truth(0.92, 0.72))
        return CaptionPlan(_describe(rng, scene), Truth(0.93, 0.9))
    if error == "disfluency":
        severe = rng.random() < 0.4
        return CaptionPlan(
            _disfluent(rng, _describe(rng, scene)), Truth(0.88, 0.82, fluency=-1.0 if severe else -0.5), error
        )
    if error == "missing event":
        if events == 1:
            return CaptionPlan(_describe(rng, scene, attributes=False), Truth(0.9, 0.6), error)
        kept = [0] if events == 2 else [0, 1]
        return CaptionPlan(_describe(rng, scene, only=kept), Truth(0.93, 0.9 * len(kept) / events), error)
    if error == "wrong order":
        if events == 1:
            return CaptionPlan(_describe(rng, _swapped_pitch(scene)), Truth(0.62, 0.72), error)
        order = [1, 0] if events == 2 else [1, 0, 2]
        together = any(kind == "simultaneous" for _, _, kind in scene.relations) and events == 2
        described = _describe(rng, _swapped_pitch(scene) if together else scene, order=order)
        return CaptionPlan(described, Truth(0.65, 0.7), error)
    if error == "hallucinated event":
        added = rng.choice(HALLUCINATIONS)
        text = _describe(rng, scene).rstrip(".") + rng.choice((f", while {added}", f" and {added}", f" as {added}"))
        return CaptionPlan(_sentence(text), Truth(0.93 * events / (events + 1), 0.88, irrelevance=-0.5), error)
    if error == "wrong source":
        wrong_clause, _wrong_phrase = KINDS[scene.events[0].kind].wrong
        if events == 1:
            return CaptionPlan(_sentence(wrong_clause), Truth(0.1, 0.1, irrelevance=-1.0), error)
        rest = _describe(rng, scene, only=list(range(1, events)))
        text = f"{wrong_clause}, then {rest[0].lower()}{rest[1:]}"
        return CaptionPlan(
            _sentence(text), Truth(0.9 * (events - 1) / events, 0.85 * (events - 1) / events, irrelevance=-0.5), error
        )
    return CaptionPlan(rng.choice(GENERIC), Truth(0.7, 0.15), error)


# --- Annotations ----------------------------------------------------------------------------------------------------


def scene_by_id(external_id: str) -> Scene:
    for scene in demo_scenes():
        if scene.external_id == external_id:
            return scene
    raise KeyError(f"no demo scene {external_id!r}")


def gold_draft(scene: Scene) -> dict:
    """The scene's AudioCaps-F graph as an editor draft (what the simulated reviewer publishes)."""
    labels = _labels(scene)
    events = [
        {
            "id": f"e{index + 1}",
            "label": labels[index],
            "sources": [KINDS[event.kind].source],
            "attributes": event.attributes,
            "onset": event.onset,
            "offset": event.offset,
        }
        for index, event in enumerate(scene.events)
    ]
    relations = [
        {"first": f"e{first + 1}", "second": f"e{second + 1}", "kind": kind} for first, second, kind in scene.relations
    ]
    return {"events": events, "relations": relations, "note": ""}


def _labels(scene: Scene) -> list[str]:
    """Event labels, made distinct within the scene (two whistles: "rising whistle", "falling whistle")."""
    labels = [KINDS[event.kind].label for event in scene.events]
    return [
        f"{event.kind} {label}" if labels.count(label) > 1 else label
        for event, label in zip(scene.events, labels, strict=True)
    ]


def annotator_draft(scene: Scene, annotator: int) -> dict:
    """What simulated annotator `annotator` (0-2) submits for the scene: the gold graph with their habits."""
    rng = random.Random(f"annotator:{SEED}:{annotator}:{scene.external_id}")
    draft = gold_draft(scene)
    habit = ANNOTATOR_HABITS[annotator]
    for event in draft["events"]:
        if habit == "careful" and event["attributes"] and rng.random() < 0.25:
            event["attributes"] = event["attributes"][:-1]
        elif habit == "own words":
            event["label"] = OWN_WORDS.get(event["label"], event["label"])
            if rng.random() < 0.5:
                event["sources"] = [rng.choice(("device", "equipment", "speaker"))]
        elif habit == "hurried":
            event["attributes"] = [word for word in event["attributes"] if rng.random() < 0.6]
            if rng.random() < 0.3:
                event["attributes"].append(rng.choice(("electronic", "clear", "steady")))
            event["onset"] = event["offset"] = None
    if habit == "hurried" and len(draft["events"]) == 3 and rng.random() < 0.6:
        draft["events"] = draft["events"][:2]
        draft["relations"] = [r for r in draft["relations"] if "e3" not in (r["first"], r["second"])]
    labels = [event["label"] for event in draft["events"]]
    for event in draft["events"]:
        if labels.count(event["label"]) > 1:
            event["label"] = f"{event['label']} {event['id']}"
    return draft
