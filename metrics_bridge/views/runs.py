"""Metric runs and their progress, worker status. Admins only. (Dashboards: dashboards.py beside it.)"""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, roles_required
from corpus.models import Dataset
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.selectors.evaluation import sensitivity_reports
from metrics_bridge.selectors.runs import (
    RunActivity,
    run_activity,
    run_example_captions,
    run_live_parts,
    run_result_links,
)
from metrics_bridge.services.evaluation.sensitivity import sensitivity_table_layout
from metrics_bridge.services.runs.contexts import version_context_for
from metrics_bridge.services.runs.runs import metric_run_cancel
from metrics_bridge.services.runs.workers import chunk_queue_counts, live_workers
from metrics_bridge.tasks.runs import current_broker, runs_execute_eagerly, start_metric_run
from metrics_bridge.tasks.sensitivity import start_sensitivity_report
from ratings.models import Campaign

RECENT_RUNS = 20


@roles_required(ADMIN)
def metrics_home(request):
    """Admins: datasets with their latest metric runs, and a form to start one."""
    unavailable = registry.unavailable_metrics(version_context_for(dataset=None))
    available = [name for name in registry.all_metric_names() if name not in unavailable]
    datasets = Dataset.objects.order_by("name")
    runs = list(MetricRun.objects.select_related("dataset").order_by("-created_at")[:RECENT_RUNS])
    workers = _worker_status()
    version, busy = _home_live(runs, workers)
    thumbs_campaigns = Campaign.objects.filter(task_type=Campaign.TaskType.THUMBS).select_related("dataset")
    return render(
        request,
        "metrics_bridge/home.html",
        {
            "datasets": datasets,
            "runs": runs,
            "available": available,
            "unavailable": unavailable,
            "thumbs_campaigns": thumbs_campaigns,
            "live": live_context(status_url=reverse("metrics_bridge:home_status"), version=version, busy=busy),
            **workers,
        },
    )


def _home_live(runs: list[MetricRun], workers: dict) -> tuple[str, bool]:
    """The /metrics/ page's live version (recent runs, workers, chunk queue) and whether a run is going on."""
    parts = [
        [(run.pk, run.status, run.chunks_done, run.chunks_failed, run.chunks_total) for run in runs],
        [worker.name for worker in workers["workers"]],
        vars(workers["queue"]),
    ]
    return live_version(parts), any(not run.is_finished for run in runs)


@roles_required(ADMIN)
def home_status(request):
    """Who: admins. The /metrics/ page's live status."""
    runs = list(MetricRun.objects.order_by("-created_at")[:RECENT_RUNS])
    version, busy = _home_live(runs, _worker_status())
    return live_status_response(version=version, busy=busy)


def _worker_status() -> dict:
    """Who will score the chunks: live workers on this process's broker, and the chunk queue."""
    return {
        "workers": live_workers(broker=current_broker()),
        "broker_kind": current_broker().split(":", 1)[0],
        "eager": runs_execute_eagerly(),
        "queue": chunk_queue_counts(),
    }


@roles_required(ADMIN)
@require_POST
def run_start(request):
    dataset = get_object_or_404(Dataset, pk=request.POST.get("dataset"))
    metric_names = request.POST.getlist("metrics") or None
    try:
        run = start_metric_run(dataset=dataset, metric_names=metric_names, requested_by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect("metrics_bridge:home")
    return redirect("metrics_bridge:run_detail", run_id=run.pk)


def _run_live(run: MetricRun) -> tuple[RunActivity, str]:
    """What the run is waiting for or doing (in words), and the page's live version."""
    status = _worker_status()
    activity = run_activity(run=run, workers=status["workers"], eager=status["eager"])
    return activity, live_version(run_live_parts(run=run, activity=activity))


@roles_required(ADMIN)
def run_detail(request, run_id: int):
    """Who: admins. A run's progress (live), why it waits, its failed chunks, and links to its results."""
    run = get_object_or_404(MetricRun.objects.select_related("dataset"), pk=run_id)
    failed_chunks = run.chunks.filter(status="failed").only("index", "metric", "attempts", "error")[:20]
    activity, version = _run_live(run)
    context = {
        "run": run,
        "failed_chunks": failed_chunks,
        "activity": activity,
        "result_links": [(label, reverse(name, args=args)) for label, name, args in run_result_links(run=run)],
        "example_captions": run_example_captions(run=run) if run.is_finished else [],
        "live": live_context(
            status_url=reverse("metrics_bridge:run_progress", args=[run.pk]), version=version, busy=not run.is_finished
        ),
        **_worker_status(),
    }
    return render(request, "metrics_bridge/run_detail.html", context)


@roles_required(ADMIN)
def run_progress(request, run_id: int):
    """Who: admins. The run page's live status (accounts/live.py) with the run's counts."""
    run = get_object_or_404(MetricRun, pk=run_id)
    activity, version = _run_live(run)
    return live_status_response(
        version=version,
        busy=not run.is_finished,
        status=run.status,
        status_label=run.get_status_display(),
        done=run.chunks_done,
        failed=run.chunks_failed,
        total=run.chunks_total,
        error=run.error,
        waiting=activity.waiting,
    )


@roles_required(ADMIN)
@require_POST
def run_cancel(request, run_id: int):
    metric_run_cancel(run=get_object_or_404(MetricRun, pk=run_id))
    return redirect("metrics_bridge:run_detail", run_id=run_id)


@roles_required(ADMIN)
def dataset_sensitivity(request, dataset_id: int):
    """The latest metric sensitivity table of a dataset (X-ACE Table 4) and a form to compute a new one."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    if request.method == "POST":
        metric_names = request.POST.getlist("metrics") or None
        try:
            seed = int(request.POST.get("seed") or 0)
            start_sensitivity_report(dataset=dataset, metric_names=metric_names, seed=seed, requested_by=request.user)
        except ValueError as error:
            messages.error(request, str(error))
        else:
            messages.info(request, "Sensitivity report queued; this page shows it when it is done.")
        return redirect("metrics_bridge:dataset_sensitivity", dataset_id=dataset.pk)
    reports = sensitivity_reports(dataset=dataset)
    version, busy = _sensitivity_live(reports)
    shown = next((report for report in reports if report.status == "done"), None)
    columns, rows = sensitivity_table_layout(shown.result) if shown else ([], [])
    available = registry.available_metric_names(version_context_for(dataset=dataset))
    return render(
        request,
        "metrics_bridge/sensitivity.html",
        {
            "dataset": dataset,
            "reports": reports,
            "shown": shown,
            "columns": columns,
            "rows": rows,
            "available": available,
            "live": live_context(
                status_url=reverse("metrics_bridge:dataset_sensitivity_status", args=[dataset.pk]),
                version=version,
                busy=busy,
            ),
        },
    )


def _sensitivity_live(reports) -> tuple[str, bool]:
    """The sensitivity page's live version and whether a report is being computed."""
    busy = any(report.status in ("pending", "running") for report in reports)
    return live_version([(report.pk, report.status) for report in reports]), busy


@roles_required(ADMIN)
def dataset_sensitivity_status(request, dataset_id: int):
    """Who: admins. The sensitivity page's live status: it shows a report as soon as the worker has finished it."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    version, busy = _sensitivity_live(sensitivity_reports(dataset=dataset))
    return live_status_response(version=version, busy=busy)
