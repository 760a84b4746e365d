"""Metric runs and their progress. Admins only. (Dashboards: views_dashboards.py.)"""
from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import ADMIN, roles_required
from annotation.models import Dataset
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.services.contexts import scoring_context_for
from metrics_bridge.services.runs import metric_run_cancel, metric_run_start
from ratings.models import Campaign


@roles_required(ADMIN)
def metrics_home(request):
    """Admins: datasets with their latest metric runs, and a form to start one."""
    context = scoring_context_for(clip_ids=None)
    unavailable = registry.unavailable_metrics(context)
    available = [name for name in registry.all_metric_names() if name not in unavailable]
    datasets = Dataset.objects.order_by("name")
    runs = MetricRun.objects.select_related("dataset").order_by("-created_at")[:20]
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
        },
    )


@roles_required(ADMIN)
@require_POST
def run_start(request):
    dataset = get_object_or_404(Dataset, pk=request.POST.get("dataset"))
    metric_names = request.POST.getlist("metrics") or None
    try:
        run = metric_run_start(dataset=dataset, metric_names=metric_names, requested_by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect("metrics_bridge:home")
    return redirect("metrics_bridge:run_detail", run_id=run.pk)


@roles_required(ADMIN)
def run_detail(request, run_id: int):
    run = get_object_or_404(MetricRun.objects.select_related("dataset"), pk=run_id)
    failed_chunks = run.chunks.filter(status="failed").only("index", "metric", "error")[:5]
    return render(request, "metrics_bridge/run_detail.html", {"run": run, "failed_chunks": failed_chunks})


@roles_required(ADMIN)
def run_progress(request, run_id: int):
    run = get_object_or_404(MetricRun, pk=run_id)
    return JsonResponse({"status": run.status, "done": run.chunks_done, "total": run.chunks_total, "error": run.error})


@roles_required(ADMIN)
@require_POST
def run_cancel(request, run_id: int):
    metric_run_cancel(run=get_object_or_404(MetricRun, pk=run_id))
    return redirect("metrics_bridge:run_detail", run_id=run_id)
