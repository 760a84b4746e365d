"""CALIBRATED "trained elsewhere": the figure the agreement pages, the benchmark and `agreement_report` lead with.

A metric learned from one study's judgements is only worth having if it carries over to studies it never saw, so
the figure shown first is a model fitted on the other datasets of the database that share no clip, caption or
judged pair with the evaluated one (the overlap rule of docs/metrics.md: whole datasets sharing clip audio or a
judged pair are left out by `disjoint_sources`, training pairs holding one of its caption texts by
`calibrated_transfer`), evaluated on it. The cross-validated figure, fitted on the study's own judgements, stands
beside it as the in-study figure. Both carry 95 % bootstrap intervals over the evaluated dataset's clips, on the
same draws as the single metrics they are compared with (agreement/intervals.py).

Fitting takes a while on a real study, so the agreement page reads a stored result that a worker computes
(`transfer_summary`, a dashboard part), keyed by the data of the evaluated dataset and of every candidate source.
"""

import hashlib
import json
import math

from corpus.models import Dataset
from metrics_bridge.agreement import calibration, intervals
from metrics_bridge.agreement.protocol import AgreementReport
from metrics_bridge.services.evaluation.agreement import (
    _dataset_clips,
    _metric_reports,
    _row,
    agreement_report_build,
    report_columns,
)
from metrics_bridge.services.evaluation.calibration import calibrated_transfer, disjoint_sources, model_versions_tag
from metrics_bridge.services.evaluation.dashboard_cache import cached_payload, dataset_fingerprints
from ratings.models import CaptionPair

TRAINED_ELSEWHERE = "CALIBRATED (trained elsewhere)"
IN_STUDY = "CALIBRATED (in-study)"
IN_STUDY_LABEL = "fitted on this study's own judgements (in-study)"
NO_DISJOINT_SOURCE = "no other study shares nothing with this one: import one to measure transfer"


def transfer_key(*, dataset: Dataset) -> str:
    """Where the dataset's trained-elsewhere figure is stored (dashboard_cache.py); it shows both models' figures,
    so a new version of either stores it elsewhere (the former model's figure is never shown as current)."""
    return f"transfer:{dataset.pk}:{model_versions_tag('transfer', 'in-study')}"


def candidate_sources(*, dataset: Dataset) -> list[Dataset]:
    """Every other dataset with judged pairs, by name: what a model trained elsewhere may be fitted on."""
    ids = CaptionPair.objects.exclude(clip__dataset=dataset).values_list("clip__dataset_id", flat=True).distinct()
    return list(Dataset.objects.filter(pk__in=ids).order_by("name"))


def transfer_fingerprint(
    *, dataset: Dataset, known: dict[int, str] | None = None, sources: list[Dataset] | None = None
) -> str:
    """The data the figure depends on: the evaluated dataset's and every candidate source's (a new or edited study
    elsewhere changes which sources are disjoint and what the model learns). `known`: fingerprints the caller read
    already ({dataset id: fingerprint}); the others are read together. `sources`: candidate_sources, when the
    caller read them already (in the same request)."""
    sources = candidate_sources(dataset=dataset) if sources is None else sources
    known = dict(known or {})
    missing = [entry for entry in [dataset, *sources] if entry.pk not in known]
    known.update(dataset_fingerprints(datasets=missing))
    parts = [calibration.DEFAULT_SEED, [dataset.pk, known[dataset.pk]]]
    parts += [[source.pk, known[source.pk]] for source in sources]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def complete_reports(reports: dict[str, AgreementReport]) -> dict[str, AgreementReport]:
    """The reports whose pair-protocol scores are all stored (a missing one reads as NaN; a stored None is "not
    applicable"): a metric partly computed on a source would teach the model from holes."""
    return {
        name: report
        for name, report in reports.items()
        if not any(
            score is not None and math.isnan(score)
            for decision in report.decisions
            for score in (decision.score_a, decision.score_b)
        )
    }


def no_source_message(left_out: dict[str, str]) -> str:
    named = "; ".join(f"{name} (shares {what})" for name, what in left_out.items())
    return NO_DISJOINT_SOURCE + (f". Left out, sharing this study's data: {named}" if left_out else "")


