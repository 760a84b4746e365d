"""Build the labelled set of event-name pairs the review's event matching is tuned and measured on.

    .venv/bin/python bench/event_name_pairs_build.py ../shared/datasets/audiocaps_f_annotations.json \
        tests/metrics_bridge/data/event_name_pairs.json

Every event of AudioCaps-F's expert annotations is a description: its name and its first source ("buzzing",
"insects"). Two descriptions are labelled **the same kind of sound** when

- their sources belong to one sound class (SOURCE_CLASSES: close to AudioSet's classes, so a class holds
  hypernyms and co-hyponyms that sound alike: insects / crickets / bees, vehicle / car / truck / engine,
  birds / pigeons / ducks, man / woman / person), and
- they are not a man's and a woman's (or boy's and girl's) voice, and
- their names share an action group (ACTION_GROUPS: ways the same sound is named; a name may be in several
  groups, "humming" of an engine and of an insect).

They are labelled **different** when their sources are in different classes, or in one class with no action
group in common (a man speaking / a man laughing). Descriptions whose source or name is in no table are left
out rather than guessed. Pairs of the same text are left out (they match by their lemma, nothing to measure).

Sampled (seeded): 200 same-kind pairs (taken in turn from each sound class, so speech is not most of them),
100 different pairs within one sound class, 100 different pairs whose names share an action group across
classes (a car passing / a train passing), 50 other different pairs; each pair is put in half "a" (weights
and thresholds are chosen on it) or "b" (precision and recall are reported on it).
"""

from __future__ import annotations

import json
import random
import sys
from itertools import combinations
from pathlib import Path

SEED = 20261129

SOURCE_CLASSES = {
    "human": "man, woman, people, person, crowd of people, child, men, crowd, baby, male, group of people, girl, "
    "female, infant, young girl, adult male, kid, adult female, someone, another man, children, kids, young kid, "
    "audience, young man, female voice, girls, young people, young boy, women, group of men, another person, boy, "
    "human, male voice, group of girls, multiple people, adult, persons, another male, adult males, another woman, "
    "males, second man",
    "dog": "dog, dogs, small dogs, puppy",
    "cat": "cat, cats, kitten",
    "bird": "birds, bird, pigeons, pigeon, duck, ducks, rooster, roosters, seagulls, chicken, crow, crows, doves, "
    "cuckoo bird",
    "insect": "insects, insect, crickets, cricket, bee, bees, fly, flies, insects and bugs, cicadas, cicada",
    "frog": "frogs, frog",
    "sheep or goat": "goat, goats, sheep, two sheep",
    "pig": "pig, pigs",
    "horse": "horse, horses",
    "wind": "wind",
    "water": "water, toilet, ocean waves, waves, faucet, liquid, tap water, sea, river stream, sink faucet, "
    "water faucet",
    "rain": "rain",
    "thunder": "thunder",
    "road vehicle": "engine, vehicle, vehicle engine, motorcycle engine, car, motorcycle, engines, traffic, vehicles, "
    "truck engine, bus, bus engine, motor vehicle engine, truck, motor vehicle, motor engine, race car, cars, "
    "motorbike, car engine, auto engine, automobile, large truck engine, large truck, semi-truck, passing vehicle, "
    "race car engines, large vehicle, vehicle engines",
    "boat": "motorboat, motorboat engine, speedboat, ship engine, water vehicle",
    "aircraft": "aircraft engine, helicopter, aircraft, airplane, helicopter blades, aircraft motor, "
    "helicopter engine, spinning helicopter blades",
    "train": "train, steam engine, railroad tracks",
    "horn": "horn, train horn, car horn, truck horn, car horns, steam engine horn",
    "siren": "siren, sirens, emergency vehicle, ambulance, police, emergency siren, fire truck",
    "gun": "gun, gunshots, machine gun, cannons, air gun",
    "fireworks": "fireworks, firecrackers",
    "clock": "clock",
    "bell": "bell, bells, church bells, railroad signal bells",
    "machine": "machine, sewing machine, power tool, drill, power drill, machinery, vacuum cleaner, machine motor, "
    "jackhammer, chainsaw, electric motor, appliance motor, power tool drill, heavy machine motor",
    "hard object": "metal, plastic, wood, dishes, glass, glasses, table, pot, plates, container, pots and pans, "
    "silverware, tin can, objects, dinner plates, metal pan, desk, floor, cardboard, paper",
    "door": "door, doors, car door, vehicle door",
    "plant": "leaves, twig",
    "footsteps": "footsteps, footstep, shoes, footfalls",
    "music": "music, guitar, drums, orchestral music, bass drum",
    "air": "compressed air, steam, pressurized air, spray, high pressure liquid, pressured gas, air brakes",
    "cooking": "food, oil",
    "electronic": "digital, electronic, electronic device, telephone, alarm, car alarm, electronic toy",
    "keyboard": "keyboard, typewriter, computer mouse",
}

