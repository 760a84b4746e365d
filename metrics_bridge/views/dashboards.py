"""Admin dashboards: pairwise agreement, leaderboard, THumBS report, one caption, and their plots.

Views only parse the request, call a service and render; the numbers come from
metrics_bridge/services/evaluation/dashboards.py (cached per data state) and the plots from
metrics_bridge/dashboard_plots.py;
the downloads are written by metrics_bridge/exports.py.
"""

import json

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.live import live_context, live_status_response
from accounts.roles import ADMIN, roles_required
from common.web_input import query_id
from corpus.models import Caption, Dataset
from metrics_bridge import dashboard_plots
from metrics_bridge.dashboard_plots import XACE_FACTORS, XACE_TABLES, XACE_VARIANTS
from metrics_bridge.exports import agreement_csv, agreement_xlsx, is_marked_best, leaderboard_csv
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.system_level import JUDGE_DIMENSIONS
from metrics_bridge.services.evaluation import dashboards, transfer
from metrics_bridge.services.runs.contexts import version_context_for
from metrics_bridge.tasks.dashboards import dashboard_workers_alive, request_dashboard_parts
from metrics_bridge.tasks.runs import start_metric_run
from metrics_bridge.views.computation import computation_context
from ratings.models import Campaign

COLUMNS = dashboards.COLUMNS
#: Under this many clips the agreement page says its intervals understate the uncertainty: a percentile bootstrap
#: over a handful of clips draws the same few clips every time (a BRACE sample of 3 clips gave 100.0-100.0 on 2 pairs).
FEW_CLIPS = 30


def _available_metrics() -> list[str]:
    return registry.available_metric_names(version_context_for(dataset=None))


