"""Judgement side of the demo: a simulated study (twelve simulated raters) and the demo rater's share of it.

Builds on demo.dataset (the `demo` dataset and accounts). The simulated raters judge from what is true
about each caption (demo/scenes.py: its precision, recall and penalties) through a noise model:
each rater has a bias and a noise level of their own; one is careless (fast, near-random, mostly the same answer),
one fails the attention checks (the HI pairs whose answer is known). Their answers are stored as simulated ones
(demo/simulated_answers.py: marked on every row, checked as the rating pages check answers, in each item's
rater order). Safe to run again: campaigns are looked up by name and left alone once they exist.
"""

import math
import random
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.roles import RATER
from corpus.models import Caption, Dataset
from demo.dataset import simulated_users_ensure
from demo.scene_data import SYSTEMS
from demo.scenes import REFERENCE_TRUTH, WRONG_CLIP, Truth, system_caption
from demo.simulated_answers import SimulatedAnswer, simulated_answers_store
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, HeadphoneCheck
from ratings.services.campaigns import (
    GoldRule,
    assignment_add_items,
    balanced_shares,
    campaign_add_raters,
    campaign_create,
    gold_donors,
    raters_check,
)
from ratings.services.foreign_captions import donors_plan, rater_exposure
from ratings.services.headphone import headphone_trials_draw, screen
from ratings.services.pair_generation import pairs_generate

PAIR_KEY_PREFIX = "demo"
#: pairs per split: enough that each split has over 30 pairs with a human preference. HI pairs are gold checks,
#: one per rated clip: a rater of a clip's gold gets no other item of that clip, and a clip with two golds would
#: leave too few raters for its other pairs; and no more golds per rater than there are donor clips, since two
#: foreign captions of one donor read alike (ratings/services/campaigns.py, GoldRule).
PAIR_COUNTS = {CaptionPair.Split.HC: 60, CaptionPair.Split.HI: 30, CaptionPair.Split.HM: 60, CaptionPair.Split.MM: 60}
VOTES_PER_PAIR = 5
THUMBS_CAMPAIGN = "demo-thumbs"
PAIRWISE_CAMPAIGN = "demo-pairwise"
# What raters see instead of the names (which carry the dataset's name).
TITLES = {THUMBS_CAMPAIGN: "Caption quality study", PAIRWISE_CAMPAIGN: "Which caption is better?"}
THUMBS_CLIPS = 24  # rated by panels of three raters (every caption of a clip by the same three: ICC(2,k))
THUMBS_PANEL = 3
DONOR_CLIPS = 14  # the last clips: HI pairs take their foreign captions from these, which nobody rates
DEMO_RATER = "rater"


@dataclass(frozen=True)
class SimulatedRater:
    username: str
    bias: float  # added to their precision and recall (THumBS points)
    noise: float  # standard deviation of their scores (points)
    temperature: float  # pairwise: how much a quality difference sways them (smaller: more decisive)
    habit: str = ""  # "careless" or "fails attention checks"


SIMULATED_RATERS = tuple(
    SimulatedRater(f"sim-rater-{number:02d}", bias, noise, temperature, habit)
    for number, (bias, noise, temperature, habit) in enumerate(
        [
            (0.0, 0.45, 0.45, ""),
            (0.3, 0.5, 0.5, ""),
            (-0.3, 0.5, 0.55, ""),
            (0.1, 0.4, 0.4, ""),
            (-0.1, 0.6, 0.6, ""),
            (0.2, 0.55, 0.5, ""),
            (0.0, 0.5, 0.45, ""),
            (-0.2, 0.45, 0.5, ""),
            (0.4, 0.6, 0.65, ""),
            (0.0, 0.4, 0.5, ""),
            (0.0, 1.8, 3.0, "careless"),
            (0.1, 0.6, 0.6, "fails attention checks"),
        ],
        start=1,
    )
)


# --- What a simulated rater answers (plain arithmetic on the truth; seeded by stable names, never by row ids) -------


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _penalty(rng: random.Random, true: float, rater: SimulatedRater) -> Decimal:
    noisy = true + rng.gauss(0, 0.15 + rater.noise / 5)
    return Decimal(str(round(_clamp(noisy if noisy < -0.05 else 0.0, -2.0, 0.0), 1)))