def fit_elsewhere(
    *, dataset: Dataset, reports: dict, clips: list, sources: list[tuple]
) -> tuple[AgreementReport, dict]:
    """CALIBRATED fitted on the `sources` (each (dataset, its complete reports, its protocol clips)) that share no
    clip audio or judged pair with `dataset`, evaluated on it. ValueError when none is left (saying so and naming
    the overlapping ones) or the model cannot be fitted; the description names the sources left out."""
    usable, left_out = disjoint_sources(dataset=dataset, candidates=[source for source, _, _ in sources])
    usable_ids = {source.pk for source in usable}
    training = [entry for entry in sources if entry[0].pk in usable_ids]
    if not training:
        raise ValueError(no_source_message(left_out))
    report, description = calibrated_transfer(dataset=dataset, reports=reports, training=training, clips=clips)
    description["left_out_sources"] = left_out
    return report, description


def source_reports(*, sources: list[Dataset], metric_names: list[str]) -> list[tuple]:
    """(dataset, its complete reports among `metric_names`, its protocol clips) per source, from stored scores."""
    result = []
    for source in sources:
        clips = _dataset_clips(source)
        reports, _ = _metric_reports(dataset=source, clips=clips, metric_names=metric_names)
        result.append((source, complete_reports(reports), clips))
    return result


def trained_elsewhere(*, dataset: Dataset, reports: dict, clips: list) -> tuple[AgreementReport, dict]:
    """CALIBRATED on `dataset` fitted on every other dataset of the database that shares nothing with it (their
    stored scores only). Sources are screened by content before any of their scores are read."""
    usable, left_out = disjoint_sources(dataset=dataset, candidates=candidate_sources(dataset=dataset))
    if not usable:
        raise ValueError(no_source_message(left_out))
    sources = source_reports(sources=usable, metric_names=list(reports))
    report, description = fit_elsewhere(dataset=dataset, reports=reports, clips=clips, sources=sources)
    description["left_out_sources"] = {**left_out, **description["left_out_sources"]}
    return report, description


def headline(
    *,
    reports: dict[str, AgreementReport],
    columns: list[str],
    elsewhere: tuple[AgreementReport, dict] | None,
    in_study: tuple[AgreementReport, dict] | None,
    elsewhere_unavailable: str = "",
    in_study_unavailable: str = "",
    left_out_sources: dict | None = None,
) -> dict:
    """The pages' lead: the trained-elsewhere figure, the in-study one beside it, the best single metric, each with
    its 95 % interval over clips on the same resamples, and whether the lead is separable from the best single."""
    figures = dict(reports)
    if elsewhere is not None:
        figures[TRAINED_ELSEWHERE] = elsewhere[0]
    if in_study is not None:
        figures[IN_STUDY] = in_study[0]
    rows = {name: _row(report) for name, report in figures.items()}
    spread = intervals.agreement_intervals(
        {name: report.decisions for name, report in figures.items()}, columns=columns, values=rows
    )
    single = {name: row for name, row in rows.items() if name in reports}
    best_single = max(single, key=lambda name: single[name].get("total") or 0, default=None)

    def figure(name: str, description: dict | None, unavailable: str) -> dict:
        if name not in rows:
            return {"unavailable": unavailable or "not computed"}
        return {
            "row": rows[name],
            "total": rows[name]["total"],
            "pairs": figures[name].total.counted,
            "intervals": {column: list(spread.intervals[name].get(column, (None, None))) for column in columns},
            "interval": list(spread.intervals[name].get(intervals.TOTAL, (None, None))),
            "calibration": _brief(description) if description else None,
        }

    result = {
        "columns": columns,
        "trained_elsewhere": figure(TRAINED_ELSEWHERE, elsewhere and elsewhere[1], elsewhere_unavailable),
        "in_study": figure(IN_STUDY, in_study and in_study[1], in_study_unavailable),
        "in_study_label": IN_STUDY_LABEL,
        "best_single": figure(best_single, None, "") if best_single else None,
        "best_single_name": best_single,
        "left_out_sources": left_out_sources
        if left_out_sources is not None
        else (elsewhere[1].get("left_out_sources", {}) if elsewhere else {}),
        "clips": spread.clips,
        "resamples": spread.resamples,
        "seed": spread.seed,
    }
    if elsewhere is not None and best_single is not None:
        result["versus_best_single"] = _versus(figures, TRAINED_ELSEWHERE, best_single)
    return result


def _versus(figures: dict, name: str, other: str) -> dict:
    """The lead against the best single metric on the same clip resamples: the 95 % interval of the difference."""
    pair = intervals.agreement_intervals(
        {name: figures[name].decisions, other: figures[other].decisions}, columns=[intervals.TOTAL]
    )
    separation = pair.best.get(intervals.TOTAL)
    if separation is None or separation.runner_up is None:
        return {"verdict": "not separable", "difference": None}
    low, high = separation.difference_low, separation.difference_high
    if low is None:  # a tie
        return {"verdict": "not separable", "difference": None}
    if separation.best != name:
        return {"verdict": "lower", "difference": [-high, -low]}
    return {"verdict": "separable" if separation.separable else "not separable", "difference": [low, high]}


