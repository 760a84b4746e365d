"""Metric dashboards: runs and their progress, agreement tables, score explanations. Admins only."""
from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, roles_required
from annotation.models import Caption, Dataset
from metrics_bridge import selectors
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import scorer_version
from metrics_bridge.services.agreement import SPLITS, agreement_table
from metrics_bridge.services.contexts import version_context_for
from metrics_bridge.services.runs import metric_run_cancel
from metrics_bridge.services.workers import chunk_queue_counts, live_workers
from metrics_bridge.tasks import current_broker, runs_execute_eagerly, start_metric_run


def _current_versions(dataset: Dataset) -> dict[str, str]:
    context = version_context_for(dataset=dataset)
    return {name: scorer_version(registry.scorer_for(name), context) for name in registry.all_metric_names()}


@roles_required(ADMIN)
def metrics_home(request):
    """Admins: datasets with their latest metric runs, and a form to start one."""
    unavailable = registry.unavailable_metrics(version_context_for(dataset=None))
    available = [name for name in registry.all_metric_names() if name not in unavailable]
    datasets = Dataset.objects.order_by("name")
    runs = MetricRun.objects.select_related("dataset").order_by("-created_at")[:20]
    return render(
        request,
        "metrics_bridge/home.html",
        {"datasets": datasets, "runs": runs, "available": available, "unavailable": unavailable, **_worker_status()},
    )


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


@roles_required(ADMIN)
def run_detail(request, run_id: int):
    run = get_object_or_404(MetricRun.objects.select_related("dataset"), pk=run_id)
    failed_chunks = run.chunks.filter(status="failed").only("index", "metric", "attempts", "error")[:20]
    return render(
        request, "metrics_bridge/run_detail.html", {"run": run, "failed_chunks": failed_chunks, **_worker_status()}
    )


@roles_required(ADMIN)
def run_progress(request, run_id: int):
    run = get_object_or_404(MetricRun, pk=run_id)
    return JsonResponse(
        {
            "status": run.status,
            "status_label": run.get_status_display(),
            "done": run.chunks_done,
            "failed": run.chunks_failed,
            "total": run.chunks_total,
            "error": run.error,
            "workers": len(live_workers(broker=current_broker())),
        }
    )


@roles_required(ADMIN)
@require_POST
def run_cancel(request, run_id: int):
    metric_run_cancel(run=get_object_or_404(MetricRun, pk=run_id))
    return redirect("metrics_bridge:run_detail", run_id=run_id)


@roles_required(ADMIN)
def dataset_agreement(request, dataset_id: int):
    """The HC/HI/HM/MM table of every metric with stored scores (nothing is computed here)."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    scored = selectors.dataset_scored_metric_names(dataset=dataset, versions=_current_versions(dataset))
    table = agreement_table(dataset=dataset, metric_names=scored)
    rows = [(name, [row.get(split) for split in (*SPLITS, "total")]) for name, row in table["metrics"].items()]
    best_total = max((row["total"] or 0 for row in table["metrics"].values()), default=None)
    return render(
        request,
        "metrics_bridge/agreement.html",
        {
            "dataset": dataset,
            "rows": rows,
            "columns": (*SPLITS, "total"),
            "pair_counts": [table["pairs"][column] for column in (*SPLITS, "total")],
            "best_total": best_total,
        },
    )


@roles_required(ADMIN)
def caption_scores(request, caption_id: int):
    """Every stored score of one caption, with the scorer's explanation (X-ACE matched / missed / hallucinated nodes)."""
    caption = get_object_or_404(Caption.objects.select_related("clip__dataset", "system"), pk=caption_id)
    scores = selectors.caption_scores(caption=caption)
    return render(request, "metrics_bridge/caption_scores.html", {"caption": caption, "scores": scores})
