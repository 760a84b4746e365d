"""A pairwise crowd study published as a FENSE file gives the study's own agreement report, exclusion included.

Participants (service calls, fast) judge pairs generated on ten Clotho-Eval clips; one answers the gold checks
wrongly and is excluded by the rules (their slots go to others). Then:
- the study's report (agreement_table with the campaign) equals the plain-Python FENSE protocol run on the
  exported file (protocol.fense_agreement, no database), and equals the report of a new dataset the export is
  imported into;
- the excluded participant's votes are in neither; reinstating them puts them in both.
"""

import json
import random
from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.models import Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.agreement import agreement_report_build, agreement_table
from metrics_bridge.tasks.runs import enqueue_chunks
from ratings.crowd_platforms import Arrival
from ratings.models import AssignmentItem, PairwiseVote
from ratings.models_study import Participant
from ratings.selectors import included_votes
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import item_mark_shown, pairwise_item_submit
from ratings.services.pairwise_import import pairwise_judgements_import
from ratings.services.participants import (
    participant_consent,
    participant_finish_if_done,
    participant_items_start,
    participant_practice_audio_served,
    participant_practice_done,
    participant_start,
)
from ratings.services.studies import study_publish
from ratings.services.study_exclusion import participant_reinstate
from ratings.services.study_export import study_fense_items
from ratings.services.study_shares import study_coverage
from tests.ratings.campaign_data import listened_give

pytestmark = pytest.mark.django_db
METRICS = ["BLEU_4", "ROUGE_L"]


def _side(item: AssignmentItem, rng: random.Random, *, careless: bool) -> str:
    if item.pair.gold_choice:
        right = "left" if (item.pair.gold_choice == "a") == item.a_on_left else "right"
        return {"left": "right", "right": "left"}[right] if careless else right
    return rng.choice(["left", "right", "left", "none"])


def _participate(study, number: int, *, careless: bool = False) -> Participant:
    participant = Participant.objects.get(pk=participant_arrive_quick(study, f"{number:024x}").pk)
    participant = participant_consent(participant=participant_start(participant=participant), agreed=True)
    participant_practice_audio_served(participant=participant)
    Participant.objects.filter(pk=participant.pk).update(practice_audio_served_at=timezone.now() - timedelta(seconds=9))
    participant = participant_items_start(participant=participant_practice_done(participant=participant))
    rng = random.Random(number)
    for item in AssignmentItem.objects.filter(assignment__rater=participant.user).order_by("position"):
        item_mark_shown(item=item)
        listened_give(item, seconds_ago=40)
        pairwise_item_submit(item=item, side=_side(item, rng, careless=careless), seen_version=0)
    return participant_finish_if_done(participant=participant)


def participant_arrive_quick(study, pid: str) -> Participant:
    from ratings.services.participants import participant_arrive

    return participant_arrive(study=study, arrival=Arrival("prolific", pid), address=f"10.9.{int(pid, 16) % 250}.1")


@pytest.fixture
def finished_study(shared_dir, settings):
    settings.STUDY_ARRIVALS_PER_ADDRESS = 1000
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:10]
    pairwise_judgements_import(data=items, dataset_name="clotho-crowd", source_name="clotho_eval.json")
    dataset = Dataset.objects.get(name="clotho-crowd")
    campaign = campaign_setup(
        name="clotho-crowd-pairs",
        dataset=dataset,
        task_type="pairwise",
        judgements_per_item=3,
        split_counts={"HC": 6, "HI": 4, "HM": 6, "MM": 8},  # one HC and HM per clip (3 of the 10 are HI donors)
        gold_from_hi=True,
        seed=3,
    )
    study = study_publish(
        campaign=campaign,
        consent_text="Consent.",
        screens="none",
        items_per_participant=6,
        attention_checks=2,
        exclude_same_answer=False,
    )
    careless = _participate(study, 1, careless=True)
    number = 2
    while not study_coverage(study=study).is_full or study_coverage(study=study).reserved:
        _participate(study, number)
        number += 1
        assert number < 100
    careless.refresh_from_db()
    assert careless.is_excluded, "the careless participant failed both gold checks"
    return study, careless