def simulated_thumbs(rater: SimulatedRater, truth: Truth, seed: str, previous: tuple | None) -> dict:
    """One caption's THumBS scores from this rater."""
    rng = random.Random(f"thumbs:{rater.username}:{seed}")
    if rater.habit == "careless" and previous is not None and rng.random() < 0.6:
        return dict(zip(("precision", "recall", "fluency", "conciseness", "irrelevance"), previous, strict=True))

    def score(true: float) -> int:
        return int(_clamp(round(1 + 4 * true + rater.bias + rng.gauss(0, rater.noise)), 1, 5))

    return {
        "precision": score(truth.precision),
        "recall": score(truth.recall),
        "fluency": _penalty(rng, truth.fluency, rater),
        "conciseness": _penalty(rng, truth.conciseness, rater),
        "irrelevance": _penalty(rng, truth.irrelevance, rater),
    }


def simulated_choice(rater: SimulatedRater, pair: CaptionPair, truth_a: Truth, truth_b: Truth) -> str:
    """ "a", "b" or "none" for the pair: a logistic choice on the difference of overall quality."""
    rng = random.Random(f"vote:{rater.username}:{pair.source_key}")
    if pair.gold_choice and rater.habit == "fails attention checks" and rng.random() < 0.75:
        return "b" if pair.gold_choice == "a" else "a"
    if rater.habit == "careless":
        return rng.choices(("a", "b", "none"), weights=(0.45, 0.45, 0.1))[0]
    difference = truth_a.overall - truth_b.overall
    if rng.random() < 0.3 * math.exp(-abs(difference) / 0.4):
        return "none"
    return "a" if rng.random() < 1 / (1 + math.exp(-difference / rater.temperature)) else "b"


def simulated_seconds(rater: SimulatedRater, clip_seconds: float, seed: str, *, captions: int = 2) -> float:
    """Time a rater spends on an item: listening, reading, deciding (the careless one barely listens)."""
    rng = random.Random(f"seconds:{rater.username}:{seed}")
    if rater.habit == "careless":
        return round(clip_seconds + rng.uniform(1.0, 3.0), 1)
    return round(clip_seconds * rng.uniform(1.2, 2.5) + captions * rng.uniform(4.0, 12.0), 1)


# --- Building the study ---------------------------------------------------------------------------------------------


def caption_truths(*, dataset: Dataset) -> dict[int, tuple[Truth, str]]:
    """caption id -> (what is true about it, a stable name for seeding: clip and text, never the row id).
    A copy of another clip's caption (an HI pair's) is wrong for this clip."""
    truths = {}
    rows = Caption.objects.filter(clip__dataset=dataset).values_list(
        "pk", "role", "system__name", "clip__external_id", "text"
    )
    for caption_id, role, system, external_id, text in rows:
        if role == Caption.Role.REFERENCE:
            truth = REFERENCE_TRUTH
        elif system in SYSTEMS:
            truth = system_caption(external_id, system).truth
        else:
            truth = WRONG_CLIP
        truths[caption_id] = (truth, f"{external_id}|{text}")
    return truths


@transaction.atomic
def demo_pairs_ensure(*, dataset: Dataset) -> list[CaptionPair]:
    """HC / HI / HM / MM pairs; the HI pairs are attention checks (their answer is known: a).

    The foreign caption of an HI pair comes from a donor clip (ratings/services/foreign_captions.py): one of
    the last DONOR_CLIPS clips, which no rater of the study is given (the THumBS campaign rates the first
    THUMBS_CLIPS), and whose texts are none shown on the rated clips."""
    existing = list(CaptionPair.objects.filter(clip__dataset=dataset, source_key__startswith=f"{PAIR_KEY_PREFIX}-"))
    if existing:
        return existing
    clips = list(dataset.clips.order_by("pk"))
    if len(clips) < THUMBS_CLIPS + DONOR_CLIPS:
        raise ValueError(f"the demo needs {THUMBS_CLIPS + DONOR_CLIPS} clips: its donor clips would be rated ones")
    donors = donors_plan(
        dataset=dataset,
        chosen_clips=clips[:-DONOR_CLIPS],
        clips_named=True,
        hi_count=PAIR_COUNTS[CaptionPair.Split.HI],
        raters=[],
        seed=7,
    )
    return pairs_generate(
        clips=donors.item_clips,
        counts=PAIR_COUNTS,
        seed=7,
        key_prefix=PAIR_KEY_PREFIX,
        gold_from_hi=True,
        foreign_clips=donors.donor_clips,
        excluded_texts=donors.excluded_texts,
    )


