"""Agreement of automatic metrics with people, assembled from stored scores."""

from corpus.models import Dataset
from metrics_bridge.agreement import brace, calibration, protocol, protocols
from metrics_bridge.agreement.intervals import agreement_intervals
from metrics_bridge.models import MetricRun, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import ScoringContext, scorer_version
from metrics_bridge.selectors.evaluation import dataset_scored_metric_names
from metrics_bridge.selectors.scoring_inputs import dataset_clip_rows
from metrics_bridge.services.evaluation.calibration import (
    calibrated_cross_validation,
    calibrated_transfer,
    model_versions_tag,
)
from metrics_bridge.services.evaluation.dashboard_cache import cached_payload, dataset_fingerprint
from metrics_bridge.services.runs.contexts import version_context_for
from metrics_bridge.services.runs.plans import (
    fense_label,
    gold_fingerprints_by_caption,
    protocol_clips,
    scorer_reference_context,
)
from metrics_bridge.services.runs.reference_sets import reference_set_key
from metrics_bridge.services.runs.runs import (
    metric_run_create,
    metric_run_execute,
    metrics_missing_check,
    metrics_not_computed,
)
from ratings.models import Campaign

SPLITS = ("HC", "HI", "HM", "MM")
CALIBRATED = calibration.METRIC_NAME


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
    *,
    clips: list[protocol.ProtocolClip],
    scorer,
    context: ScoringContext,
    gold_fingerprints: dict | None = None,
    protocol_name: str = protocols.FENSE,
) -> tuple[dict[str, protocol.AgreementReport], int]:
    """Per metric name of the scorer: the pairwise accuracy under `protocol_name` (FENSE's or BRACE's) from
    stored scores (missing scores count wrong); and how many distinct captions of the pairs were scored
    against a gold annotation graph.

    `gold_fingerprints` (caption id -> its clip's gold fingerprint) is needed for scorers that read gold annotations.
    """
    plan = protocols.scorer_plan(clips, protocol_name=protocol_name, scorer=scorer)
    stored, origins = _stored_scores(scorer=scorer, plan=plan, context=context, gold_fingerprints=gold_fingerprints)
    reports = {
        name: protocols.agreement_report(
            plan,
            _batch_scores(scorer, plan, stored[name], gold_fingerprints),
            protocol_name=protocol_name,
            metric=name,
        )
        for name in scorer.metric_names
    }
    keys = [
        _request_key(scorer, batch, request, gold_fingerprints) for batch in plan.batches for request in batch.requests
    ]
    scored_against_annotations = {key[0] for key in keys if origins.get(key) == "expert_annotation"}
    return reports, len(scored_against_annotations)


def _pair_counts(clips: list[protocol.ProtocolClip], protocol_name: str = protocols.FENSE) -> dict[str, int]:
    """Pairs counted per split and in total (BRACE: also the unscorable pairs and the ties left out)."""
    if protocol_name == protocols.BRACE:
        return brace.pair_counts(brace.scoring_plan(clips))
    counts = {split: 0 for split in SPLITS}
    for clip in clips:
        for pair in clip.pairs:
            if pair.truth != 0:
                counts[protocol.split_of(pair.split)] += 1
    counts["total"] = sum(counts.values())
    return counts


def _metric_reports(
    *, dataset: Dataset, clips: list[protocol.ProtocolClip], metric_names: list[str]
) -> tuple[dict[str, protocol.AgreementReport], dict[str, int]]:
    """Agreement report of every named metric (each scorer planned and loaded once), in registry order, and per
    metric how many distinct captions of the pairs were scored against a gold annotation graph."""
    context = version_context_for(dataset=dataset)
    reports: dict[str, protocol.AgreementReport] = {}
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
        scorer_reports, scored_against_annotations = metric_agreement(
            clips=clips,
            scorer=scorer,
            context=context,
            gold_fingerprints=gold_fingerprints,
            protocol_name=dataset.agreement_protocol,
        )
        reports.update(scorer_reports)
        graph_counts.update({metric: scored_against_annotations for metric in scorer_reports})
    ordered = [name for name in registry.all_metric_names() if name in reports]
    return {name: reports[name] for name in ordered}, {name: graph_counts[name] for name in ordered}


