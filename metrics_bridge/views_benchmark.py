"""The benchmark table (every metric on every human-judgement dataset, published records beside ours) and the
pairs behind one of its cells. Admins only; the numbers come from metrics_bridge/services/benchmark.py."""

import json

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from accounts.roles import ADMIN, roles_required
from annotation.models import Dataset
from metrics_bridge.scoring import registry
from metrics_bridge.services import benchmark

PAIRS_PER_PAGE = 100


@roles_required(ADMIN)
@require_safe
def benchmark_page(request):
    """Who: admins. Total agreement of every metric on every dataset with judged pairs; ?format=json|csv."""
    table = benchmark.benchmark_page_data()
    download = request.GET.get("format")
    if download in ("json", "csv"):
        from metrics_bridge.management.commands.metric_benchmark import benchmark_csv

        content = json.dumps(table, indent=1) if download == "json" else benchmark_csv(table)
        response = HttpResponse(content, content_type="application/json" if download == "json" else "text/csv")
        response["Content-Disposition"] = f'attachment; filename="metric-benchmark.{download}"'
        return response
    datasets = table["datasets"]
    rows = []
    for name in [*table["metrics"], *table["records_only"]]:
        cells = []
        for dataset in datasets:
            cell = table["cells"].get(name, {}).get(dataset["name"], {})
            ours = cell.get("ours", {})
            cells.append(
                {
                    "dataset": dataset,
                    "total": ours.get("total"),
                    "f1": ours.get("f1"),
                    "splits": [(column, ours.get(column)) for column in dataset["columns"] if column != "total"],
                    "published": cell.get("published", []),
                    # the pairs behind a metric's cell; CALIBRATED's are on the dataset's agreement page
                    "pairs_metric": name if name in registry.all_metric_names() else None,
                    "calibration": cell.get("calibration"),
                }
            )
        rows.append({"name": name, "cells": cells, "record_only": name in table["records_only"]})
    context = {"datasets": datasets, "rows": rows, "unavailable": table.get("unavailable", {})}
    return render(request, "metrics_bridge/benchmark.html", context)


@roles_required(ADMIN)
@require_safe
def agreement_pairs(request, dataset_id: int):
    """Who: admins. The judged pairs behind one metric's agreement on a dataset: scores, answer, verdict."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    metric = request.GET.get("metric", "")
    if metric not in registry.all_metric_names():
        raise Http404("unknown metric")
    data = benchmark.agreement_pairs(dataset=dataset, metric=metric)
    split = request.GET.get("split", "")
    verdict = request.GET.get("verdict", "")
    pairs = [row for row in data["pairs"] if not split or row["split"] == split]
    if verdict in ("right", "wrong"):
        pairs = [row for row in pairs if row["correct"] is (verdict == "right")]
    page = Paginator(pairs, PAIRS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "dataset": dataset,
        "metric": metric,
        "data": data,
        "page": page,
        "split": split,
        "verdict": verdict,
        "splits": sorted({row["split"] for row in data["pairs"]}),
        "digits": 2 if data["protocol"] == "brace" else 1,
    }
    return render(request, "metrics_bridge/agreement_pairs.html", context)
