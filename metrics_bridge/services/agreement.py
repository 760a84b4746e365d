"""Agreement of automatic metrics with people, assembled from stored scores."""
from annotation.models import Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import ScoringContext, scorer_version
from metrics_bridge.selectors import dataset_clip_rows, excluded_rater_ids_for
from metrics_bridge.services.contexts import version_context_for
from metrics_bridge.services.plans import (
    fense_label,
    gold_fingerprints_by_caption,
    protocol_clips,
    scorer_reference_context,
)
from metrics_bridge.services.reference_sets import reference_set_key
from metrics_bridge.services.runs import metric_run_create, metric_run_execute

SPLITS = ("HC", "HI", "HM", "MM")


def _request_key(scorer, batch: protocol.PlanBatch, request, gold_fingerprints) -> tuple[int, str]:
    context = scorer_reference_context(
        scorer=scorer,
        batch_label=fense_label(batch.label),
        caption_id=request.candidate_id,
        gold_fingerprints=gold_fingerprints,
    )
    return request.candidate_id, reference_set_key(texts=tuple(request.references), context=context)


def _stored_scores(
    *, scorer, plan: protocol.ScoringPlan, context: ScoringContext, gold_fingerprints
) -> tuple[dict[str, dict], dict]:
    """Per metric name {(caption id, reference-set key): value}, and for the scorer's first name the
    reference each stored score was computed against ({(caption id, key): "expert_annotation" | ...})."""
    metric_names, version = scorer.metric_names, scorer_version(scorer, context)
    keys = {
        _request_key(scorer, batch, request, gold_fingerprints)[1]
        for batch in plan.batches
        for request in batch.requests
    }
    rows = MetricScore.objects.filter(metric__in=metric_names, version=version, reference_set__key__in=keys)
    stored: dict[str, dict] = {name: {} for name in metric_names}
    columns = ("metric", "caption_id", "reference_set__key", "value")
    for metric, caption_id, key, value in rows.values_list(*columns).iterator():
        stored[metric][(caption_id, key)] = value
    origins = {}
    if getattr(scorer, "uses_gold_annotations", False):
        first_metric = rows.filter(metric=metric_names[0])
        origin_rows = first_metric.values_list("caption_id", "reference_set__key", "details__reference_from")
        origins = {(caption_id, key): origin for caption_id, key, origin in origin_rows.iterator()}
    return stored, origins


_NOT_COMPUTED = float("nan")  # a missing score counts as a wrong decision; a stored None is "not applicable"


def _batch_scores(scorer, plan: protocol.ScoringPlan, stored: dict, gold_fingerprints) -> list[list[float | None]]:
    return [
        [
            stored.get(_request_key(scorer, batch, request, gold_fingerprints), _NOT_COMPUTED)
            for request in batch.requests
        ]
        for batch in plan.batches
    ]


def metric_agreement(
    *, clips: list[protocol.ProtocolClip], scorer, context: ScoringContext, gold_fingerprints: dict | None = None
) -> tuple[dict[str, protocol.AgreementReport], int]:
    """Per metric name of the scorer: the FENSE pairwise accuracy from stored scores (missing scores count
    wrong); and how many distinct captions of the pairs were scored against a gold annotation graph.

    `gold_fingerprints` (caption id -> its clip's gold fingerprint) is needed for scorers that read gold annotations.
    """
    plan = protocol.scoring_plan(clips, protocol_kind=scorer.protocol_kind, batching=protocol.scorer_batching(scorer))
    stored, origins = _stored_scores(scorer=scorer, plan=plan, context=context, gold_fingerprints=gold_fingerprints)
    reports = {
        name: protocol.agreement_report(plan, _batch_scores(scorer, plan, stored[name], gold_fingerprints), metric=name)
        for name in scorer.metric_names
    }
    keys = [
        _request_key(scorer, batch, request, gold_fingerprints) for batch in plan.batches for request in batch.requests
    ]
    scored_against_annotations = {key[0] for key in keys if origins.get(key) == "expert_annotation"}
    return reports, len(scored_against_annotations)


def _pair_counts(clips: list[protocol.ProtocolClip]) -> dict[str, int]:
    counts = {split: 0 for split in SPLITS}
    for clip in clips:
        for pair in clip.pairs:
            if pair.truth != 0:
                counts[protocol.split_of(pair.split)] += 1
    counts["total"] = sum(counts.values())
    return counts


def agreement_table(*, dataset: Dataset, metric_names: list[str], unavailable: dict[str, str] | None = None) -> dict:
    """The HC/HI/HM/MM agreement of the named metrics, from stored scores only (missing scores count wrong)."""
    excluded = excluded_rater_ids_for(dataset=dataset)
    clips = protocol_clips(dataset_clip_rows(dataset=dataset, excluded_rater_ids=excluded))
    context = version_context_for(dataset=dataset)
    metrics: dict[str, dict] = {}
    graph_counts: dict[str, int] = {}
    done_scorers = []
    gold_fingerprints = None
    for name in metric_names:
        scorer = registry.scorer_for(name)
        if scorer in done_scorers:
            continue
        done_scorers.append(scorer)
        if getattr(scorer, "uses_gold_annotations", False) and gold_fingerprints is None:
            gold_fingerprints = gold_fingerprints_by_caption(dataset=dataset)
        reports, scored_against_annotations = metric_agreement(
            clips=clips, scorer=scorer, context=context, gold_fingerprints=gold_fingerprints
        )
        for metric, report in reports.items():
            row = {split: report.splits[split].accuracy for split in SPLITS if split in report.splits}
            row["total"] = report.total.accuracy
            metrics[metric] = row
            graph_counts[metric] = scored_against_annotations
    ordered = {name: metrics[name] for name in registry.all_metric_names() if name in metrics}
    report = {
        "dataset": dataset.name,
        "pairs": _pair_counts(clips),
        "metrics": ordered,
        # per metric: distinct captions of the judged pairs scored against a gold annotation graph
        "scored_against_annotation_graphs": {name: graph_counts[name] for name in ordered},
    }
    if unavailable:
        report["unavailable"] = unavailable
    return report


def agreement_report_build(
    *, dataset: Dataset, enqueue, metric_names: list[str] | None = None, on_progress=None, watchdog=None
) -> dict:
    """The agreement table; scores that are missing are computed first (by the workers `enqueue` sends to)."""
    run = metric_run_create(dataset=dataset, metric_names=metric_names)
    run = metric_run_execute(run=run, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog)
    unavailable = dict(run.unavailable)
    if run.status != MetricRun.Status.DONE:
        for name in run.metrics:
            unavailable[name] = f"computation failed in metric run {run.pk}: {run.error}"
    computed = [name for name in run.metrics if name not in unavailable]
    return agreement_table(dataset=dataset, metric_names=computed, unavailable=unavailable)
