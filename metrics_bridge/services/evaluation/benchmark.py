"""The benchmark table: every metric on every human-judgement dataset, under each dataset's protocol,
with the published records beside ours (protocols.md §1 and §6).

For each dataset with judged pairs (FENSE-layout files, BRACE-layout files, the platform's own studies):
the agreement of every metric whose pair-protocol scores are all stored, each with its pair count and a 95 %
bootstrap interval over clips; CALIBRATED held out by 5-fold cross-validation grouped by clip; and CALIBRATED
"trained elsewhere": fitted on every other dataset of the table that shares no clip audio and no judged pair
with this one (by content; the others are named as left out), evaluated on this one. Published records stand
beside a dataset only when it holds the benchmark's judged pairs exactly (by content, not by name). Nothing
here computes scores: `metric_benchmark` runs the missing ones first and stores the table the page shows.
"""

import hashlib
import json
import math

from corpus.models import Dataset
from metrics_bridge.agreement import calibration, fingerprints, intervals, records
from metrics_bridge.scoring import registry
from metrics_bridge.selectors.evaluation import dataset_scored_metric_names
from metrics_bridge.services.evaluation.agreement import (
    CALIBRATED,
    _dataset_clips,
    _metric_reports,
    _pair_counts,
    _row,
    calibrated_cross_validation,
    report_columns,
)
from metrics_bridge.services.evaluation.calibration import (
    dataset_content,
    detector_check,
    disjoint_sources,
    model_versions,
)
from metrics_bridge.services.evaluation.dashboard_cache import cached_payload, dataset_fingerprints
from metrics_bridge.services.evaluation.transfer import TRAINED_ELSEWHERE, fit_elsewhere, headline
from metrics_bridge.services.runs.contexts import metric_resources
from metrics_bridge.services.runs.system_scores import current_versions
from ratings.models import CaptionPair

#: below this many counted pairs a figure moves by several points from one pair to the next: the table says so
SMALL_SET_PAIRS = 200
BENCHMARK_KEY = "benchmark:all"


def benchmark_datasets() -> list[Dataset]:
    """Every dataset with judged pairs, by name."""
    ids = CaptionPair.objects.values_list("clip__dataset_id", flat=True).distinct()
    return list(Dataset.objects.filter(pk__in=ids).order_by("name"))


def _scored_metrics(dataset: Dataset) -> list[str]:
    """Metrics with stored scores for the dataset at the current version (complete or not)."""
    versions = current_versions(registry.all_metric_names(), dataset=dataset)
    return dataset_scored_metric_names(dataset=dataset, versions=versions)


def _is_complete(report) -> bool:
    """Every pair-protocol score is stored: a missing one reads as NaN (a stored None is "not applicable")."""
    return not any(
        score is not None and math.isnan(score)
        for decision in report.decisions
        for score in (decision.score_a, decision.score_b)
    )


