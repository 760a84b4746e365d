"""The demo's scene data: the kinds of sound event and how captions word them, the simulated captioning systems and
the simulated annotators' habits. Plain data, read by demo/scenes.py, which draws every scene from it.
"""

from __future__ import annotations

from dataclasses import dataclass

SEED = 19
SCENE_COUNT = 44
REFERENCES_PER_CLIP = 5


@dataclass(frozen=True)
class EventKind:
    """A kind of sound event: how captions say it, its AudioCaps-F label and source, and a confusable real sound."""

    key: str
    label: str  # the gold annotation's event label
    source: str  # the gold annotation's source
    # Clauses: "{pitch}", "{volume}", "{count}" and "{tempo}" are filled from the event's attributes.
    clauses: tuple[str, ...]
    noun_phrases: tuple[str, ...]  # for "followed by ..." and "over ..."
    wrong: tuple[str, ...]  # what a system that mistakes the source writes instead (clause, noun phrase)
    pitches: tuple[str, ...] = ("",)
    counts: tuple[int, ...] = (0,)
    tempos: tuple[str, ...] = ("",)


KINDS = {
    kind.key: kind
    for kind in (
        EventKind(
            "beep",
            "beep",
            "electronic device",
            (
                "a {pitch} beep sounds {count}",
                "an electronic device beeps {count}",
                "a {volume} {pitch} tone beeps {count}",
                "a timer beeps {count}",
                "{count_word} {pitch} beeps ring out",
            ),
            ("a {pitch} beep", "{count_word} {pitch} beeps", "an electronic beep"),
            ("a bird chirps", "a chirping bird"),
            pitches=("high-pitched", "low"),
            counts=(2, 3, 4),
        ),
        EventKind(
            "hum",
            "hum",
            "machine",
            (
                "a {volume} hum drones on",
                "a machine hums {tempo}",
                "a {pitch} electrical hum continues",
                "a {volume} drone hums steadily",
                "an engine-like hum runs {tempo}",
            ),
            ("a {pitch} hum", "a {volume} droning hum", "the hum of a machine"),
            ("a car engine idles", "an idling car engine"),
            pitches=("low", "deep"),
            tempos=("continuously", "steadily"),
        ),
        EventKind(
            "siren",
            "siren",
            "alarm",
            (
                "a {volume} siren alternates between two tones",
                "an alarm wails {tempo}",
                "a two-tone alarm sounds {tempo}",
                "a siren switches between a high and a low note",
            ),
            ("a {volume} two-tone siren", "a wailing alarm", "an alternating alarm"),
            ("a police car drives past", "a passing police car"),
            tempos=("rapidly", "repeatedly"),
        ),
        EventKind(
            "rising",
            "whistle",
            "electronic tone",
            (
                "a {pitch} tone rises {tempo}",
                "a whistle slides upward {tempo}",
                "a sweeping tone goes up in pitch",
                "an electronic whistle rises {tempo}",
            ),
            ("a rising whistle", "an upward sweep", "a rising {pitch} tone"),
            ("a kettle starts to whistle", "a whistling kettle"),
            pitches=("high-pitched", "shrill"),
            tempos=("quickly", "gradually"),
        ),
        EventKind(
            "falling",
            "whistle",
            "electronic tone",
            (
                "a {pitch} tone falls {tempo}",
                "a whistle slides down {tempo}",
                "a sweeping tone drops in pitch",
                "an electronic whistle falls {tempo}",
            ),
            ("a falling whistle", "a downward sweep", "a falling {pitch} tone"),
            ("a bomb whistles as it falls", "a falling bomb"),
            pitches=("high-pitched", "sharp"),
            tempos=("slowly", "gradually"),
        ),
        EventKind(
            "hiss",
            "hiss",
            "static",
            (
                "{volume} static hisses {tempo}",
                "a {volume} hiss continues",
                "white noise hisses {tempo}",
                "a radio hisses with {volume} static",
            ),
            ("{volume} static", "a {volume} hiss", "hissing white noise"),
            ("rain falls steadily", "falling rain"),
            tempos=("continuously", "steadily"),
        ),
        EventKind(
            "crackle",
            "crackling",
            "static",
            (
                "static crackles {tempo}",
                "short bursts of noise crackle {tempo}",
                "something crackles and pops {tempo}",
                "{volume} pops and crackles are heard {tempo}",
            ),
            ("crackling static", "{volume} pops and crackles", "bursts of crackling"),
            ("someone types on a keyboard", "keyboard typing"),
            tempos=("intermittently", "occasionally"),
        ),
        EventKind(
            "whoosh",
            "whoosh",
            "wind",
            (
                "a rush of noise swells and fades",
                "a {volume} whoosh builds up {tempo} and dies down",
                "noise grows louder and then fades away",
                "a gust-like whoosh rises and falls",
            ),
            ("a swelling whoosh", "a rush of noise", "a {volume} whoosh"),
            ("a jet flies overhead", "a passing jet"),
            tempos=("gradually", "slowly"),
        ),
        EventKind(
            "tick",
            "ticking",
            "clock",
            (
                "a clock ticks {tempo}",
                "{volume} clicks tick {tempo}",
                "something ticks {tempo} like a clock",
                "a {volume} ticking continues {tempo}",
            ),
            ("a ticking clock", "{volume} ticking", "steady clicks"),
            ("footsteps walk on a hard floor", "footsteps"),
            tempos=("steadily", "rhythmically"),
        ),
        EventKind(
            "knock",
            "knock",
            "door",
            (
                "someone knocks {count}",
                "{volume} knocks sound {count}",
                "a door is knocked on {count}",
                "{count_word} {volume} thuds are heard",
            ),
            ("{count_word} knocks", "{volume} knocking", "a knock on a door"),
            ("a drum is hit", "a drum beat"),
            counts=(2, 3, 4),
        ),
        EventKind(
            "chime",
            "chime",
            "bell",
            (
                "a {pitch} bell chimes {count}",
                "a chime rings {count}",
                "a {volume} bell rings out clearly",
                "a {pitch} chime rings and fades",
            ),
            ("a {pitch} chime", "a ringing bell", "a {volume} chime"),
            ("a phone rings", "a ringing phone"),
            pitches=("high-pitched", "deep"),
            counts=(1, 2, 3),
        ),
    )
}
VOLUMES = ("loud", "faint")
COUNT_WORDS = {1: "once", 2: "twice", 3: "three times", 4: "four times"}
COUNT_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four"}
# What a hallucinating system adds (a clause after "while" / "and").
HALLUCINATIONS = ("a dog barks", "a man speaks", "birds chirp in the background", "a car horn honks", "people talk")
GENERIC = (
    "A sound is heard.",
    "Some noise is playing.",
    "A machine makes a noise.",
    "An electronic sound plays.",
    "Sounds are heard in the background.",
    "Something is making noise.",
)

