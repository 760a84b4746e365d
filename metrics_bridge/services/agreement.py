"""Agreement of automatic metrics with people, assembled from stored scores."""
from annotation.models import Dataset
from metrics_bridge.agreement import protocol
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import ScoringContext
from metrics_bridge.selectors import dataset_clip_rows, excluded_rater_ids_for
from metrics_bridge.services.contexts import llm_endpoint_settings
from metrics_bridge.services.plans import (
    fense_label,
    gold_fingerprints_by_caption,
    protocol_clips,
    scorer_reference_context,
)
from metrics_bridge.services.reference_sets import reference_set_key
from metrics_bridge.services.runs import metric_run_create, metric_run_execute, scorer_version

SPLITS = ("HC", "HI", "HM", "MM")


def _request_key(scorer, batch: protocol.PlanBatch, request, gold_fingerprints) -> tuple[int, str]:
    context = scorer_reference_context(
        scorer=scorer,
        batch_label=fense_label(batch.label),
        caption_id=request.candidate_id,
        gold_fingerprints=gold_fingerprints,
    )
    return request.candidate_id, reference_set_key(texts=tuple(request.references), context=context)


def _stored_scores(*, scorer, plan: protocol.ScoringPlan, gold_fingerprints) -> dict[str, dict]:
    # Only the LLM endpoint can change a version; no need to load the tag library for it.
    metric_names, version = scorer.metric_names, scorer_version(scorer, ScoringContext(llm=llm_endpoint_settings()))
    keys = {
        _request_key(scorer, batch, request, gold_fingerprints)[1]
        for batch in plan.batches
        for request in batch.requests
    }
    rows = MetricScore.objects.filter(metric__in=metric_names, version=version, reference_set__key__in=keys)
    stored: dict[str, dict] = {name: {} for name in metric_names}
    for metric, caption_id, key, value in rows.values_list("metric", "caption_id", "reference_set__key", "value").iterator():
        stored[metric][(caption_id, key)] = value
    return stored


def _batch_scores(scorer, plan: protocol.ScoringPlan, stored: dict, gold_fingerprints) -> list[list[float | None]]:
    return [
        [stored.get(_request_key(scorer, batch, request, gold_fingerprints)) for request in batch.requests]
        for batch in plan.batches
    ]


def metric_agreement(
    *, clips: list[protocol.ProtocolClip], scorer, gold_fingerprints: dict[int, str] | None = None
) -> dict[str, protocol.AgreementReport]:
    """Per metric name of the scorer: the FENSE pairwise accuracy from stored scores (missing scores count wrong).

    `gold_fingerprints` (caption id -> its clip's gold fingerprint) is needed for scorers that read gold annotations.
    """
    plan = protocol.scoring_plan(clips, protocol_kind=scorer.protocol_kind)
    stored = _stored_scores(scorer=scorer, plan=plan, gold_fingerprints=gold_fingerprints)
    return {
        name: protocol.agreement_report(plan, _batch_scores(scorer, plan, stored[name], gold_fingerprints), metric=name)
        for name in scorer.metric_names
    }


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
    clips = protocol_clips(dataset_clip_rows(dataset=dataset, excluded_rater_ids=excluded_rater_ids_for(dataset=dataset)))
    metrics: dict[str, dict] = {}
    done_scorers = []
    gold_fingerprints = None
    for name in metric_names:
        scorer = registry.scorer_for(name)
        if scorer in done_scorers:
            continue
        done_scorers.append(scorer)
        if getattr(scorer, "uses_gold_annotations", False) and gold_fingerprints is None:
            gold_fingerprints = gold_fingerprints_by_caption(dataset=dataset)
        for metric, report in metric_agreement(clips=clips, scorer=scorer, gold_fingerprints=gold_fingerprints).items():
            row = {split: report.splits[split].accuracy for split in SPLITS if split in report.splits}
            row["total"] = report.total.accuracy
            metrics[metric] = row
    ordered = {name: metrics[name] for name in registry.all_metric_names() if name in metrics}
    report = {"dataset": dataset.name, "pairs": _pair_counts(clips), "metrics": ordered}
    if unavailable:
        report["unavailable"] = unavailable
    return report


def agreement_report_build(*, dataset: Dataset, metric_names: list[str] | None = None, on_progress=None) -> dict:
    """The agreement table; scores that are missing are computed first."""
    run = metric_run_create(dataset=dataset, metric_names=metric_names)
    run = metric_run_execute(run=run, on_progress=on_progress)
    unavailable = dict(run.unavailable)
    if run.status != MetricRun.Status.DONE:
        for name in run.metrics:
            unavailable[name] = f"computation failed in metric run {run.pk}: {run.error}"
    computed = [name for name in run.metrics if name not in unavailable]
    return agreement_table(dataset=dataset, metric_names=computed, unavailable=unavailable)