def benchmark_table(*, datasets: list[Dataset] | None = None, metric_names: list[str] | None = None) -> dict:
    """{"datasets": [...], "metrics": [...], "cells": {metric: {dataset: {...}}}, "records_only": [...]}.

    A cell holds "ours" (the metric's row: splits, total, F1 for BRACE, the counted "pairs" and the total's 95 %
    "interval" over clips) and "published" (the records of the benchmark whose pairs the dataset holds).
    `metric_names` limits the metrics (default: every complete one).
    """
    datasets = benchmark_datasets() if datasets is None else datasets
    per_dataset = {}
    for dataset in datasets:
        names = _scored_metrics(dataset)
        if metric_names is not None:
            names = [name for name in names if name in metric_names]
        clips = _dataset_clips(dataset)
        reports, _ = _metric_reports(dataset=dataset, clips=clips, metric_names=names)
        # a metric whose pair-protocol scores are partly stored (e.g. leaderboard scores only) has no figure yet
        reports = {name: report for name, report in reports.items() if _is_complete(report)}
        per_dataset[dataset.pk] = (dataset, clips, reports)

    table_datasets, cells, unavailable = [], {}, {}
    resources = metric_resources()
    for dataset, clips, reports in per_dataset.values():
        content = dataset_content(dataset=dataset)
        benchmark = records.benchmark_of(content.pairs_digest)
        named_like = records.benchmark_named(dataset.name)
        pairs = _pair_counts(clips, dataset.agreement_protocol)
        detector = detector_check(content=content, resources=resources)
        entry = {
            "id": dataset.pk,
            "name": dataset.name,
            "protocol": dataset.agreement_protocol,
            "layout": dataset.judgement_layout,
            "benchmark": benchmark,
            "benchmark_title": records.published_records()[benchmark]["title"] if benchmark else None,
            # a name that suggests a benchmark whose pairs the dataset does not hold (a sample, a half)
            "not_the_benchmark_named": (
                records.published_records()[named_like]["title"] if named_like and named_like != benchmark else None
            ),
            "pairs": pairs,
            "small": pairs.get("total", 0) < SMALL_SET_PAIRS,
            "detector_note": detector.note() if detector.leaks else "",
        }
        entry["columns"] = report_columns({"protocol": dataset.agreement_protocol, "pairs": pairs})
        table_datasets.append(entry)
        figures = dict(reports)
        fitted = {}
        for label, build in (
            (
                CALIBRATED,
                lambda d=dataset, r=reports, c=clips: calibrated_cross_validation(dataset=d, reports=r, clips=c),
            ),
            (TRAINED_ELSEWHERE, lambda d=dataset, r=reports, c=clips: _trained_elsewhere(d, r, c, per_dataset)),
        ):
            try:
                report, description = build()
            except ValueError as error:
                unavailable.setdefault(label, {})[dataset.name] = str(error)
                continue
            figures[label] = report
            fitted[label] = (report, description)
            cells.setdefault(label, {})[dataset.name] = {"calibration": _calibration_brief(description)}
        entry["headline"] = _headline(dataset, reports, fitted, unavailable, others=per_dataset)
        # every figure of the dataset on the same clip draws (agreement/intervals.py)
        spread = intervals.agreement_intervals(
            {name: report.decisions for name, report in figures.items()}, columns=[intervals.TOTAL]
        )
        for name, report in figures.items():
            low, high = spread.intervals[name][intervals.TOTAL]
            interval = None if low is None else [round(low, 2), round(high, 2)]
            cells.setdefault(name, {}).setdefault(dataset.name, {})["ours"] = {
                **_row(report),
                "pairs": report.total.counted,
                "interval": interval,
            }
    _add_published(cells, table_datasets)
    # the table leads with the figure that says whether a learned metric carries over to a study it never saw
    metrics = [name for name in [TRAINED_ELSEWHERE, CALIBRATED, *registry.all_metric_names()] if name in cells]
    records_only = sorted(name for name in cells if name not in metrics)
    return {
        "datasets": table_datasets,
        "metrics": metrics,
        "records_only": records_only,
        "cells": cells,
        "unavailable": unavailable,
        "unmatched_benchmarks": _unmatched_benchmarks(table_datasets),
        "small_set_pairs": SMALL_SET_PAIRS,
    }


def _unmatched_benchmarks(table_datasets: list[dict]) -> list[dict]:
    """Benchmarks with records that no dataset here holds, and why (their pairs are not imported, or were never
    fingerprinted because the full set was not available)."""
    matched = {entry["benchmark"] for entry in table_datasets}
    result = []
    for key, benchmark in records.published_records().items():
        if key in matched:
            continue
        content = benchmark.get("content")
        why = (
            f"no dataset here holds its {content['pairs']:,} judged pairs"
            if content
            else "its full set was not available to fingerprint, so no dataset is matched to it"
        )
        result.append({"key": key, "title": benchmark["title"], "why": why, "records": len(benchmark["records"])})
    return result


def _trained_elsewhere(dataset: Dataset, reports: dict, clips: list, per_dataset: dict) -> tuple:
    sources = [(other, other_reports, other_clips) for other, other_clips, other_reports in per_dataset.values()]
    sources = [source for source in sources if source[0].pk != dataset.pk]
    return fit_elsewhere(dataset=dataset, reports=reports, clips=clips, sources=sources)


def _headline(dataset: Dataset, reports: dict, fitted: dict, unavailable: dict, others: dict) -> dict:
    """The dataset's lead (services/transfer.py): trained elsewhere, in-study beside it, the best single metric, on
    the total column with the same clip resamples."""
    elsewhere = fitted.get(TRAINED_ELSEWHERE)
    left_out = None
    if elsewhere is None:
        candidates = [other for other, _clips, _reports in others.values() if other.pk != dataset.pk]
        left_out = disjoint_sources(dataset=dataset, candidates=candidates)[1]
    return headline(
        reports=reports,
        columns=[intervals.TOTAL],
        elsewhere=elsewhere,
        in_study=fitted.get(CALIBRATED),
        elsewhere_unavailable=unavailable.get(TRAINED_ELSEWHERE, {}).get(dataset.name, ""),
        in_study_unavailable=unavailable.get(CALIBRATED, {}).get(dataset.name, ""),
        left_out_sources=left_out,
    )


def _calibration_brief(description: dict) -> dict:
    return {
        "mode": description["mode"],
        "trained_on": description["trained_on"],
        "features": description["features"],
        "coefficients": description["model_on_all_pairs"]["coefficients"],
        "training_pairs": description["model_on_all_pairs"]["training_pairs"],
        "left_out_sources": description.get("left_out_sources", {}),
        "left_out_pairs": description.get("left_out_pairs", {}),
    }


def _add_published(cells: dict, table_datasets: list[dict]) -> None:
    """Each benchmark record goes into the cell of its platform counterpart (`ours`), or a row of its own."""
    for entry in table_datasets:
        if not entry["benchmark"]:
            continue
        for record in records.published_records()[entry["benchmark"]]["records"]:
            row_name = record["ours"] or record["metric"]
            cell = cells.setdefault(row_name, {}).setdefault(entry["name"], {})
            cell.setdefault("published", []).append(
                {key: record.get(key) for key in ("metric", "variant", "figures", "source")}
            )