#: system name -> (description, its controlled error, how often it makes it)
SYSTEMS = {
    "demo-accurate": ("Simulated system: accurate, specific captions.", "", 0.0),
    "demo-disfluent": ("Simulated system: right content, broken sentences.", "disfluency", 0.85),
    "demo-misses-events": ("Simulated system: leaves out events or details.", "missing event", 0.85),
    "demo-swaps-order": ("Simulated system: events in the wrong order, pitch mixed up.", "wrong order", 0.85),
    "demo-hallucinates": ("Simulated system: adds sounds that are not there.", "hallucinated event", 0.85),
    "demo-wrong-source": ("Simulated system: mistakes what makes a sound.", "wrong source", 0.85),
    "demo-generic": ("Simulated system: vague descriptions.", "vague", 0.9),
}

#: the three simulated annotators and how each deviates from the gold graph
ANNOTATOR_HABITS = (
    "careful",  # the gold graph, but leaves out one attribute now and then
    "own words",  # names events and sources in other words (tone for beep, device for machine)
    "hurried",  # misses background events and relations, types free-text attributes
)
OWN_WORDS = {
    "beep": "tone",
    "hum": "drone",
    "siren": "alarm",
    "hiss": "static noise",
    "crackling": "crackle",
    "whoosh": "rush",
    "ticking": "clicking",
    "knock": "thud",
    "chime": "bell",
}