def _brief(description: dict) -> dict:
    model = description.get("model_on_all_pairs", {})
    return {
        "mode": description.get("mode"),
        "trained_on": description.get("trained_on"),
        "features": description.get("features", []),
        "training_pairs": model.get("training_pairs"),
        "left_out_sources": description.get("left_out_sources", {}),
        "left_out_pairs": description.get("left_out_pairs", {}),
        "folds": description.get("folds"),
        "fluency_detector_note": (description.get("fluency_detector") or {}).get("note", ""),
    }


def scored_metric_names(*, dataset: Dataset) -> list[str]:
    """Metrics with stored scores for the dataset at their current versions (complete or not)."""
    from metrics_bridge.scoring import registry
    from metrics_bridge.selectors.evaluation import dataset_scored_metric_names
    from metrics_bridge.services.runs.system_scores import current_versions

    versions = current_versions(registry.all_metric_names(), dataset=dataset)
    return dataset_scored_metric_names(dataset=dataset, versions=versions)


def transfer_summary(*, dataset: Dataset) -> dict:
    """The agreement page's lead for the dataset, from stored scores: {"headline": ...} (see `headline`) with the
    trained-elsewhere figure and the best single metric. The in-study figure beside it is the cross-validated one
    the page's CALIBRATED part already fits (`calibration_summary`, same clips, same resamples), so it is not
    fitted twice. Workers call this (a dashboard part); pages read what it stored."""

    def build() -> dict:
        clips = _dataset_clips(dataset)
        reports, _ = _metric_reports(dataset=dataset, clips=clips, metric_names=scored_metric_names(dataset=dataset))
        reports = complete_reports(reports)
        usable, left_out = disjoint_sources(dataset=dataset, candidates=candidate_sources(dataset=dataset))
        if not reports:
            return {"headline": None, "left_out_sources": left_out}
        columns = report_columns({"protocol": dataset.agreement_protocol, "pairs": _pair_counts_of(dataset, clips)})
        elsewhere, elsewhere_error = None, ""
        try:
            elsewhere = trained_elsewhere(dataset=dataset, reports=reports, clips=clips)
        except ValueError as error:
            elsewhere_error = str(error)
        result = headline(
            reports=reports,
            columns=columns,
            elsewhere=elsewhere,
            in_study=None,
            elsewhere_unavailable=elsewhere_error,
            in_study_unavailable="shown from the CALIBRATED part of the page",
            left_out_sources=left_out,
        )
        result["sources"] = [source.name for source in usable]
        return {"headline": result}

    return cached_payload(
        key=transfer_key(dataset=dataset), fingerprint=transfer_fingerprint(dataset=dataset), build=build
    )


def _pair_counts_of(dataset: Dataset, clips: list) -> dict:
    from metrics_bridge.services.evaluation.agreement import _pair_counts

    return _pair_counts(clips, dataset.agreement_protocol)


# --- What the agreement page and its downloads lead with ---------------------------------------------------


def page_headline(*, transfer: dict | None, calibration: dict | None) -> dict:
    """The agreement page's lead from its two stored parts (either may be None: not computed yet): the
    trained-elsewhere figure (`transfer_summary`'s payload) and beside it the in-study one (`calibration_summary`'s
    payload), each {"total", "interval", "pairs", "cells": {column: (value, low, high)}} or None with a reason."""
    lead = (transfer or {}).get("headline")
    elsewhere = (lead or {}).get("trained_elsewhere") or {}
    summary = (calibration or {}).get("summary") or {}
    result = {
        "computed": transfer is not None,
        "elsewhere": _shown(elsewhere) if "row" in elsewhere else None,
        "elsewhere_unavailable": elsewhere.get("unavailable", "") if lead else "",
        "in_study": None,
        "in_study_unavailable": summary.get("unavailable", "") if calibration is not None else "",
        "in_study_computed": calibration is not None,
        "in_study_label": IN_STUDY_LABEL,
        "best_single_name": (lead or {}).get("best_single_name"),
        "best_single": _shown(lead["best_single"]) if lead and lead.get("best_single") else None,
        "versus": (lead or {}).get("versus_best_single"),
        "left_out_sources": (lead or {}).get("left_out_sources") or (transfer or {}).get("left_out_sources") or {},
        "sources": (lead or {}).get("sources", []),
        "no_scores": transfer is not None and lead is None,
    }
    if "row" in summary:
        cells = _total_first({cell["column"]: (cell["value"], *cell["interval"]) for cell in summary["cells"]})
        total = cells.get("total", (None, None, None))
        result["in_study"] = {
            "total": total[0],
            "interval": list(total[1:]),
            "pairs": (summary.get("pairs") or {}).get("total"),
            "cells": cells,
            "folds": (summary.get("calibration") or {}).get("folds"),
        }
    return result


