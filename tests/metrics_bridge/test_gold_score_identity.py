"""Scores of metrics that read the clip's gold annotation (X-ACE) are keyed by that annotation's content:
a changed gold annotation recomputes exactly that clip's scores, and nothing else."""

import json

import pytest

from annotation.services.expert_annotations import gold_annotation_publish
from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from metrics_bridge.models import MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import uses_gold_annotations
from metrics_bridge.services.runs.chunks import chunk_process
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import enqueue_chunks, execute_metric_run

pytestmark = pytest.mark.django_db

CLIPS = {
    "dog": (
        ["a dog barks while a man talks", "a man speaks and a dog barks"],
        ["a dog is barking loudly", "birds chirp in a quiet forest"],
        [{"label": "barking", "sources": ["dog"], "attributes": ["loud", "repeatedly"]}],
    ),
    "rain": (
        ["rain falls on a roof", "heavy rain pours down"],
        ["rain is falling heavily", "a car engine idles"],
        [{"label": "falling", "sources": ["rain"], "attributes": ["continuous", "heavy"]}],
    ),
}


@pytest.fixture
def scored_dataset(make_user):
    reviewer = make_user("gold-reviewer", "reviewer")
    dataset = Dataset.objects.create(name="gold-identity")
    system = CaptioningSystem.objects.create(name="sys-gold")
    clips = {}
    for name, (references, candidates, gold_events) in CLIPS.items():
        clip = Clip.objects.create(dataset=dataset, external_id=name)
        clips[name] = clip
        for position, text in enumerate(references):
            Caption.objects.create(clip=clip, text=text, role="reference", author_kind="human", position=position)
        for text in candidates:
            Caption.objects.create(clip=clip, text=text, role="candidate", author_kind="machine", system=system)
        gold_annotation_publish(clip=clip, reviewer=reviewer, campaign=None, events=gold_events, relations=[])
    run = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"]))
    assert run.status == "done"
    return dataset, clips, reviewer


def _values(clip):
    """{caption id: its newest X-ACE score}. Older scores stay under the gold they were computed with; rows come in
    id order, so the newest wins (unordered, PostgreSQL may return an older row last once the table reuses space)."""
    scores = MetricScore.objects.filter(metric="XACE", caption__clip=clip).order_by("pk")
    return dict(scores.values_list("caption_id", "value"))


def test_xace_declares_it_reads_gold_annotations_and_sbert_does_not():
    assert uses_gold_annotations(registry.scorer_for("XACE"))
    assert not uses_gold_annotations(registry.scorer_for("SBERT"))


def test_changed_gold_annotation_recomputes_exactly_that_clips_scores(scored_dataset):
    dataset, clips, reviewer = scored_dataset
    assert metric_run_create(dataset=dataset, metric_names=["XACE"]).chunks_total == 0
    before = {name: _values(clip) for name, clip in clips.items()}
    rows_before = MetricScore.objects.filter(metric="XACE").count()

    # The reviewer changes the dog clip's gold annotation: another event and other attributes.
    gold_annotation_publish(
        clip=clips["dog"],
        reviewer=reviewer,
        campaign=None,
        events=[
            {"label": "chirping", "sources": ["birds"], "attributes": ["high-pitched", "quiet"]},
            {"label": "rustling", "sources": ["leaves"], "attributes": ["soft"]},
        ],
        relations=[{"first_event": "chirping", "second_event": "rustling", "kind": "simultaneous"}],
    )
    run = metric_run_create(dataset=dataset, metric_names=["XACE"])

    planned = [request["caption_id"] for chunk in run.chunks.all() for request in chunk.requests]
    dog_candidates = set(Caption.objects.filter(clip=clips["dog"], role="candidate").values_list("pk", flat=True))
    assert sorted(planned) == sorted(dog_candidates)  # one request per candidate of that clip, nothing else
    execute_metric_run(run=run)
    after = {name: _values(clip) for name, clip in clips.items()}
    assert after["rain"] == before["rain"]
    birds, dog = (
        Caption.objects.get(clip=clips["dog"], text=text).pk
        for text in ("birds chirp in a quiet forest", "a dog is barking loudly")
    )
    # Against the new gold the bird caption gains and the dog caption loses.
    assert after["dog"][birds] > before["dog"][birds] + 0.1
    assert after["dog"][dog] < before["dog"][dog] - 0.1
    # The old scores stay beside the new ones (other reference-set identity).
    assert MetricScore.objects.filter(metric="XACE").count() == rows_before + len(dog_candidates)
    assert metric_run_create(dataset=dataset, metric_names=["XACE"]).chunks_total == 0


