"""Admin dashboards: pairwise agreement, leaderboard, THumBS report, one caption, and their plots.

Views only parse the request, call a service and render; the numbers come from
metrics_bridge/services/dashboards.py (cached per data state) and the plots from metrics_bridge/plots.py.
"""

import csv
import io
import json

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.roles import ADMIN, roles_required
from annotation.models import Caption, Dataset
from metrics_bridge import plots
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.system_level import JUDGE_DIMENSIONS
from metrics_bridge.services import dashboards
from metrics_bridge.services.contexts import version_context_for
from metrics_bridge.services.dashboard_cache import cached_content, dataset_fingerprint
from metrics_bridge.services.system_scores import system_scores_run_create
from metrics_bridge.services.thumbs_report import thumbs_scores_run_create
from metrics_bridge.tasks import dispatch_metric_run, request_dashboard_refresh, start_metric_run
from ratings.models import Campaign

COLUMNS = dashboards.COLUMNS
#: X-ACE variants with a factor table on the leaderboard: (metric, report key, its factor metrics E / S / A / R)
XACE_TABLES = (
    ("XACE", "xace", ("XACE_E", "XACE_S", "XACE_A", "XACE_R")),
    ("XACE_CAPTIONS", "xace_captions", ("XACE_CAPTIONS_E", "XACE_CAPTIONS_S", "XACE_CAPTIONS_A", "XACE_CAPTIONS_R")),
)
XACE_VARIANTS = tuple(metric for metric, _, _ in XACE_TABLES)
XACE_FACTORS = tuple(name for _, _, factors in XACE_TABLES for name in factors)


def _available_metrics() -> list[str]:
    return registry.available_metric_names(version_context_for(dataset=None))


def _run_in_progress(request, dataset: Dataset) -> MetricRun | None:
    run_id = request.GET.get("run", "")
    return MetricRun.objects.filter(pk=int(run_id), dataset=dataset).first() if run_id.isdigit() else None