def _dataset_clips(dataset: Dataset, campaign: Campaign | None = None) -> list[protocol.ProtocolClip]:
    """The protocol's clips from the votes every figure counts (of one campaign, or the whole dataset)."""
    return protocol_clips(dataset_clip_rows(dataset=dataset, included_only=True, campaign=campaign))


def _row(report: protocol.AgreementReport) -> dict:
    row = {split: report.splits[split].accuracy for split in protocol.ALL_SPLITS if split in report.splits}
    row["total"] = report.total.accuracy
    if report.f1 is not None:
        row["f1"] = report.f1
    return row


def report_columns(report: dict) -> list[str]:
    """The columns of an agreement table: FENSE's four splits and total; BRACE's splits present, total and F1."""
    if report.get("protocol") != protocols.BRACE:
        return [*SPLITS, "total"]
    return [*(split for split in protocol.ALL_SPLITS if split in report["pairs"]), "total", "f1"]


def agreement_table(
    *,
    dataset: Dataset,
    metric_names: list[str],
    unavailable: dict[str, str] | None = None,
    calibrate_on: list[Dataset] | None = None,
    campaign: Campaign | None = None,
    intervals: bool = False,
    collect: dict | None = None,
) -> dict:
    """The agreement of the named metrics under the dataset's protocol (FENSE's HC/HI/HM/MM, or BRACE's
    splits with F1), from stored scores only (missing scores count wrong).

    `intervals`: add "intervals", 95 % bootstrap intervals over clips of every figure and whether each column's
    best metric is separable from the next (metrics_bridge/agreement/intervals.py).

    `campaign`: only that campaign's pairs and votes (e.g. a crowd study's own report); default the dataset's.

    CALIBRATED among the names adds the learned metric's held-out row, with the other named
    metrics as its features: 5-fold cross-validation grouped by clip, or, with `calibrate_on`
    (one or more other datasets, of any layout), a model fitted on those datasets' pairs (transfer).
    Its description goes under "calibration".

    `collect` (a dict) receives the "clips", the per-metric "reports" (CALIBRATED's among them) and "calibration"
    ((report, description) or None), for a caller that compares figures on the same pairs (services/transfer.py).
    """
    clips = _dataset_clips(dataset, campaign)
    wants_calibrated = CALIBRATED in metric_names
    reports, graph_counts = _metric_reports(
        dataset=dataset, clips=clips, metric_names=[name for name in metric_names if name != CALIBRATED]
    )
    metrics = {name: _row(report) for name, report in reports.items()}
    report = {
        "dataset": dataset.name,
        "protocol": dataset.agreement_protocol,
        "pairs": _pair_counts(clips, dataset.agreement_protocol),
        "metrics": metrics,
        # per metric: distinct captions of the judged pairs scored against a gold annotation graph
        "scored_against_annotation_graphs": graph_counts,
    }
    unavailable = dict(unavailable or {})
    if wants_calibrated:
        try:
            calibrated, description = calibrated_row(
                dataset=dataset, reports=reports, calibrate_on=calibrate_on, clips=clips
            )
        except ValueError as error:
            unavailable[CALIBRATED] = str(error)
        else:
            metrics[CALIBRATED] = _row(calibrated)
            reports[CALIBRATED] = calibrated
            report["calibration"] = description
    if unavailable:
        report["unavailable"] = unavailable
    if collect is not None:
        collect.update(
            clips=clips,
            reports=reports,
            calibration=(reports[CALIBRATED], report["calibration"]) if CALIBRATED in reports else None,
        )
    if intervals:
        report["intervals"] = agreement_intervals(
            {name: row.decisions for name, row in reports.items()}, columns=report_columns(report), values=metrics
        ).as_dict()
    return report