def _normalised(pairs: dict, metrics: dict) -> dict:
    """Pair counts and accuracies of METRICS, splits without a counted pair left out (they have no accuracy)."""
    splits = {split for split, count in pairs.items() if count}
    return {
        "pairs": {split: pairs[split] for split in sorted(splits)},
        "metrics": {name: {split: metrics[name][split] for split in sorted(splits)} for name in METRICS},
    }


def _report(dataset, campaign=None) -> dict:
    table = agreement_table(dataset=dataset, metric_names=METRICS, campaign=campaign)
    return _normalised(table["pairs"], table["metrics"])


def _plain_protocol(items: list[dict]) -> dict:
    clips = protocol.clips_from_fense_items(items)
    metrics, pairs = {}, {}
    for name in METRICS:
        direct = protocol.fense_agreement(clips, registry.scorer_for(name))[name]
        metrics[name] = {split: report.accuracy for split, report in direct.splits.items()}
        metrics[name]["total"] = direct.total.accuracy
        pairs = {split: report.counted for split, report in direct.splits.items()}
        pairs["total"] = direct.total.counted
    return _normalised(pairs, metrics)


def _vote_total(items: list[dict]) -> int:
    return sum(len(entry[-1]) for item in items for key, entry in item.items() if key[:2] in ("HC", "HI", "HM", "MM"))


def test_the_fense_export_gives_the_studys_own_agreement_report(finished_study):
    study, careless = finished_study
    campaign, dataset = study.campaign, study.campaign.dataset
    coverage = study_coverage(study=study)
    assert coverage.judged == coverage.judgements_needed and coverage.items_complete == coverage.items
    agreement_report_build(dataset=dataset, metric_names=METRICS, enqueue=enqueue_chunks)
    study_report = _report(dataset, campaign)
    assert study_report["pairs"]["total"] > 0 and "HI" not in study_report["pairs"], "gold checks are no data"

    items = study_fense_items(study=study)
    # The layout: one entry per clip, references, pair keys, the votes list last; excluded votes left out.
    assert all(
        set(item) <= {"raw_name", "audio_id", "references", "HC", "HI", "HM", "MM_1", "MM_2", "MM_3"} for item in items
    )
    vote_count = _vote_total(items)
    assert vote_count == included_votes(PairwiseVote.objects.filter(campaign=campaign, pair__gold_choice="")).count()
    assert vote_count == coverage.judgements_needed, "exactly the judgement count of every item"
    assert PairwiseVote.objects.filter(campaign=campaign, rater=careless.user, pair__gold_choice="").exists()

    assert _plain_protocol(items) == study_report, "the file read by the FENSE protocol alone gives the same report"
    pairwise_judgements_import(data=items, dataset_name="clotho-crowd-copy", source_name="study.json")
    copy = Dataset.objects.get(name="clotho-crowd-copy")
    agreement_report_build(dataset=copy, metric_names=METRICS, enqueue=enqueue_chunks)
    assert _report(copy) == study_report


def test_reinstating_the_excluded_participant_puts_their_votes_back_in_the_report_and_the_file(
    finished_study, make_user
):
    study, careless = finished_study
    campaign, dataset = study.campaign, study.campaign.dataset
    before = study_fense_items(study=study)
    # Others judged the careless participant's pairs since: reinstating them goes beyond the target, on purpose.
    participant_reinstate(participant=careless, by=make_user("organiser", staff=True), over_target_ok=True)
    after = study_fense_items(study=study)
    careless_votes = included_votes(PairwiseVote.objects.filter(campaign=campaign, rater=careless.user)).count()
    assert careless_votes > 0 and _vote_total(after) == _vote_total(before) + careless_votes
    coverage = study_coverage(study=study)
    assert coverage.judged + coverage.beyond_target == _vote_total(after), "coverage counts what the file holds"
    agreement_report_build(dataset=dataset, metric_names=METRICS, enqueue=enqueue_chunks)
    assert _report(dataset, campaign) == _plain_protocol(after)
