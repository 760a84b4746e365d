"""Embedding and annotation-based metrics through metric runs: DATE's author sets and dataset delta,
X-ACE's variants against gold annotation graphs (with relations), null factor scores, the report's counts."""

import json

import pytest
from django.core.management import call_command

from annotation.models import EventAttribute, EventSource, ExpertAnnotation, SoundEvent, TemporalRelation
from corpus.models import Caption, Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.models import MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.agreement import agreement_report_build
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import enqueue_chunks
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def clotho_items(shared_dir):
    return json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:8]


@pytest.fixture
def dataset(clotho_items) -> Dataset:
    pairwise_judgements_import(data=clotho_items, dataset_name="clotho-sample", source_name="clotho_eval.json")
    return Dataset.objects.get(name="clotho-sample")


def gold_annotation(clip, annotator, events, relations=()):
    annotation = ExpertAnnotation.objects.create(clip=clip, annotator=annotator, status=ExpertAnnotation.Status.GOLD)
    rows = {}
    for position, (label, sources, attributes) in enumerate(events):
        rows[label] = event = SoundEvent.objects.create(annotation=annotation, label=label, position=position)
        for index, text in enumerate(sources):
            EventSource.objects.create(event=event, text=text, position=index)
        for index, text in enumerate(attributes):
            EventAttribute.objects.create(event=event, text=text, position=index)
    for first, second, kind in relations:
        TemporalRelation.objects.create(
            annotation=annotation, first_event=rows[first], second_event=rows[second], kind=kind
        )
    return annotation


def test_date_runs_per_author_and_equals_the_plain_protocol(dataset, clotho_items):
    report = agreement_report_build(dataset=dataset, metric_names=["DATE"], enqueue=enqueue_chunks)
    clips = protocol.clips_from_fense_items(clotho_items)
    direct = protocol.fense_agreement(clips, registry.scorer_for("DATE"))["DATE"]
    assert report["metrics"]["DATE"] == {
        **{s: direct.splits[s].accuracy for s in direct.splits},
        "total": direct.total.accuracy,
    }
    stored = MetricScore.objects.filter(metric="DATE")
    authors = {row.details["author_set"] for row in stored}
    assert "human" in authors and len(authors) > 3  # the human captions and several systems, each its own set
    assert {row.details["clips"] for row in stored} == {8}

    # the same delta again: the report's batch is done (a full run adds the all-references batch of the
    # leaderboards); a new delta on the dataset is a new DATE version: all planned again
    assert metric_run_create(dataset=dataset, metric_names=["DATE"], protocol_only=True).chunks_total == 0
    assert metric_run_create(dataset=dataset, metric_names=["DATE"]).chunks_total == 1
    dataset.date_delta = 0.3
    dataset.save()
    rerun = metric_run_create(dataset=dataset, metric_names=["DATE"])
    assert rerun.chunks_total == 2  # the pairwise batch and the all-references batch, each whole


def test_xace_variants_against_gold_graphs_and_the_count_in_the_report(dataset, make_user, capsys):
    annotator = make_user("expert", "annotator")
    clips = list(dataset.clips.order_by("pk"))
    annotated = clips[:3]
    for clip in annotated[:2]:
        gold_annotation(
            clip,
            annotator,
            [("chirping", ["birds"], ["high pitched"]), ("talking", ["people"], [])],
            [("chirping", "talking", TemporalRelation.Kind.SIMULTANEOUS)],
        )
    gold_annotation(annotated[2], annotator, [("rumbling", [], [])])  # one event: no source, attribute or relation
    # a candidate without attributes, scored in the all-references batch against that annotation: A not applicable
    Caption.objects.create(clip=annotated[2], text="thunder rumbles", role="candidate", author_kind="human")
    call_command(
        "agreement_report", "--dataset", "clotho-sample", "--format", "json", "--metrics", "XACE,XACE_CAPTIONS,CIDEr_D"
    )
    report = json.loads(capsys.readouterr().out)
    counts = report["scored_against_annotation_graphs"]
    pair_captions = set()
    for clip in annotated:
        for pair in clip.pairs.all():
            pair_captions |= {pair.caption_a_id, pair.caption_b_id}
    assert counts["XACE"] == counts["XACE_A"] == len(pair_captions) > 0
    assert counts["XACE_CAPTIONS"] == counts["CIDEr_D"] == 0
    assert set(report["metrics"]) >= {"XACE", "XACE_E", "XACE_CAPTIONS", "XACE_CAPTIONS_R", "CIDEr_D"}

    on_gold = MetricScore.objects.filter(
        metric="XACE", caption__clip__in=annotated, details__reference_from="expert_annotation"
    )
    assert on_gold.exists() and on_gold.first().details["relations_from"] == "expert_annotation"
    assert not MetricScore.objects.filter(metric="XACE_CAPTIONS", details__reference_from="expert_annotation").exists()
    # factors nobody mentions are stored as NULL, never 1.0, and the table still has numbers for them (the
    # candidate outside the pairs is in the all-references batch, which the report leaves to a full run)
    call_command("compute_metrics", "--dataset", "clotho-sample", "--metrics", "XACE,XACE_CAPTIONS", "--wait")
    capsys.readouterr()
    factors = ["XACE_S", "XACE_A", "XACE_R", "XACE_CAPTIONS_S", "XACE_CAPTIONS_A", "XACE_CAPTIONS_R"]
    nulls = MetricScore.objects.filter(metric__in=factors, value__isnull=True)
    assert nulls.exists() and all(row.details["applicable"] is False for row in nulls)
    assert not MetricScore.objects.filter(metric__in=factors, value=1.0, details__applicable=False).exists()
    assert all(report["metrics"][name]["total"] is not None for name in factors)

    call_command("agreement_report", "--dataset", "clotho-sample", "--format", "table", "--metrics", "XACE,CIDEr_D")
    table = capsys.readouterr().out
    assert "on graphs" in table.splitlines()[1]
    assert table.splitlines()[3].split()[0] == "CIDEr_D" and table.splitlines()[3].split()[-1] == "0"


def test_reference_captions_of_the_clip_reach_date_and_authors_reach_requests(dataset):
    from metrics_bridge.services.runs.contexts import scoring_context_for
    from metrics_bridge.services.runs.plans import scoring_requests_for

    run = metric_run_create(dataset=dataset, metric_names=["DATE"])
    chunk = run.chunks.first()
    requests, _ = scoring_requests_for(chunk_requests=chunk.requests)
    machine = Caption.objects.filter(clip__dataset=dataset, author_kind="machine").select_related("system").first()
    assert any(r.author == machine.system.name for r in requests) and any(r.author == "human" for r in requests)
    context = scoring_context_for(clip_ids={int(r.clip_key) for r in requests}, dataset=dataset)
    clip = dataset.clips.order_by("pk").first()
    assert context.clip_references[str(clip.pk)] == tuple(
        clip.captions.filter(role="reference").order_by("position").values_list("text", flat=True)
    )
    assert context.dataset.date_delta == pytest.approx(0.1703) and context.dataset.domain == "sound"
    # DATE compares with every clip of the dataset, also one without judged pairs
    lonely = dataset.clips.create(external_id="no-pairs.wav")
    lonely.captions.create(text="a bell rings", role="reference", author_kind="human", position=0)
    context = scoring_context_for(clip_ids={int(requests[0].clip_key)}, dataset=dataset)
    assert context.clip_references[str(lonely.pk)] == ("a bell rings",) and len(context.clip_references) == 9
