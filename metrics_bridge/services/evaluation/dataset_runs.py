"""A metric run on a dataset: everything the pages show for the metrics it runs, as chunks of one run.

What a finished run has stored, for each metric it ran (only what was missing is planned):
- caption scores of the FENSE protocol batches of the dataset's judged pairs: the agreement table;
- every candidate caption against all of its clip's references: the caption page, the leaderboard's
  caption means and the THumBS correlations (metrics_bridge/services/runs/plans.py);
- for corpus-level metrics (CIDEr-D, DATE), each THumBS campaign's rated captions as their own corpus:
  the THumBS correlations (metrics_bridge/services/evaluation/thumbs_report.py);
- system-level scores of each captioning system's current captions (pycocoevalcap's corpus scores for
  the n-gram metrics, means of caption scores for the others): the leaderboard
  (metrics_bridge/services/runs/system_scores.py). These chunks go last: they read the caption scores the
  others store instead of computing them again.
One run, one progress bar, one "done": no page says "not computed" for what it computed. The pages' Compute
buttons, the API, `compute_metrics` and the demo all start this run; `agreement_report` plans the protocol
batches only (`runs.metric_run_create(protocol_only=True)`), which is all it reads.
"""

import logging

from django.db import transaction

from common.structured_log import log_event
from corpus.models import Dataset
from metrics_bridge.models import MetricRun
from metrics_bridge.services.evaluation.thumbs_report import campaign_chunks_plan
from metrics_bridge.services.runs.runs import Enqueue, metric_run_dispatch, metric_run_plan, metric_run_plan_save
from metrics_bridge.services.runs.system_scores import system_chunks_plan
from ratings.models import Campaign

logger = logging.getLogger("captioneval.metric_runs")


def dataset_run_create(
    *,
    dataset: Dataset,
    metric_names: list[str] | None = None,
    requested_by=None,
    slow_resources_loading: bool = False,
    keep_empty: bool = True,
) -> MetricRun | None:
    """Plan and save the whole run (nothing is queued yet); `slow_resources_loading`: see runs._sending_order.

    A run with nothing to compute is saved as done (a page's Compute button shows "nothing was missing"),
    unless `keep_empty` is False: then nothing is saved and None returned (the demo, run at every start of
    ./scripts/run, would otherwise add empty runs to the list each time)."""
    plan = metric_run_plan(dataset=dataset, metric_names=metric_names, requested_by=requested_by)
    campaigns = Campaign.objects.filter(dataset=dataset, task_type=Campaign.TaskType.THUMBS).order_by("pk")
    for campaign in campaigns:
        chunks, reference_sets = campaign_chunks_plan(
            campaign=campaign, scorers=plan.scorers, context=plan.context, corpus_level_only=True
        )
        plan.chunks += chunks
        plan.reference_sets.update(reference_sets)
    system_chunks = system_chunks_plan(dataset=dataset, scorers=plan.scorers, metric_names=plan.run.metrics)
    if not keep_empty and not plan.chunks and not system_chunks:
        return None
    return metric_run_plan_save(plan, slow_resources_loading=slow_resources_loading, last=system_chunks)


def dataset_run_start(
    *, dataset: Dataset, enqueue: Enqueue, metric_names: list[str] | None = None, requested_by=None
) -> MetricRun:
    """Plan the run and send its chunks to the workers; returns at once (progress is on the run row).

    The planning reads outside any transaction (on SQLite a transaction holds the only write lock, which
    workers need to renew their leases); the messages leave once the chunks are marked dispatched."""
    run = dataset_run_create(dataset=dataset, metric_names=metric_names, requested_by=requested_by)
    with transaction.atomic():
        metric_run_dispatch(run=run, enqueue=enqueue)
    log_event(logger, "run_started", run=run.pk, dataset=dataset.name, metrics=run.metrics, chunks=run.chunks_total)
    return run