def _download(content: str | bytes, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _start_run(request, plan, page_url: str):
    """Plan a run for the ticked metrics, queue its chunks, and go back to the page that follows its progress."""
    try:
        run = plan(_metric_names_posted(request))
    except ValueError as error:
        messages.error(request, str(error))
        return redirect(page_url)
    dispatch_metric_run(run=run)
    return redirect(f"{page_url}?run={run.pk}")


def _fixed(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _metric_names_posted(request) -> list[str] | None:
    names = [name for name in request.POST.getlist("metrics") if name]
    return names or None


# --- Cached numbers: shown at once, recomputed on the browser's request when the data changed -------------


def _page_payload(request, kind: str, target, *, fresh: bool) -> tuple[dict | None, dict]:
    """(payload, template context about staleness). fresh=True (downloads) computes current numbers now."""
    if fresh:
        return dashboards.dashboard_refresh(kind=kind, target=target), {}
    state = dashboards.dashboard_state(kind=kind, target=target)
    if state.fresh:
        return state.payload, {}
    return state.payload, {
        "stale": True,
        "computed_at": state.computed_at,
        "refresh_url": reverse("metrics_bridge:dashboard_refresh", args=[kind, target.pk]),
    }


def _pending(request, kind: str, target, title: str):
    """First view of a dashboard: the page answers at once and the browser asks for the computation."""
    context = {"title": title, "refresh_url": reverse("metrics_bridge:dashboard_refresh", args=[kind, target.pk])}
    return render(request, "metrics_bridge/dashboard_pending.html", context)


@roles_required(ADMIN)
@require_http_methods(["GET", "POST"])
def dashboard_refresh(request, kind: str, object_id: int):
    """Who: admins. POST: compute the dashboard's numbers for the current data (queued for a worker when one
    is alive: the slow ones must not hold a web worker; inline otherwise). GET: whether they are current yet."""
    try:
        target = dashboards.dashboard_target(kind=kind, object_id=object_id)
    except (ValueError, Dataset.DoesNotExist, Campaign.DoesNotExist):
        raise Http404("no such dashboard") from None
    if request.method == "GET":
        return JsonResponse({"fresh": dashboards.dashboard_state(kind=kind, target=target).fresh})
    if request_dashboard_refresh(kind=kind, object_id=target.pk):
        return JsonResponse({"fresh": True})
    return JsonResponse({"fresh": False, "queued": True}, status=202)


# --- Pairwise agreement ---------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def dataset_agreement(request, dataset_id: int):
    """Who: admins. The HC/HI/HM/MM table of every metric with current scores, best per column, chart, downloads."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    download = request.GET.get("format")
    table, stale = _page_payload(request, "agreement", dataset, fresh=bool(download))
    if table is None:
        return _pending(request, "agreement", dataset, f"Agreement with human judgements: {dataset.name}")
    if download == "csv":
        return _download(agreement_csv(table), f"agreement-{dataset.name}.csv", "text/csv")
    if download == "xlsx":
        return _download(
            agreement_xlsx(table),
            f"agreement-{dataset.name}.xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    rows = [
        (name, [(row.get(c), row.get(c) is not None and row.get(c) == table["best"][c]) for c in COLUMNS])
        for name, row in table["metrics"].items()
    ]
    context = {
        "dataset": dataset,
        "rows": rows,
        "columns": COLUMNS,
        "pair_counts": [table["pairs"][column] for column in COLUMNS],
        "unavailable": table["unavailable"],
        "available": _available_metrics(),
        "run": _run_in_progress(request, dataset),
        **stale,
    }
    return render(request, "metrics_bridge/agreement.html", context)


def agreement_csv(table: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["metric", *COLUMNS])
    writer.writerow(["pairs (denominator)", *(table["pairs"][c] for c in COLUMNS)])
    for name, row in table["metrics"].items():
        writer.writerow([name, *("" if row.get(c) is None else row[c] for c in COLUMNS)])
    return out.getvalue()


def agreement_xlsx(table: dict) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Agreement"
    sheet.append([f"Agreement with human judgements: {table['dataset']} (% of pairs with a human preference)"])
    sheet.append(["metric", *COLUMNS])
    sheet.append(["pairs (denominator)", *(table["pairs"][c] for c in COLUMNS)])
    for name, row in table["metrics"].items():
        sheet.append([name, *(row.get(c) for c in COLUMNS)])
        for index, column in enumerate(COLUMNS, start=2):
            if row.get(column) is not None and row.get(column) == table["best"][column]:
                sheet.cell(row=sheet.max_row, column=index).font = Font(bold=True)
    for cell in sheet[2]:
        cell.font = Font(bold=True)
    if table.get("unavailable"):
        unavailable = workbook.create_sheet("Unavailable")
        unavailable.append(["metric", "reason"])
        for name, reason in table["unavailable"].items():
            unavailable.append([name, reason])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


@roles_required(ADMIN)
@require_POST
def agreement_compute(request, dataset_id: int):
    """Who: admins. Start a Celery run computing the ticked metrics' missing scores; the page shows its progress."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    try:
        run = start_metric_run(dataset=dataset, metric_names=_metric_names_posted(request), requested_by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect("metrics_bridge:dataset_agreement", dataset_id=dataset.pk)
    return redirect(reverse("metrics_bridge:dataset_agreement", args=[dataset.pk]) + f"?run={run.pk}")


# --- Leaderboard ----------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def leaderboard(request, dataset_id: int):
    """Who: admins. Systems with system-level metric values, human win rates / THumBS, Kendall tau per metric."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    download = request.GET.get("format")
    table, stale = _page_payload(request, "leaderboard", dataset, fresh=download in ("csv", "json"))
    if table is None:
        return _pending(request, "leaderboard", dataset, f"Leaderboard: {dataset.name}")
    if download in ("csv", "json"):
        from metrics_bridge.management.commands.leaderboard import leaderboard_csv

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
            (_fixed(table["rank_agreement"][m]["kendall_tau"], 3), table["rank_agreement"][m]["systems"])
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
        "run": _run_in_progress(request, dataset),
        **_domain_context(table, [row["system"] for row in systems], request.GET.get("domain_metric", "")),
        "judge_rows": [
            (name, [_fixed(breakdown.get(d), 2) for d in JUDGE_DIMENSIONS])
            for name, breakdown in sorted(table.get("judge", {}).items())
        ],
        **stale,
    }
    return render(request, "metrics_bridge/leaderboard.html", context)


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
            cells.append(
                (_fixed(value, 4), entry["captions"] if entry else 0, ", ".join(entry["datasets"]) if entry else "")
            )
        rows.append((name, cells))
    return {"domain_names": domains["domains"], "domain_rows": rows, "domain_metric": asked, "domain_metrics": metrics}


@roles_required(ADMIN)
@require_POST
def leaderboard_compute(request, dataset_id: int):
    """Who: admins. Start a Celery run computing the system scores the current captions lack."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    plan = lambda names: system_scores_run_create(dataset=dataset, metric_names=names, requested_by=request.user)  # noqa: E731
    return _start_run(request, plan, reverse("metrics_bridge:leaderboard", args=[dataset.pk]))


# --- THumBS -----------------------------------------------------------------------------------------------


@roles_required(ADMIN)
@require_safe
def thumbs_dashboard(request, campaign_id: int):
    """Who: admins. Completion, inter-rater agreement, metric correlations with CIs and rater bias of a campaign."""
    campaign = get_object_or_404(
        Campaign.objects.select_related("dataset"), pk=campaign_id, task_type=Campaign.TaskType.THUMBS
    )
    download = request.GET.get("format") == "json"
    report, stale = _page_payload(request, "thumbs", campaign, fresh=download)
    if report is None:
        return _pending(request, "thumbs", campaign, f"THumBS report: {campaign.name}")
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
        "run": _run_in_progress(request, campaign.dataset),
        **stale,
    }
    return render(request, "metrics_bridge/thumbs.html", context)


@roles_required(ADMIN)
@require_POST
def thumbs_compute(request, campaign_id: int):
    """Who: admins. Start a Celery run scoring the campaign's rated captions that lack scores."""
    campaign = get_object_or_404(Campaign, pk=campaign_id, task_type=Campaign.TaskType.THUMBS)
    plan = lambda names: thumbs_scores_run_create(  # noqa: E731
        campaign=campaign, metric_names=names, requested_by=request.user
    )
    return _start_run(request, plan, reverse("metrics_bridge:thumbs_dashboard", args=[campaign.pk]))


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

PLOT_KINDS = (
    "agreement-splits",
    "leaderboard-win-rate",
    "xace-attributes",
    "thumbs-scatter",
    "caption-graph",
    "caption-matches",
)


@roles_required(ADMIN)
@require_safe
def plot(request, kind: str, object_id: int):
    """Who: admins. An SVG plot, cached until its data changes; ?download=1 saves it as a file."""
    if kind not in PLOT_KINDS:
        raise Http404("no such plot")
    parameters = {key: request.GET.get(key, "") for key in ("metric", "field", "system", "side", "score")}
    svg = _plot_svg(kind, object_id, parameters)
    response = HttpResponse(svg, content_type="image/svg+xml")
    if request.GET.get("download"):
        suffix = "-".join(value for value in parameters.values() if value)
        response["Content-Disposition"] = (
            f'attachment; filename="{kind}-{object_id}{"-" + suffix if suffix else ""}.svg"'
        )
    return response


def _plot_svg(kind: str, object_id: int, parameters: dict) -> str:
    key = f"plot:{kind}:{object_id}:" + "|".join(f"{k}={v}" for k, v in sorted(parameters.items()))
    if kind in ("caption-graph", "caption-matches"):
        caption = get_object_or_404(Caption.objects.select_related("clip__dataset"), pk=object_id)
        fingerprint = dataset_fingerprint(dataset=caption.clip.dataset)
        build = _caption_graph if kind == "caption-graph" else _caption_matches
        return cached_content(key=key, fingerprint=fingerprint, build=lambda: build(caption, parameters))
    if kind == "thumbs-scatter":
        campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=object_id)
        fingerprint = dashboards.campaign_fingerprint(campaign=campaign)
        return cached_content(key=key, fingerprint=fingerprint, build=lambda: _thumbs_scatter(campaign, parameters))
    dataset = get_object_or_404(Dataset, pk=object_id)
    fingerprint = dataset_fingerprint(dataset=dataset)
    builders = {
        "agreement-splits": lambda: _agreement_bars(dataset),
        "leaderboard-win-rate": lambda: _win_rate_bars(dataset),
        "xace-attributes": lambda: _attribute_bars(dataset, parameters["system"], parameters["metric"]),
    }
    return cached_content(key=key, fingerprint=fingerprint, build=builders[kind])


def _agreement_bars(dataset: Dataset) -> str:
    table = dashboards.agreement_page_data(dataset=dataset)
    return plots.split_bars(
        splits=list(COLUMNS),
        metrics=table["metrics"],
        pair_counts=table["pairs"],
        title=f"Agreement with people per split: {dataset.name}",
    )


def _win_rate_bars(dataset: Dataset) -> str:
    table = dashboards.leaderboard_page_data(dataset=dataset)
    rows = table["systems"]
    return plots.system_bars(
        systems=[row["system"] for row in rows],
        values=[row["human"]["pairwise_win_rate"] for row in rows],
        intervals=[row.get("win_rate_ci") for row in rows],
        ylabel="human pairwise win rate (0-1)",
        title=f"Systems by human pairwise win rate: {dataset.name}",
    )


def _attribute_bars(dataset: Dataset, system: str, metric: str) -> str:
    keys = {name: key for name, key, _ in XACE_TABLES}
    metric = metric if metric in keys else "XACE"
    xace = dashboards.leaderboard_page_data(dataset=dataset).get(keys[metric], {})
    if system not in xace:
        return plots.split_bars(splits=[], metrics={}, pair_counts={}, title="")
    return plots.attribute_bars(
        categories=xace[system]["attribute_categories"], title=f"{metric} attribute categories: {system}"
    )


def _thumbs_scatter(campaign: Campaign, parameters: dict) -> str:
    metric = parameters["metric"]
    field = parameters["field"] if parameters["field"] in ("overall", "precision", "recall") else "overall"
    if metric not in registry.all_metric_names():
        raise Http404("unknown metric")
    metric_values, human = dashboards.thumbs_scatter_data(campaign=campaign, metric=metric, field=field)
    units = {
        "overall": "THumBS overall (points, -5 to 5)",
        "precision": "THumBS precision (1-5)",
        "recall": "THumBS recall (1-5)",
    }
    return plots.metric_scatter(
        metric=metric_values,
        human=human,
        metric_name=metric,
        human_label=f"mean {units[field]}",
        title=f"{metric} vs people: {campaign.name}",
    )


def _xace_score(caption: Caption, parameters: dict):
    """The X-ACE score ?score=<id> of this caption, else its newest one of ?metric= (default XACE)."""
    from metrics_bridge.models import MetricScore

    scores = MetricScore.objects.filter(caption=caption, metric__in=XACE_VARIANTS)
    if parameters["score"].isdigit():
        score = scores.filter(pk=int(parameters["score"])).first()
    else:
        metric = parameters["metric"] if parameters["metric"] in XACE_VARIANTS else "XACE"
        score = scores.filter(metric=metric).order_by("-created_at").first()
    if score is None or not score.details.get("graphs"):
        raise Http404("no X-ACE explanation for this caption")
    return score


def _caption_matches(caption: Caption, parameters: dict) -> str:
    score = _xace_score(caption, parameters)
    graphs = score.details["graphs"]
    matches = [
        (node["node"], node["match"], node["score"])
        for node in score.details.get("factors", {}).get("event", {}).get("matched", [])
        if node.get("match")
    ]
    gold = score.details.get("reference_from") == "expert_annotation"
    return plots.graph_matches(
        candidate=graphs.get("candidate", {}),
        reference=graphs.get("reference", {}),
        matches=matches,
        statuses={side: xace_node_statuses(score.details, side) for side in ("candidate", "reference")},
        titles=("caption graph", "gold annotation graph" if gold else "reference captions graph"),
    )


def _caption_graph(caption: Caption, parameters: dict) -> str:
    side = parameters["side"]
    score = _xace_score(caption, parameters)
    if side not in ("candidate", "reference"):
        raise Http404("no X-ACE explanation for this caption")
    graph = score.details.get("graphs", {}).get(side, {})
    return plots.audio_graph(graph=graph, statuses=xace_node_statuses(score.details, side), title=f"{side} graph")


def xace_node_statuses(details: dict, side: str) -> dict[str, str]:
    """Node statuses for drawing: candidate nodes matched / hallucinated, reference nodes matched / missed."""
    kinds = {"event": "event", "source": "source", "attribute": "attr", "relation": "relation"}
    statuses = {}
    for factor, detail in details.get("factors", {}).items():
        kind = kinds.get(factor)
        groups = ("matched", "hallucinated") if side == "candidate" else ("missed",)
        for group in groups:
            for node in detail.get(group, []):
                name = node.get("node", "")
                event = node.get("event")
                key = f"{kind}:{event}/{name}" if event and kind in ("source", "attr") else f"{kind}:{name}"
                statuses[key] = group
        if side == "reference":
            for node in detail.get("matched", []):
                match, event = node.get("match"), node.get("match_event")
                if match:
                    key = f"{kind}:{event}/{match}" if event and kind in ("source", "attr") else f"{kind}:{match}"
                    statuses.setdefault(key, "matched")
    return statuses