def calibrated_row(
    *,
    dataset: Dataset,
    reports: dict[str, protocol.AgreementReport],
    calibrate_on: list[Dataset] | None = None,
    clips: list[protocol.ProtocolClip] | None = None,
) -> tuple[protocol.AgreementReport, dict]:
    """CALIBRATED on `dataset`, held out: cross-validated on its own clips, or fitted on `calibrate_on`'s pairs.
    `clips` (the dataset's protocol clips) lets it add the caption features (calibration.CAPTION_FEATURES)."""
    if not calibrate_on:
        return calibrated_cross_validation(dataset=dataset, reports=reports, clips=clips)
    training = []
    for training_dataset in calibrate_on:
        training_clips = _dataset_clips(training_dataset)
        training_reports, _ = _metric_reports(
            dataset=training_dataset, clips=training_clips, metric_names=list(reports)
        )
        training.append((training_dataset, training_reports, training_clips))
    return calibrated_transfer(dataset=dataset, reports=reports, training=training, clips=clips)


def _calibrate_on_list(calibrate_on) -> list[Dataset]:
    if calibrate_on is None:
        return []
    return list(calibrate_on) if isinstance(calibrate_on, list | tuple) else [calibrate_on]


def agreement_report_build(
    *,
    dataset: Dataset,
    enqueue,
    metric_names: list[str] | None = None,
    on_progress=None,
    watchdog=None,
    calibrate_on: list[Dataset] | Dataset | None = None,
    slow_resources_loading: bool = False,
    collect: dict | None = None,
) -> dict:
    """The agreement table; scores that are missing are computed first (by the workers `enqueue` sends to;
    on the `calibrate_on` datasets too for CALIBRATED). `slow_resources_loading`: see metric_run_create.
    `collect`: see agreement_table.

    Without `metric_names`: every available metric plus CALIBRATED.

    Raises MetricsMissingError naming every metric that was asked for and is not in the table: a metric named in
    `metric_names` that cannot run here (SPICE without CoreNLP) or whose scores were not computed (a chunk
    failed, the run ended early). Without `metric_names`, the metrics that cannot run here and a CALIBRATED
    that cannot be fitted are listed under "unavailable" instead: the default asks only for what can run.
    """
    training_datasets = _calibrate_on_list(calibrate_on)
    wanted = None if metric_names is None else [name for name in metric_names if name != CALIBRATED]
    wants_calibrated = metric_names is None or CALIBRATED in metric_names
    if training_datasets and not wants_calibrated:
        raise ValueError("--calibrate-on needs CALIBRATED among the metrics")
    run = metric_run_create(
        dataset=dataset, metric_names=wanted, slow_resources_loading=slow_resources_loading, protocol_only=True
    )
    run = metric_run_execute(run=run, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog)
    unavailable = {**run.unavailable, **metrics_not_computed(run)}
    computed = [name for name in run.metrics if name not in unavailable]
    for training_dataset in training_datasets:
        training_run = metric_run_create(dataset=training_dataset, metric_names=computed, protocol_only=True)
        training_run = metric_run_execute(run=training_run, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog)
        if training_run.status != MetricRun.Status.DONE:
            raise ValueError(
                f"computing scores on {training_dataset.name} for CALIBRATED failed in metric run {training_run.pk}: "
                f"{training_run.error}"
            )
    if wants_calibrated:
        computed.append(CALIBRATED)
    report = agreement_table(
        dataset=dataset,
        metric_names=computed,
        unavailable=unavailable,
        calibrate_on=training_datasets or None,
        collect=collect,
    )
    requested = list(metric_names) if metric_names is not None else list(run.metrics)
    metrics_missing_check(requested=requested, delivered=report["metrics"], reasons=report.get("unavailable", {}))
    return report


def calibration_key(*, dataset: Dataset) -> str:
    """Where the dataset's CALIBRATED summary is stored (dashboard_cache.py); a new version of the in-study model
    stores its fit elsewhere, so the page never shows the former model's as current."""
    return f"calibration:{dataset.pk}:{model_versions_tag('in-study')}"