ACTION_GROUPS = {
    "speech": "speaking, talking, speaks, talk, talks, speak, speech, voice, voices, whispering, mumbling, murmurs, "
    "murmuring, conversation, communicate, communicating, babbling, calls, call, others speaking, stuttering",
    "laughter": "laughing, laughter, laugh, laughs, giggling, giggles, chuckling",
    "crying": "crying, cries, whimpering, wailing, cry, baby cries, whines",
    "shouting": "yelling, screaming, shouting, shout, yells, scream, hollers, yell, calls out, shouts",
    "cheering": "cheering, applauding, applause, clapping, applaud, cheer, clap, wooing",
    "breath": "snoring, snores, breathing, breathes, panting, exhaling, sniffing, sniffling, sniff, sniffles, "
    "breath, breathe, gasp",
    "body": "burping, burps, coughs, sneezing, sneezes, farting, eructation, choking, spitting, spits, swallowing",
    "animal call": "chirping, chirp, chirps, tweeting, cooing, coo, coos, squawking, squawk, cawing, caws, caw, "
    "crowing, crows, quacking, quack, quacks, clucking, barking, barks, bark, yip, yips, yapping, meowing, meows, "
    "bleating, bleat, bleats, bleeting, baaing, oinking, oink, neighing, neigh, croaking, croak, buzzing, buzz, "
    "buzzes, humming, chirring, making animal sounds, vocalizing, singing",
    "growl": "growling, growl",
    "engine": "running, idling, humming, revving, accelerating, operating, driving, accelerates, revs, "
    "running idle, idles, idle, roaring, roars, roar, rumbling, rumbles, starting up, starting, vibrating, "
    "vibrations, vibration, vibrating noise, whirring, whirs, passing, drives, speeding, racing, passing by, "
    "drives by, passes, pass, passes by, engine revving, revving up, slowing down, decelerates, approaches, "
    "moving, motion, working, engine, combustion, cranking, taking off, flying, flight, whooshing, whooshes, "
    "traffic sounds, passing traffic, hums, hum, buzzing",
    "wind": "blowing, blows, gusts, howling, whooshing, rustling",
    "water": "flowing, flows, trickling, trickles, pouring, pouring water, pouring out, splashing, splashes, "
    "splashing out, running, gurgling, gurgles, rushing, streaming, draining, lapping, flushing, flushes, "
    "dripping, waving, crashing, spraying",
    "rain": "raining, rain, rainfall, pitter-patters, falling, pouring",
    "friction": "rustling, rustle, rustles, crinkling, crinkles, crumpling, rubbing, scraping, scrape, scrapping, "
    "scratching, brushing, shuffling, scrubbing, scrubing, sanding, ruffling, sliding, slides, crunching, crunches",
    "impact": "tapping, tap-tap, knocking, thumping, thump, banging, bang, clanking, clank, clanks, clacking, "
    "clack, clacks, clattering, clatters, clinking, clink, clinks, clanging, slamming, click, clicking, clicks, "
    "rattling, rattles, snap, tap, crashing, crash, crashes, falling, fall, bouncing, closing, shutting, "
    "closes shut, clickety-clack, clip clops, trotting, slapping, breaking, chopping, tumbles, rapping, typing",
    "explosion": "gunshots, firing, gunshot, gunfire, shot, explosion, explosions, exploding, bursts, burst, "
    "popping, booming, booms, bang, boom",
    "ringing": "ringing, ring, rings, chiming, tolls, jingles, belling",
    "beeping": "beeping, beep, beeps, bleeping, signal, zapping",
    "ticking": "ticking, tick-tocking, ticks, ticktocking, ticktocks",
    "horn": "honking, honks, honk, blaring, blares, horn, blowing horn, horning, blowing, whistling",
    "siren": "siren, sirens, wailing, blaring",
    "hiss": "hissing, hisses, hiss, spraying, sprays, spray, short spray, longer spray, releasing, release, "
    "blowing, whooshing",
    "sizzle": "sizzling, frying, sizzles, fries, crackling, popping",
    "tool": "drilling, sawing, sawed, sewing, stitching, cutting, running, operating, whirring, buzzing, "
    "vibrating, ratcheting, humming",
    "music": "music, playing, plays, play, strumming, drums, beats, hip-hop song, singing",
    "walking": "footsteps, footstep, walking, trotting, footfalls, shuffling, stepping, running",
    "whistling": "whistling, whistles, whistle",
    "flapping": "flapping, flap, wings flapping, flying",
}


