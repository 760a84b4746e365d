"""Metric sensitivity reports: perturb a dataset's reference captions per factor, score, test, store.

The perturbations and the statistics are plain Python (`metrics_bridge.sensitivity`); this module
loads the dataset's references and the tag library, picks the scorers, and stores the result on a
SensitivityReport. Computing a report is safe to repeat: it is claimed with a conditional update,
and a report that is already running or finished is left alone.

A report is one task (the perturbed captions are not Caption rows, so they are not metric-run
chunks): `sensitivity_report_start` takes `enqueue`, the function that sends the task message
(metrics_bridge.tasks.sensitivity.enqueue_sensitivity in the app); this module never imports Celery.
"""

import logging
import traceback
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from corpus.models import Dataset
from metrics_bridge.models import SensitivityReport
from metrics_bridge.scoring import registry
from metrics_bridge.selectors.scoring_inputs import attribute_tag_library, dataset_clip_rows
from metrics_bridge.sensitivity.analysis import build_items, sensitivity_table
from metrics_bridge.sensitivity.perturbations import PERTURBATIONS, Perturber
from metrics_bridge.services.runs.contexts import scoring_context_for
from metrics_bridge.services.runs.runs import requested_scorers_for, scorer_version

logger = logging.getLogger(__name__)

#: -log10(0.05): cells above it are marked significant on the page
SIGNIFICANT = 1.3010299956639813


def sensitivity_report_create(
    *, dataset: Dataset, metric_names: list[str] | None = None, seed: int = 0, requested_by=None
) -> SensitivityReport:
    """A pending report; unknown metric names are refused here (ValueError naming them)."""
    if metric_names:
        known = registry.all_metric_names()
        unknown = [name for name in metric_names if name not in known]
        if unknown:
            raise ValueError(f"unknown metric(s): {', '.join(unknown)} (known: {', '.join(known)})")
    return SensitivityReport.objects.create(
        dataset=dataset, requested_metrics=list(metric_names or []), seed=seed, requested_by=requested_by
    )


def sensitivity_report_start(
    *,
    dataset: Dataset,
    enqueue: Callable[[int], None],
    metric_names: list[str] | None = None,
    seed: int = 0,
    requested_by=None,
) -> SensitivityReport:
    """Create a report and send its computation (`enqueue(report id)`) once the transaction commits."""
    with transaction.atomic():
        report = sensitivity_report_create(
            dataset=dataset, metric_names=metric_names, seed=seed, requested_by=requested_by
        )
        transaction.on_commit(lambda: enqueue(report.pk))
    return report


def sensitivity_report_compute(
    *, report_id: int, on_progress: Callable[[str], None] = lambda message: None
) -> SensitivityReport | None:
    """Compute a pending report and store its result; returns None when another worker has it already."""
    claimed = SensitivityReport.objects.filter(pk=report_id, status=SensitivityReport.Status.PENDING).update(
        status=SensitivityReport.Status.RUNNING
    )
    if not claimed:
        return None
    report = SensitivityReport.objects.select_related("dataset").get(pk=report_id)
    try:
        result = sensitivity_result(
            dataset=report.dataset,
            metric_names=report.requested_metrics or None,
            seed=report.seed,
            on_progress=on_progress,
        )
    except Exception as error:  # stored on the report for the page, then re-raised for the log
        logger.exception("sensitivity report %s failed", report_id)
        SensitivityReport.objects.filter(pk=report_id).update(
            status=SensitivityReport.Status.FAILED,
            error=f"{type(error).__name__}: {error}\n{traceback.format_exc()[-3000:]}",
            finished_at=timezone.now(),
        )
        raise
    SensitivityReport.objects.filter(pk=report_id).update(
        status=SensitivityReport.Status.DONE, result=result, error="", finished_at=timezone.now()
    )
    report.refresh_from_db()
    return report


def sensitivity_result(
    *,
    dataset: Dataset,
    metric_names: list[str] | None = None,
    seed: int = 0,
    on_progress: Callable[[str], None] = lambda message: None,
) -> dict:
    """Perturb every reference caption of the dataset, score with the (available) metrics, test each pair of sets."""
    clips = [(str(rows.clip_id), rows.references) for rows in dataset_clip_rows(dataset=dataset) if rows.references]
    # The dataset's metric settings (DATE's delta, ...) and the tag library; no clip data: the perturbed
    # captions are scored against the other references of their clip only, never a gold annotation graph.
    context = scoring_context_for(clip_ids=None, dataset=dataset)
    scorers, unavailable = requested_scorers_for(metric_names, context)
    perturber = Perturber(
        [text for _clip, references in clips for text in references], attribute_tags=attribute_tag_library(), seed=seed
    )
    items = build_items(clips, perturber)
    on_progress(f"{len(items)} reference captions of {len(clips)} clips; scoring with {len(scorers)} scorer(s)")
    # Every metric name of each requested scorer, as metric runs do (XACE brings XACE_E/S/A/R).
    result = sensitivity_table(items, scorers, context, on_scorer=lambda name: on_progress(f"scoring {name}"))
    result.update(
        {
            "dataset": dataset.name,
            "seed": seed,
            "statistic": "-log10 p, Kruskal-Wallis H test (scipy.stats.kruskal), clean vs perturbed scores",
            "versions": {name: scorer_version(registry.scorer_for(name), context) for name in result["metrics"]},
            "unavailable": unavailable,
        }
    )
    return result


def ordered_perturbations(result: dict) -> list[str]:
    """The perturbations of a stored result in their fixed order (event, source, attribute, relation)."""
    return [kind for kind in PERTURBATIONS if kind in result.get("perturbations", {})]


def sensitivity_table_layout(result: dict) -> tuple[list[dict], list[dict]]:
    """A stored result as a page table: one column per perturbation (with its counts and examples), one row
    per metric; each cell knows whether it is the most sensitive metric of its perturbation."""
    columns = [{"kind": kind, **result["perturbations"][kind]} for kind in ordered_perturbations(result)]
    best = {
        kind: max((result["table"][kind][name]["neg_log10_p"] or 0 for name in result["metrics"]), default=0)
        for kind in (column["kind"] for column in columns)
    }
    rows = []
    for name in result["metrics"]:
        cells = []
        for column in columns:
            cell = dict(result["table"][column["kind"]][name])
            value = cell["neg_log10_p"]
            cell["significant"] = value is not None and value > SIGNIFICANT
            cell["best"] = value is not None and value > 0 and value == best[column["kind"]]
            cells.append(cell)
        rows.append({"metric": name, "cells": cells})
    return columns, rows