def calibration_summary(*, dataset: Dataset) -> dict | None:
    """CALIBRATED on the dataset from the scores stored at the current versions: its held-out row (with 95 %
    bootstrap intervals) and model.

    None when no metric has stored scores; {"unavailable": reason} when the model cannot be fitted.
    Fitting takes minutes on Clotho-Eval, so a worker calls this
    (metrics_bridge.tasks.dashboards.compute_dashboard_part) and pages read the stored result
    (dashboard_cache.cached_state): stored in the database per state of the data, so every process reads the same
    fit, redone only when the scores, votes or rater exclusions change.
    """

    def build() -> dict:
        context = version_context_for(dataset=dataset)
        versions = {name: scorer_version(registry.scorer_for(name), context) for name in registry.all_metric_names()}
        scored = dataset_scored_metric_names(dataset=dataset, versions=versions)
        return {"summary": _calibration_summary(dataset=dataset, scored=scored) if scored else None}

    fingerprint = dataset_fingerprint(dataset=dataset)
    return cached_payload(key=calibration_key(dataset=dataset), fingerprint=fingerprint, build=build)["summary"]


def _calibration_summary(*, dataset: Dataset, scored: list[str]) -> dict:
    table = agreement_table(dataset=dataset, metric_names=[*scored, CALIBRATED], intervals=True)
    if CALIBRATED not in table["metrics"]:
        return {"unavailable": table.get("unavailable", {}).get(CALIBRATED, "not enough data")}
    single = {name: row for name, row in table["metrics"].items() if name != CALIBRATED}
    best_single = max((row["total"] or 0 for row in single.values()), default=None)
    best_single_name = max(single, key=lambda name: single[name]["total"] or 0, default=None)
    # total: CALIBRATED against the best single metric, on the same clip resamples (paired)
    total = table["intervals"]["best"].get("total", {})
    if total.get("best") == CALIBRATED:
        verdict = "separable" if total["separable"] else "not separable"
    else:
        verdict = "lower" if (table["metrics"][CALIBRATED]["total"] or 0) < (best_single or 0) else "not separable"
    row, row_intervals = table["metrics"][CALIBRATED], table["intervals"]["intervals"][CALIBRATED]
    return {
        "row": row,
        "cells": [
            {"column": column, "value": value, "interval": row_intervals.get(column, [None, None])}
            for column, value in row.items()
        ],
        "best_single_total": best_single,
        "best_single_name": best_single_name,
        "versus_best_single": verdict,
        "versus_best_single_difference": total.get("difference") if total.get("best") == CALIBRATED else None,
        "pairs": table["pairs"],
        "calibration": table["calibration"],
        "coefficients": _coefficient_rows(table["calibration"]),
    }


def _coefficient_rows(description: dict) -> dict:
    """The all-pairs model's coefficients as a table: one row per feature (largest total magnitude first), one
    column per model block any model used (calibration.MODEL_BLOCKS), each value with its range over the CV folds."""
    model = description["model_on_all_pairs"]
    used = {*model["blocks"], *(block for blocks in description.get("fold_blocks", []) for block in blocks)}
    blocks = [block for block in calibration.MODEL_BLOCKS if block in used]
    folds = description.get("fold_coefficients", {})
    rows = []
    for name, by_block in model["coefficients_by_block"].items():
        cells = []
        for block in blocks:
            fold_range = folds.get(calibration.column_name(name, block), {})
            cells.append(
                {"value": by_block[block], "fold_min": fold_range.get("min"), "fold_max": fold_range.get("max")}
            )
        rows.append({"name": name, "cells": cells, "magnitude": sum(abs(cell["value"]) for cell in cells)})
    rows.sort(key=lambda row: -row["magnitude"])
    largest = rows[0]["magnitude"] if rows else 0.0
    for row in rows:
        row["bar_percent"] = round(100 * row["magnitude"] / largest, 1) if largest else 0.0
    headers = [{"name": block, "note": _block_note(block, model, description.get("fold_blocks"))} for block in blocks]
    return {"blocks": headers, "rows": rows}


def _block_note(block: str, model: dict, fold_blocks: list[list[str]] | None) -> str:
    """Where a block was not used by every model shown (the inner search leaves the votes out where they do not
    pay), e.g. "in 3 of 5 fold models; not in the model on all pairs"; empty when every model used it."""
    parts = []
    if fold_blocks:
        using = sum(block in blocks for blocks in fold_blocks)
        if using < len(fold_blocks):
            parts.append(f"in {using} of {len(fold_blocks)} fold models")
    if block not in model["blocks"]:
        parts.append("not in the model on all pairs")
    return "; ".join(parts)