def _thumbs_captions(clips) -> list[Caption]:
    # One human reference per clip among the machine captions: raters judge both without knowing which is which.
    clip_ids = [clip.pk for clip in clips]
    references = Caption.objects.corpus().filter(clip_id__in=clip_ids, role=Caption.Role.REFERENCE, position=0)
    candidates = Caption.objects.corpus().filter(
        clip_id__in=clip_ids, role=Caption.Role.CANDIDATE, system__isnull=False
    )
    return list(references) + list(candidates)


def demo_campaigns_ensure(*, dataset: Dataset, pairs: list[CaptionPair]) -> list[Campaign]:
    """The THumBS and pairwise campaigns of the simulated study, judged by the simulated raters, with the demo
    rater added last (their share is left for them to do). Each is made once."""
    demo_rater = get_user_model().objects.get(username=DEMO_RATER)
    campaigns = []
    for name, task_type in (
        (THUMBS_CAMPAIGN, Campaign.TaskType.THUMBS),
        (PAIRWISE_CAMPAIGN, Campaign.TaskType.PAIRWISE),
    ):
        campaign = Campaign.objects.filter(name=name).first()
        if campaign is None:
            with transaction.atomic():
                campaign = _simulated_campaign(dataset, name, task_type, pairs)
                campaign_add_raters(campaign=campaign, raters=[demo_rater])
        campaigns.append(campaign)
    return campaigns