def _detector_identity() -> list:
    """The configured fluency detector and its declared training texts (CALIBRATED's features depend on both)."""
    from metrics_bridge.scoring import fluency

    resources = metric_resources()
    path = fingerprints.training_texts_path(fluency.detector_path(resources))
    declared = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None
    return [fluency.detector_name(resources), declared]


def benchmark_fingerprint(*, datasets: list[Dataset]) -> str:
    parts = [records.records_fingerprint(), calibration.DEFAULT_SEED, _detector_identity(), SMALL_SET_PAIRS]
    parts.append(model_versions("in-study", "transfer"))  # CALIBRATED's columns: another model, another table
    fingerprints = dataset_fingerprints(datasets=datasets)
    parts += [[dataset.pk, fingerprints[dataset.pk]] for dataset in datasets]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def benchmark_state():
    """What the page shows at once: the stored table and whether it is still current (CacheState)."""
    from metrics_bridge.services.evaluation.dashboard_cache import cached_state

    return cached_state(key=BENCHMARK_KEY, fingerprint=benchmark_fingerprint(datasets=benchmark_datasets()))


def benchmark_page_data() -> dict:
    """The table for the page, recomputed when any dataset's data, scores or the records change (a worker's task
    or `metric_benchmark`; stored for the page)."""
    datasets = benchmark_datasets()
    return cached_payload(
        key=BENCHMARK_KEY,
        fingerprint=benchmark_fingerprint(datasets=datasets),
        build=lambda: benchmark_table(datasets=datasets),
    )


def benchmark_table_for_command(*, datasets: list[Dataset] | None, metric_names: list[str] | None) -> dict:
    """The table `metric_benchmark` prints: the page's own table (read if current, else computed and stored for the
    page) when it asks for every dataset and metric, else the table of the ones it names (not stored)."""
    if datasets is None and metric_names is None:
        return benchmark_page_data()
    return benchmark_table(datasets=datasets, metric_names=metric_names)


# --- The pairs behind a cell ---------------------------------------------------------------------------


def agreement_pairs(*, dataset: Dataset, metric: str) -> dict:
    """Every judged pair of the dataset with the metric's two scores and verdict under the dataset's protocol:
    {"protocol", "report": the metric's row, "pairs": [{"split", "clip", "key", "caption_a", "caption_b",
    "score_a", "score_b", "answer", "prediction", "correct"}], "unscorable": [...]}. KeyError for an unknown metric.
    """
    from metrics_bridge.agreement import protocols
    from metrics_bridge.services.evaluation.agreement import metric_agreement
    from metrics_bridge.services.runs.contexts import version_context_for
    from metrics_bridge.services.runs.plans import gold_fingerprints_by_caption

    scorer = registry.scorer_for(metric)
    clips = _dataset_clips(dataset)
    gold = gold_fingerprints_by_caption(dataset=dataset) if getattr(scorer, "uses_gold_annotations", False) else None
    reports, _ = metric_agreement(
        clips=clips,
        scorer=scorer,
        context=version_context_for(dataset=dataset),
        gold_fingerprints=gold,
        protocol_name=dataset.agreement_protocol,
    )
    report = reports[metric]
    labels = dict(
        (pk, (clip, key))
        for pk, clip, key in CaptionPair.objects.filter(clip__dataset=dataset).values_list(
            "pk", "clip__external_id", "source_key"
        )
    )
    brace = dataset.agreement_protocol == protocols.BRACE
    rows = []
    for decision in report.decisions:
        pair = decision.pair
        truth = pair.truth
        if decision.prediction is not None:
            prediction = decision.prediction
        elif decision.difference is not None and decision.difference == decision.difference:
            prediction = "a" if decision.difference > 0 else ("b" if decision.difference < 0 else "tie")
        else:
            prediction = None
        clip, key = labels.get(pair.pair_id, ("?", "?"))
        rows.append(
            {
                "split": pair.split,
                "clip": clip,
                "key": key,
                "caption_a": pair.caption_a,
                "caption_b": pair.caption_b,
                "score_a": decision.score_a,
                "score_b": decision.score_b,
                "answer": None if truth == 0 else ("a" if truth > 0 else "b"),
                "prediction": prediction,
                "correct": decision.correct,
            }
        )
    plan_unscorable = []
    if brace:
        from metrics_bridge.agreement import brace as brace_protocol

        plan_unscorable = [
            {
                "split": pair.split,
                "clip": labels.get(pair.pair_id, ("?", "?"))[0],
                "key": labels.get(pair.pair_id, ("?", "?"))[1],
            }
            for pair in brace_protocol.scoring_plan(clips).unscorable
        ]
    return {
        "protocol": dataset.agreement_protocol,
        "report": _row(report),
        "pairs": rows,
        "unscorable": plan_unscorable,
    }