def _download(content: str | bytes, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _start_run(request, dataset: Dataset, page_url: str):
    """Start a metric run of the ticked metrics on the dataset (the same run from every page: it computes
    everything the pages show) and go back to the page, which follows its progress."""
    try:
        run = start_metric_run(dataset=dataset, metric_names=_metric_names_posted(request), requested_by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect(page_url)
    return redirect(f"{page_url}?run={run.pk}")


def _fixed(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _metric_names_posted(request) -> list[str] | None:
    names = [name for name in request.POST.getlist("metrics") if name]
    return names or None


# --- Stored numbers: shown at once, computed by the workers ---------------------------------------------
# Each dashboard page refreshes itself (accounts/live.py, static/core/js/live.js): its live status is
# `dashboard_refresh` (GET), which also tells the browser to POST there when a part must be (re)computed; the
# POST sends the workers' tasks. No page view computes a part: it shows the last result with its age, or the
# computation's state (queued, running, lost and sent again, failed or given up: reported).


def _run_id(request) -> int | None:
    """The run the page follows (?run=, set when a page started it); a bad id is a 400 naming the parameter."""
    return query_id(request, "run", MetricRun)


def _status_url(kind: str, target, run_id: int | None) -> str:
    url = reverse("metrics_bridge:dashboard_refresh", args=[kind, target.pk])
    return f"{url}?run={run_id}" if run_id else url


def _page_payload(request, kind: str, target) -> tuple[dict | None, dict]:
    """(the main table's stored payload, template context: its age and computation, the other parts, the run the
    page follows, its live status). Reads stored results only."""
    live = dashboards.dashboard_live(kind=kind, target=target, run_id=_run_id(request))
    run_active = live.run is not None and not live.run.is_finished
    pending = any(not state.fresh for state in live.parts.values())
    context = {
        "run": live.run,
        "live": live_context(
            status_url=_status_url(kind, target, _run_id(request)), version=live.version, busy=live.busy
        ),
        # plots are cached per stored result: a new URL once the numbers were recomputed
        "plot_version": live.state.computed_at.timestamp() if live.state.computed_at else "",
        "parts": {
            part: {"payload": state.payload, **computation_context(state, run_active)}
            for part, state in live.parts.items()
        },
        "computation": computation_context(live.state, run_active),
        "retry_url": reverse("metrics_bridge:dashboard_refresh", args=[kind, target.pk]),
        # only asked when something is pending: one query
        "no_worker": pending and not dashboard_workers_alive(),
    }
    if not live.state.fresh:
        context.update({"stale": True, "computed_at": live.state.computed_at, "run_active": run_active})
    return live.state.payload, context


def _download_payload(kind: str, target) -> dict | None:
    """The main table for a download: the stored one when it is current; else its computation is asked for (done
    at once with eager Celery, in tests) and None when it is not ready (the caller answers 503)."""
    state = dashboards.dashboard_state(kind=kind, target=target)
    if state.fresh:
        return state.payload
    request_dashboard_parts(kind=kind, target=target)
    state = dashboards.dashboard_state(kind=kind, target=target)
    return state.payload if state.fresh else None


def _not_ready() -> HttpResponse:
    response = HttpResponse(
        "These numbers are being computed for the current data: try the download again in a moment "
        "(the dashboard page shows when they are ready).\n",
        content_type="text/plain; charset=utf-8",
        status=503,
    )
    response["Retry-After"] = "10"
    return response


def _pending(request, kind: str, target, title: str, context: dict):
    """First view of a dashboard: the page answers at once and the workers compute it."""
    return render(request, "metrics_bridge/dashboard_pending.html", {"title": title, **context})


@roles_required(ADMIN)
@require_http_methods(["GET", "POST"])
def dashboard_refresh(request, kind: str, object_id: int):
    """Who: admins. GET: the dashboard page's live status (accounts/live.py). POST: have the workers compute the
    page's parts that are stale (and, with retry=1, those whose computation was given up)."""
    try:
        target = dashboards.dashboard_target(kind=kind, object_id=object_id)
    except (ValueError, Dataset.DoesNotExist, Campaign.DoesNotExist):
        raise Http404("no such dashboard") from None
    if request.method == "GET":
        live = dashboards.dashboard_live(kind=kind, target=target, run_id=_run_id(request))
        refresh = reverse("metrics_bridge:dashboard_refresh", args=[kind, target.pk]) if live.needs_refresh else None
        return live_status_response(
            version=live.version,
            busy=live.busy,
            refresh=refresh,
            fresh=all(state.fresh for state in live.parts.values()),
            given_up=live.given_up,
        )
    retry = request.POST.get("retry") == "1"
    sent = request_dashboard_parts(kind=kind, target=target, retry=retry)
    if retry and request.headers.get("Accept", "").startswith("text/html"):  # the page's "Try again" button
        pages = {"agreement": "dataset_agreement", "leaderboard": "leaderboard", "thumbs": "thumbs_dashboard"}
        return redirect(reverse(f"metrics_bridge:{pages[kind]}", args=[target.pk]))
    live = dashboards.dashboard_live(kind=kind, target=target)
    if all(state.fresh for state in live.parts.values()):
        return JsonResponse({"fresh": True})
    return JsonResponse({"fresh": False, "queued": sent}, status=202)


# --- Pairwise agreement ---------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def dataset_agreement(request, dataset_id: int):
    """Who: admins. The HC/HI/HM/MM table of every metric with current scores, best per column, chart, downloads."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    download = request.GET.get("format")
    if download:
        table, stale = _download_payload("agreement", dataset), {}
        if table is None:
            return _not_ready()
    else:
        table, stale = _page_payload(request, "agreement", dataset)
    if table is None:
        return _pending(request, "agreement", dataset, f"Agreement with human judgements: {dataset.name}", stale)
    if download in ("csv", "json"):
        # the downloads lead with the same figures as the page: stored parts only, current ones
        states = dashboards.dashboard_part_states(kind="agreement", target=dataset)
        if not all(state.fresh for state in states.values()):  # asked of the workers (at once with eager Celery)
            request_dashboard_parts(kind="agreement", target=dataset)
            states = dashboards.dashboard_part_states(kind="agreement", target=dataset)
        lead = transfer.page_headline(
            transfer=states["transfer"].payload if states["transfer"].fresh else None,
            calibration=states["calibration"].payload if states["calibration"].fresh else None,
        )
        if download == "json":
            return _download(
                json.dumps({"headline": lead, **table}), f"agreement-{dataset.name}.json", "application/json"
            )
        return _download(agreement_csv(table, lead), f"agreement-{dataset.name}.csv", "text/csv")
    if download == "xlsx":
        return _download(
            agreement_xlsx(table),
            f"agreement-{dataset.name}.xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    columns = table.get("columns", COLUMNS)
    intervals = table["intervals"]
    rows = [
        (
            name,
            [
                (row.get(c), is_marked_best(intervals, name, c), *intervals["intervals"][name].get(c, (None, None)))
                for c in columns
            ],
        )
        for name, row in table["metrics"].items()
    ]
    chart_metrics = dashboards.agreement_chart_metrics(table["metrics"], request.GET.getlist("chart"))
    context = {
        "dataset": dataset,
        "rows": rows,
        "chart_metrics": chart_metrics,
        "chart_query": ",".join(chart_metrics),
        "columns": columns,
        "brace": table.get("protocol") == "brace",
        "pairs": table["pairs"],
        "pair_counts": [table["pairs"].get(column, "") for column in columns],
        "separations": [intervals["best"].get(column) for column in columns],
        "intervals": intervals,
        "few_clips": intervals["clips"] < FEW_CLIPS,
        "unavailable": table["unavailable"],
        "available": _available_metrics(),
        **stale,
    }
    parts = stale.get("parts", {})
    context["headline"] = transfer.page_headline(
        transfer=parts.get("transfer", {}).get("payload"), calibration=parts.get("calibration", {}).get("payload")
    )
    return render(request, "metrics_bridge/agreement.html", context)


@roles_required(ADMIN)
@require_POST
def agreement_compute(request, dataset_id: int):
    """Who: admins. Start a metric run of the ticked metrics (missing scores only); the page shows its progress."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    return _start_run(request, dataset, reverse("metrics_bridge:dataset_agreement", args=[dataset.pk]))


# --- Leaderboard ----------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def leaderboard(request, dataset_id: int):
    """Who: admins. Systems with system-level metric values, human win rates / THumBS, Kendall tau per metric."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    download = request.GET.get("format")
    if download in ("csv", "json"):
        table, stale = _download_payload("leaderboard", dataset), {}
        if table is None:
            return _not_ready()
    else:
        table, stale = _page_payload(request, "leaderboard", dataset)
    if table is None:
        return _pending(request, "leaderboard", dataset, f"Leaderboard: {dataset.name}", stale)
    if download in ("csv", "json"):
        keys = ("dataset", "systems", "rank_agreement", *(key for _, key, _ in XACE_TABLES), "judge", "domains")
        public = {key: table[key] for key in keys if key in table}
        public["systems"] = [{k: v for k, v in row.items() if k != "win_rate_ci"} for row in table["systems"]]
        if download == "csv":
            return _download(leaderboard_csv(public), f"leaderboard-{dataset.name}.csv", "text/csv")
        return _download(json.dumps(public, indent=1), f"leaderboard-{dataset.name}.json", "application/json")
    # X-ACE factor F1 columns would repeat the factor table below
    metrics = [name for name in table["rank_agreement"] if name not in XACE_FACTORS]
    systems = sorted(
        table["systems"],
        key=lambda row: -(row["human"]["pairwise_win_rate"] if row["human"]["pairwise_win_rate"] is not None else -1),
    )
    # numbers are formatted here: the template filters would cost more than the rest of the view
    rows = [
        {
            "system": row["system"],
            "captions": row["captions"],
            "cells": [
                (_fixed(row["metrics"][m], 4), row["metrics"][m] is not None and row["metrics"][m] == table["best"][m])
                for m in metrics
            ],
            "win_rate": _fixed(row["human"]["pairwise_win_rate"], 3),
            "votes": row["human"]["pairwise_votes"],
            "thumbs": _fixed(row["human"]["thumbs_overall"], 2),
            "ratings": row["human"]["thumbs_ratings"],
        }
        for row in systems
    ]
    context = {
        "dataset": dataset,
        "metrics": metrics,
        "rows": rows,
        "taus": [
            (
                _fixed(table["rank_agreement"][m]["kendall_tau"], 3),
                table["rank_agreement"][m]["systems"],
                _tau_interval(table["rank_agreement"][m].get("kendall_tau_ci")),
            )
            for m in metrics
        ],
        "xace_tables": [
            {
                "metric": metric,
                "systems": table[key],
                "taus": [_fixed(table["rank_agreement"].get(f, {}).get("kendall_tau"), 3) for f in factors],
            }
            for metric, key, factors in XACE_TABLES
            if table.get(key)
        ],
        "unavailable": table["unavailable"],
        "available": _available_metrics(),
        **_domain_context(table, [row["system"] for row in systems], request.GET.get("domain_metric", "")),
        "judge_rows": [
            (name, [_fixed(breakdown.get(d), 2) for d in JUDGE_DIMENSIONS])
            for name, breakdown in sorted(table.get("judge", {}).items())
        ],
        **stale,
    }
    return render(request, "metrics_bridge/leaderboard.html", context)


def _tau_interval(interval) -> str:
    return "" if not interval else f"{interval[0]:.2f}…{interval[1]:.2f}"


#: the metric the per-domain table shows first: AudioCapBench's primary (its judge), else an embedding metric
DOMAIN_METRIC_PREFERENCE = ("LLM_JUDGE_3D", "FENSE", "SBERT")


def _domain_context(table: dict, system_order: list[str], asked: str) -> dict:
    """The per-domain table (AudioCapBench's per-category tables) for one metric, chosen on the page."""
    domains = table.get("domains") or {"domains": [], "systems": {}}
    metrics = [name for name in table["rank_agreement"] if name not in XACE_FACTORS]
    if asked not in metrics:
        asked = next((name for name in DOMAIN_METRIC_PREFERENCE if name in metrics), metrics[0] if metrics else "")
    rows = []
    for name in system_order:
        by_domain = domains["systems"].get(name, {})
        cells = []
        for domain in domains["domains"]:
            entry = by_domain.get(domain)
            value = entry["metrics"].get(asked) if entry else None
            # what this metric's value covers (leaderboard_domains.py: coverage is exact per metric)
            covered = (entry.get("coverage") or {}).get(asked, entry) if entry else None
            missing = ", ".join(covered.get("missing", [])) if covered else ""
            datasets = ", ".join(covered["datasets"]) if covered else ""
            cells.append((_fixed(value, 4), covered["captions"] if covered else 0, datasets, missing))
        rows.append((name, cells))
    return {"domain_names": domains["domains"], "domain_rows": rows, "domain_metric": asked, "domain_metrics": metrics}


@roles_required(ADMIN)
@require_POST
def leaderboard_compute(request, dataset_id: int):
    """Who: admins. Start a metric run on the dataset (its system scores are part of it)."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    return _start_run(request, dataset, reverse("metrics_bridge:leaderboard", args=[dataset.pk]))


# --- THumBS -----------------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def thumbs_dashboard(request, campaign_id: int):
    """Who: admins. Completion, inter-rater agreement, metric correlations with CIs and rater bias of a campaign."""
    campaign = get_object_or_404(
        Campaign.objects.select_related("dataset"), pk=campaign_id, task_type=Campaign.TaskType.THUMBS
    )
    download = request.GET.get("format") == "json"
    if download:
        report, stale = _download_payload("thumbs", campaign), {}
        if report is None:
            return _not_ready()
    else:
        report, stale = _page_payload(request, "thumbs", campaign)
    if report is None:
        return _pending(request, "thumbs", campaign, f"THumBS report: {campaign.name}", stale)
    if download:
        return _download(json.dumps(report, indent=1), f"thumbs-{campaign.name}.json", "application/json")
    correlations = []
    for metric, levels in report["correlations"].items():
        for level, fields in levels.items():
            correlations.append({"metric": metric, "level": level, "fields": fields})
    context = {
        "campaign": campaign,
        "report": report,
        "correlations": correlations,
        "fields": ("overall", "precision", "recall"),
        "methods": ("pearson", "spearman", "kendall"),
        "scatter_metric": request.GET.get("metric") or next(iter(report["correlations"]), ""),
        "metric_names": list(report["correlations"]),
        "available": _available_metrics(),
        **stale,
    }
    return render(request, "metrics_bridge/thumbs.html", context)


@roles_required(ADMIN)
@require_POST
def thumbs_compute(request, campaign_id: int):
    """Who: admins. Start a metric run on the campaign's dataset (the campaign's corpora are part of it)."""
    campaigns = Campaign.objects.select_related("dataset")
    campaign = get_object_or_404(campaigns, pk=campaign_id, task_type=Campaign.TaskType.THUMBS)
    return _start_run(request, campaign.dataset, reverse("metrics_bridge:thumbs_dashboard", args=[campaign.pk]))


# --- One caption ------------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def caption_page(request, caption_id: int):
    """Who: admins. The clip player, the caption, its references, every score, ratings, pair outcomes, X-ACE graphs."""
    caption = get_object_or_404(Caption.objects.select_related("clip__dataset", "system"), pk=caption_id)
    data = dashboards.caption_page_data(caption=caption)
    # In use: against all of the clip's references, under its current gold annotation for X-ACE (what leaderboards
    # and THumBS correlations read), X-ACE first; earlier gold or versions behind a toggle; the pair protocol apart.
    scores = dashboards.caption_scores_by_use(caption=caption, references=tuple(data["references"]))
    xace = next((s for s in scores.in_use if s.metric in XACE_VARIANTS and s.details.get("factors")), None)
    context = {
        "caption": caption,
        "clip": caption.clip,
        "audio_url": reverse("annotation:clip-audio", args=[caption.clip_id]) if caption.clip.audio else "",
        "scores": scores.in_use,
        "superseded_scores": scores.superseded,
        "other_scores": scores.protocol,
        "has_gold": scores.gold is not None,
        "xace": xace,
        "xace_against_gold": bool(xace and xace.details.get("reference_from") == "expert_annotation"),
        **data,
    }
    return render(request, "metrics_bridge/caption.html", context)


# --- Plots ------------------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def plot(request, kind: str, object_id: int):
    """Who: admins. An SVG plot, cached until its data changes; ?download=1 saves it as a file."""
    if kind not in dashboard_plots.PLOT_KINDS:
        raise Http404("no such plot")
    parameters = {key: request.GET.get(key, "") for key in ("metric", "field", "system", "side", "metrics", "score")}
    svg = dashboard_plots.plot_svg(kind=kind, object_id=object_id, parameters=parameters)
    response = HttpResponse(svg, content_type="image/svg+xml")
    if request.GET.get("download"):
        suffix = "-".join(value for value in parameters.values() if value)
        response["Content-Disposition"] = (
            f'attachment; filename="{kind}-{object_id}{"-" + suffix if suffix else ""}.svg"'
        )
    return response