def _table(groups: dict[str, str]) -> dict[str, set[str]]:
    """word -> the groups that list it."""
    table: dict[str, set[str]] = {}
    for group, words in groups.items():
        for word in words.split(","):
            table.setdefault(" ".join(word.split()), set()).add(group)
    return table


SOURCE_OF = _table(SOURCE_CLASSES)
ACTIONS_OF = _table(ACTION_GROUPS)


def descriptions(annotations: dict) -> list[tuple[str, str]]:
    """Distinct (name, first source) of the annotations that both tables know, sorted."""
    found = set()
    for document in annotations.values():
        for name, node in document.items():
            if not isinstance(node, dict) or not node.get("source"):
                continue
            name, source = " ".join(name.lower().split()), " ".join(node["source"][0].lower().split())
            if len(SOURCE_OF.get(source, ())) == 1 and name in ACTIONS_OF:
                found.add((name, source))
    return sorted(found)


MALE = {
    "man",
    "men",
    "male",
    "boy",
    "adult male",
    "another man",
    "young man",
    "group of men",
    "male voice",
    "another male",
    "adult males",
    "males",
    "second man",
    "young boy",
}
FEMALE = {
    "woman",
    "female",
    "girl",
    "young girl",
    "adult female",
    "female voice",
    "girls",
    "women",
    "group of girls",
    "another woman",
}


def _genders_differ(first: str, second: str) -> bool:
    return (first in MALE and second in FEMALE) or (first in FEMALE and second in MALE)


def same_kind(first: tuple[str, str], second: tuple[str, str]) -> bool:
    if SOURCE_OF[first[1]] != SOURCE_OF[second[1]] or _genders_differ(first[1], second[1]):
        return False
    return bool(ACTIONS_OF[first[0]] & ACTIONS_OF[second[0]])


def _spread(pairs: list, count: int, rng: random.Random) -> list:
    """`count` same-kind pairs taken in turn from each sound class, so speech (most of the data) does not
    make up most of the set."""
    by_class: dict[str, list] = {}
    for pair in pairs:
        by_class.setdefault(next(iter(SOURCE_OF[pair[0][1]])), []).append(pair)
    for members in by_class.values():
        rng.shuffle(members)
    chosen: list = []
    while len(chosen) < count and any(by_class.values()):
        for name in sorted(by_class):
            if by_class[name] and len(chosen) < count:
                chosen.append(by_class[name].pop())
    return chosen


def labelled_pairs(annotations: dict) -> list[dict]:
    rng = random.Random(SEED)
    items = descriptions(annotations)
    same, within, across, other = [], [], [], []
    for first, second in combinations(items, 2):
        if same_kind(first, second):
            same.append((first, second))
        elif SOURCE_OF[first[1]] == SOURCE_OF[second[1]] and not _genders_differ(first[1], second[1]):
            within.append((first, second))
        elif ACTIONS_OF[first[0]] & ACTIONS_OF[second[0]]:
            across.append((first, second))
        else:
            other.append((first, second))
    chosen = [
        *((pair, True, "same kind") for pair in _spread(same, 200, rng)),
        *((pair, False, "same sound class, other action") for pair in rng.sample(within, 100)),
        *((pair, False, "same action, other sound class") for pair in rng.sample(across, 100)),
        *((pair, False, "other") for pair in rng.sample(other, 50)),
    ]
    rng.shuffle(chosen)
    return [
        {
            "first": {"name": first[0], "source": first[1]},
            "second": {"name": second[0], "source": second[1]},
            "same": label,
            "why": why,
            "half": "a" if index % 2 == 0 else "b",
        }
        for index, ((first, second), label, why) in enumerate(chosen)
    ]


def main(source: str, target: str) -> None:
    annotations = json.loads(Path(source).read_text())
    pairs = labelled_pairs(annotations)
    document = {
        "built_by": "bench/event_name_pairs_build.py (its docstring states the labelling rule)",
        "from": "AudioCaps-F expert annotations (audiocaps_f_annotations.json): each event's name and first source",
        "seed": SEED,
        "pairs": pairs,
    }
    Path(target).write_text(json.dumps(document, indent=1) + "\n")
    print(f"{len(pairs)} pairs ({sum(p['same'] for p in pairs)} same kind) -> {target}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