def _shown(figure: dict) -> dict:
    calibration = figure.get("calibration") or {}
    return {
        "total": figure["total"],
        "interval": figure["interval"],
        "pairs": figure["pairs"],
        "cells": _total_first(
            {column: (figure["row"].get(column), *bounds) for column, bounds in figure["intervals"].items()}
        ),
        "trained_on": calibration.get("trained_on"),
        "training_pairs": calibration.get("training_pairs"),
        "left_out_pairs": calibration.get("left_out_pairs", {}),
        "detector_note": calibration.get("fluency_detector_note", ""),
    }


def _total_first(cells: dict) -> dict:
    """The lead shows the total first (on a phone the other columns scroll out of view)."""
    return {column: cells[column] for column in sorted(cells, key=lambda column: column != intervals.TOTAL)}


def headline_rows(headline: dict, columns: list[str]) -> list[list]:
    """The downloads' first rows: [label, *figures per column, *their 95 % bounds], or [label, reason]."""
    rows = []
    for label, figure, reason in (
        (TRAINED_ELSEWHERE, headline["elsewhere"], headline["elsewhere_unavailable"] or "being computed"),
        (
            "CALIBRATED (in-study: fitted on this study's own judgements)",
            headline["in_study"],
            headline["in_study_unavailable"] or "being computed",
        ),
    ):
        if figure is None:
            rows.append([label, reason])
            continue
        cells = [figure["cells"].get(column, (None, None, None)) for column in columns]
        rows.append([label, *(cell[0] for cell in cells), *(bound for cell in cells for bound in cell[1:])])
    return rows


def report_headline(*, dataset: Dataset, collected: dict, calibrate_on: list[Dataset], unavailable: str = "") -> dict:
    """`agreement_report`'s lead, on the pairs of its table (`agreement_table(collect=...)`): without
    `calibrate_on`, CALIBRATED fitted on every other study sharing nothing with this one, the report's
    cross-validated CALIBRATED beside it; with it, the report's own CALIBRATED is the trained-elsewhere figure
    (fitted on the named datasets, which the command checked share no clip or pair with this one)."""
    clips = collected["clips"]
    reports = {name: report for name, report in collected["reports"].items() if name != calibration.METRIC_NAME}
    columns = report_columns({"protocol": dataset.agreement_protocol, "pairs": _pair_counts_of(dataset, clips)})
    calibrated = collected.get("calibration")
    if calibrate_on:
        return headline(
            reports=reports,
            columns=columns,
            elsewhere=calibrated,
            in_study=None,
            elsewhere_unavailable=unavailable,
            in_study_unavailable="not fitted: --calibrate-on names the training datasets (run without it for the "
            "in-study figure)",
            left_out_sources={},
        )
    elsewhere, elsewhere_error, left_out = None, "", None
    try:
        elsewhere = trained_elsewhere(dataset=dataset, reports=complete_reports(reports), clips=clips)
    except ValueError as error:
        elsewhere_error = str(error)
        left_out = disjoint_sources(dataset=dataset, candidates=candidate_sources(dataset=dataset))[1]
    return headline(
        reports=reports,
        columns=columns,
        elsewhere=elsewhere,
        in_study=calibrated,
        elsewhere_unavailable=elsewhere_error,
        in_study_unavailable=unavailable,
        left_out_sources=left_out,
    )


def agreement_report_led(*, dataset: Dataset, metric_names: list[str] | None, calibrate_on=None, **build) -> dict:
    """`agreement_report`'s report (services/agreement.agreement_report_build, same arguments) led, when CALIBRATED
    is among its metrics, by "headline": CALIBRATED trained elsewhere with the in-study figure beside it."""
    collected: dict = {}
    report = agreement_report_build(
        dataset=dataset, metric_names=metric_names, calibrate_on=calibrate_on, collect=collected, **build
    )
    if metric_names is not None and calibration.METRIC_NAME not in metric_names:
        return report
    lead = report_headline(
        dataset=dataset,
        collected=collected,
        calibrate_on=list(calibrate_on or []),
        unavailable=report.get("unavailable", {}).get(calibration.METRIC_NAME, ""),
    )
    return {"dataset": report["dataset"], "headline": lead, **report}
