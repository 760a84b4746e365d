"""The benchmark table: every metric on every human-judgement dataset, published records beside ours. Admins only;
the numbers come from metrics_bridge/services/evaluation/benchmark.py, computed by a worker (the pairs behind a cell:
agreement_pairs.py beside it)."""

import json

from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, roles_required
from common.web_input import query_choice
from metrics_bridge.exports import benchmark_csv
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation import benchmark
from metrics_bridge.tasks.dashboards import dashboard_workers_alive, request_benchmark_refresh
from metrics_bridge.views.computation import computation_context

#: the in-study figure is labelled as such wherever it stands beside the trained-elsewhere one
ROW_LABELS = {
    benchmark.TRAINED_ELSEWHERE: "CALIBRATED, trained elsewhere",
    benchmark.CALIBRATED: "CALIBRATED, fitted on this study's own judgements (in-study)",
}


@roles_required(ADMIN)
@require_safe
def benchmark_page(request):
    """Who: admins. Total agreement of every metric on every dataset with judged pairs; ?format=json|csv.

    The page (and its downloads) answer at once with the stored table (flagged when the data changed since) and the
    browser asks for the recomputation (a worker's task: fitting CALIBRATED on every dataset takes a while)."""
    download = query_choice(request, "format", ("html", "json", "csv"), default="html")
    # the stored table only (metric_benchmark or a worker builds it): a page view never computes it
    state = benchmark.benchmark_state()
    if download in ("json", "csv"):
        if state.payload is None:
            return HttpResponse(
                "The benchmark table has not been computed yet: run manage.py metric_benchmark, or open this page "
                "and wait for it.",
                status=409,
                content_type="text/plain",
            )
        table = state.payload
        content = json.dumps(table, indent=1) if download == "json" else benchmark_csv(table)
        response = HttpResponse(content, content_type="application/json" if download == "json" else "text/csv")
        response["Content-Disposition"] = f'attachment; filename="metric-benchmark.{download}"'
        response["X-Table-Current"] = "yes" if state.fresh else "no (the data changed since; being recomputed)"
        return response
    # the page refreshes itself (accounts/live.py): its status view asks for the recomputation once
    live = {
        "live": live_context(status_url=reverse("metrics_bridge:benchmark_refresh"), **_live_state(state)),
        "computation": computation_context(state),
        "retry_url": reverse("metrics_bridge:benchmark_refresh"),
        "no_worker": not state.fresh and not dashboard_workers_alive(),
    }
    if state.payload is None:
        title = "Every metric on every human-judgement benchmark"
        return render(request, "metrics_bridge/dashboard_pending.html", {"title": title, **live})
    table = state.payload
    stale = live if state.fresh else {"stale": True, "computed_at": state.computed_at, **live}
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
                    "pairs": ours.get("pairs"),
                    "interval": ours.get("interval"),
                    "splits": [(column, ours.get(column)) for column in dataset["columns"] if column != "total"],
                    "published": cell.get("published", []),
                    # the pairs behind a metric's cell; CALIBRATED's are on the dataset's agreement page
                    "pairs_metric": name if name in registry.all_metric_names() else None,
                    "calibration": cell.get("calibration"),
                }
            )
        rows.append(
            {
                "name": name,
                "label": ROW_LABELS.get(name, name),
                "cells": cells,
                "record_only": name in table["records_only"],
                "lead": name == benchmark.TRAINED_ELSEWHERE,
            }
        )
    context = {
        "datasets": datasets,
        "rows": rows,
        "unavailable": table.get("unavailable", {}),
        "unmatched_benchmarks": table.get("unmatched_benchmarks", []),
        "small_set_pairs": table.get("small_set_pairs"),
        "left_out": _left_out(table),
        # the lead per dataset (older stored tables have none: the page shows the table alone until recomputed)
        "headlines": [(dataset, dataset["headline"]) for dataset in datasets if dataset.get("headline")],
        "detector_notes": [
            (dataset["name"], dataset["detector_note"]) for dataset in datasets if dataset.get("detector_note")
        ],
        **stale,
    }
    return render(request, "metrics_bridge/benchmark.html", context)


@roles_required(ADMIN)
@require_http_methods(["GET", "POST"])
def benchmark_refresh(request):
    """Who: admins. POST: have a worker compute the benchmark table for the current data (retry=1: also when its
    computation was given up). GET: the page's live status (accounts/live.py), with whether the table is current."""
    if request.method == "GET":
        state = benchmark.benchmark_state()
        refresh = reverse("metrics_bridge:benchmark_refresh") if state.needs_request else None
        return live_status_response(**_live_state(state), refresh=refresh, fresh=state.fresh)
    retry = request.POST.get("retry") == "1"
    sent = request_benchmark_refresh(retry=retry)
    if retry and request.headers.get("Accept", "").startswith("text/html"):  # the page's "Try again" button
        return redirect(reverse("metrics_bridge:benchmark"))
    if benchmark.benchmark_state().fresh:
        return JsonResponse({"fresh": True})
    return JsonResponse({"fresh": False, "queued": sent}, status=202)


def _left_out(table: dict) -> list[str]:
    """What each "trained elsewhere" model was not fitted on, and why (the overlap rule of docs/metrics.md)."""
    lines = []
    for dataset, cell in table["cells"].get(benchmark.TRAINED_ELSEWHERE, {}).items():
        calibration = cell.get("calibration") or {}
        for source, what in calibration.get("left_out_sources", {}).items():
            lines.append(f"on {dataset}: {source} left out (shares {what})")
        for source, left_out in calibration.get("left_out_pairs", {}).items():
            pairs, texts = left_out["pairs"], left_out["shared_texts"]
            lines.append(
                f"on {dataset}: {pairs} pair{'s' if pairs != 1 else ''} of {source} left out of the fit (they hold "
                f"{'the caption text' if texts == 1 else f'one of the {texts} caption texts'} the two share)"
            )
    return lines


def _live_state(state) -> dict:
    """The benchmark page's live version (a new table, the data changed under it, its computation moved on) and
    whether it waits (not when its computation was given up: the page offers "Try again")."""
    computation = state.computation
    phase = computation and (computation.phase, computation.attempts)
    given_up = bool(computation and computation.given_up)
    return {"version": live_version(state.computed_at, state.fresh, phase), "busy": not state.fresh and not given_up}