def _simulated_campaign(dataset: Dataset, name: str, task_type: str, pairs: list[CaptionPair]) -> Campaign:
    raters = {
        user.username: user
        for user in simulated_users_ensure(usernames=[rater.username for rater in SIMULATED_RATERS], role=RATER)
    }
    for user in raters.values():
        _simulated_headphone_pass(user)
    is_thumbs = task_type == Campaign.TaskType.THUMBS
    clips = list(dataset.clips.order_by("pk")[:THUMBS_CLIPS])
    campaign = campaign_create(
        name=name,
        dataset=dataset,
        task_type=task_type,
        seed=1,
        judgements_per_item=THUMBS_PANEL if is_thumbs else VOTES_PER_PAIR,
        captions=_thumbs_captions(clips) if is_thumbs else None,
        pairs=None if is_thumbs else pairs,
        title=TITLES[name],
    )
    # Who judges what is decided by names and order, never by row ids, so a fresh database gets the same study.
    if is_thumbs:
        # Panels of three raters, each panel every caption of its clips: the ICC(2,k) block is a panel's clips.
        panels = len(SIMULATED_RATERS) // THUMBS_PANEL
        shares = {
            rater.username: clips[(index // THUMBS_PANEL) :: panels] for index, rater in enumerate(SIMULATED_RATERS)
        }
    else:
        shares = _pairwise_shares(campaign, pairs, [raters[rater.username] for rater in SIMULATED_RATERS])
    # The simulated raters are given their shares by name below; they pass the same check as anyone joining.
    raters_check(campaign=campaign, raters=list(raters.values()))
    for username, items in shares.items():
        assignment = Assignment.objects.create(campaign=campaign, rater=raters[username])
        assignment_add_items(assignment=assignment, items=items)
    _simulated_answers_store(campaign=campaign, raters={rater.username: rater for rater in SIMULATED_RATERS})
    return campaign


def _pairwise_shares(campaign: Campaign, pairs: list[CaptionPair], users: list) -> dict[str, list[CaptionPair]]:
    """VOTES_PER_PAIR raters per pair, balanced, under the gold rule (a rater of a gold pair gets no other item of
    its clip, THumBS items included), drawn from names: pairs by source key, clips by external id."""
    by_key = {pair.source_key: pair for pair in pairs}
    donors = gold_donors(pair.pk for pair in pairs if pair.gold_choice)
    exposures = [rater_exposure(rater=user, dataset=campaign.dataset, exclude_campaign=campaign) for user in users]
    rule = GoldRule(
        clip_of={key: pair.clip_id for key, pair in by_key.items()},
        gold=frozenset(key for key, pair in by_key.items() if pair.gold_choice),
        known_clips=[exposure.clip_ids for exposure in exposures],
        known_gold_clips=[exposure.open_gold_clip_ids for exposure in exposures],
        donor_of={key: donor for key, pair in by_key.items() if (donor := donors.get(pair.pk)) is not None},
    )
    needs = {key: VOTES_PER_PAIR for key in sorted(by_key)}
    shares = balanced_shares(needs=needs, rater_count=len(users), rng=random.Random("demo-pairwise"), gold_rule=rule)
    return {user.username: [by_key[key] for key in share] for user, share in zip(users, shares, strict=True)}


def _simulated_headphone_pass(rater) -> None:
    """The antiphase screen passed (every trial heard and answered right) a week ago, as before their first item."""
    if HeadphoneCheck.objects.filter(rater=rater, passed=True).exists():
        return
    kind = HeadphoneCheck.Kind.ANTIPHASE
    passed_at = timezone.now() - timedelta(days=7, minutes=10)
    trials = headphone_trials_draw(kind=kind, rng=random.Random(f"headphones:{rater.username}"))
    answered = [
        {**trial, "fetched_at": passed_at.isoformat(), "answer": screen(kind).trial_answer(trial)} for trial in trials
    ]
    HeadphoneCheck.objects.create(
        rater=rater, kind=kind, trials=answered, correct_count=len(answered), passed=True, completed_at=passed_at
    )


def _simulated_answers_store(*, campaign: Campaign, raters: dict[str, SimulatedRater]) -> None:
    """Every simulated rater's answers to all of their items, on a timeline that started a week ago, stored as
    simulated answers (demo/simulated_answers.py)."""
    truths = caption_truths(dataset=campaign.dataset)
    started = timezone.now() - timedelta(days=7)
    items = sorted(  # in an order of names, not of row ids or of each rater's shuffled positions
        AssignmentItem.objects.filter(
            assignment__campaign=campaign, assignment__rater__username__in=list(raters)
        ).select_related("assignment__rater", "clip", "pair"),
        key=lambda item: (
            item.assignment.rater.username,
            item.pair.source_key if item.pair_id else item.clip.external_id,
        ),
    )
    answers: list[SimulatedAnswer] = []
    clock: dict[str, object] = {}
    previous: dict[str, tuple] = {}
    for item in items:
        rater = raters[item.assignment.rater.username]
        clip_seconds = item.clip.duration_seconds or 5.0
        shown = clock.get(rater.username, started)
        if item.pair_id is not None:
            pair = item.pair
            choice = simulated_choice(rater, pair, truths[pair.caption_a_id][0], truths[pair.caption_b_id][0])
            seconds = simulated_seconds(rater, clip_seconds, pair.source_key)
            answer = SimulatedAnswer(item, shown, clip_seconds, seconds, choice=choice)
        else:
            scores = {}
            for caption_id in sorted(item.caption_order, key=lambda caption_id: truths[caption_id][1]):
                truth, name = truths[caption_id]
                scores[caption_id] = simulated_thumbs(rater, truth, name, previous.get(rater.username))
                previous[rater.username] = tuple(scores[caption_id].values())
            seconds = simulated_seconds(rater, clip_seconds, item.clip.external_id, captions=len(item.caption_order))
            answer = SimulatedAnswer(item, shown, clip_seconds, seconds, scores=scores)
        answers.append(answer)
        clock[rater.username] = shown + timedelta(seconds=seconds + 5)
    simulated_answers_store(campaign=campaign, answers=answers)