def test_relations_are_part_of_the_gold_identity(scored_dataset):
    dataset, clips, reviewer = scored_dataset
    events = [
        {"label": "falling", "sources": ["rain"], "attributes": ["continuous", "heavy"]},
        {"label": "rumbling", "sources": ["thunder"], "attributes": ["loud"]},
    ]
    gold_annotation_publish(clip=clips["rain"], reviewer=reviewer, campaign=None, events=events, relations=[])
    execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["XACE"]))
    relation = [{"first_event": "falling", "second_event": "rumbling", "kind": "before"}]
    gold_annotation_publish(clip=clips["rain"], reviewer=reviewer, campaign=None, events=events, relations=relation)

    run = metric_run_create(dataset=dataset, metric_names=["XACE"])

    rain_candidates = set(Caption.objects.filter(clip=clips["rain"], role="candidate").values_list("pk", flat=True))
    assert {request["caption_id"] for chunk in run.chunks.all() for request in chunk.requests} == rain_candidates


def test_gold_changed_between_planning_and_scoring_is_stored_under_the_gold_it_used(scored_dataset):
    dataset, clips, reviewer = scored_dataset
    events = [{"label": "idling", "sources": ["car engine"], "attributes": ["low"]}]
    gold_annotation_publish(clip=clips["rain"], reviewer=reviewer, campaign=None, events=events, relations=[])
    run = metric_run_create(dataset=dataset, metric_names=["XACE"])  # planned with this gold
    newer = [{"label": "pouring", "sources": ["rain"], "attributes": ["heavy"]}]
    gold_annotation_publish(clip=clips["rain"], reviewer=reviewer, campaign=None, events=newer, relations=[])

    for chunk in run.chunks.all():
        chunk_process(chunk_id=chunk.pk, worker="test")

    # The scores were computed with the newer gold and filed under it: the next plan finds them.
    assert metric_run_create(dataset=dataset, metric_names=["XACE"]).chunks_total == 0
    scores = MetricScore.objects.filter(metric="XACE", run=run).select_related("reference_set")
    assert scores.count() == 2
    assert all(score.details["graphs"]["reference"]["node"].keys() == {"pouring"} for score in scores)


def test_the_agreement_report_finds_gold_keyed_scores(shared_dir):
    # Given X-ACE scores stored under gold-annotation identities (here: "no gold" for every Clotho clip)
    from metrics_bridge.agreement import protocol
    from metrics_bridge.services.evaluation.agreement import agreement_report_build
    from ratings.services.pairwise_import import pairwise_judgements_import

    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:6]
    pairwise_judgements_import(data=items, dataset_name="clotho-xace", source_name="clotho_eval.json")
    # When the report reads them back
    report = agreement_report_build(
        dataset=Dataset.objects.get(name="clotho-xace"), metric_names=["XACE"], enqueue=enqueue_chunks
    )
    # Then it finds every one: the numbers equal the plain protocol run of the same scorer
    direct = protocol.fense_agreement(protocol.clips_from_fense_items(items), registry.scorer_for("XACE"))["XACE"]
    expected = {**{split: direct.splits[split].accuracy for split in direct.splits}, "total": direct.total.accuracy}
    assert report["metrics"]["XACE"] == expected
    assert expected["total"] > 0


def test_annotators_do_not_read_gold_annotations_through_score_explanations(scored_dataset, make_user):
    from rest_framework.test import APIClient

    dataset, _clips, reviewer = scored_dataset
    annotator = make_user("ann-scores", "annotator")
    seen = {}
    for user in (annotator, reviewer):
        client = APIClient()
        client.force_login(user)
        rows = client.get("/api/metric-scores/", {"metric": "XACE", "dataset": dataset.name}).json()["results"]
        seen[user.username] = json.dumps([row["details"] for row in rows])
    assert "barking" not in seen["ann-scores"] and "hidden" in seen["ann-scores"]
    assert "barking" in seen["gold-reviewer"]
