"""The dashboards' plots: each one's data loaded (a stored dashboard table, a campaign's ratings, a caption's X-ACE
score) and drawn by metrics_bridge/plots.py, the SVG cached until the data changes
(metrics_bridge/services/evaluation/dashboard_cache.py).

Http404 says that a plot has nothing to draw (unknown metric, no X-ACE explanation, a dashboard being computed).
"""

from datetime import datetime

from django.http import Http404
from django.shortcuts import get_object_or_404

from corpus.models import Caption, Dataset
from metrics_bridge import plots
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation import dashboards
from metrics_bridge.services.evaluation.dashboard_cache import cached_content, dataset_fingerprint
from metrics_bridge.tasks.dashboards import request_dashboard_parts
from ratings.models import Campaign

COLUMNS = dashboards.COLUMNS
#: X-ACE variants with a factor table on the leaderboard: (metric, report key, its factor metrics E / S / A / R)
XACE_TABLES = (
    ("XACE", "xace", ("XACE_E", "XACE_S", "XACE_A", "XACE_R")),
    ("XACE_CAPTIONS", "xace_captions", ("XACE_CAPTIONS_E", "XACE_CAPTIONS_S", "XACE_CAPTIONS_A", "XACE_CAPTIONS_R")),
)
XACE_VARIANTS = tuple(metric for metric, _, _ in XACE_TABLES)
XACE_FACTORS = tuple(name for _, _, factors in XACE_TABLES for name in factors)
PLOT_KINDS = (
    "agreement-splits",
    "leaderboard-win-rate",
    "xace-attributes",
    "thumbs-scatter",
    "caption-graph",
    "caption-matches",
)


def plot_svg(*, kind: str, object_id: int, parameters: dict) -> str:
    """The SVG of a plot of one of PLOT_KINDS, cached until its data changes; Http404 when there is none."""
    key = f"plot:{plots.REVISION}:{kind}:{object_id}:" + "|".join(f"{k}={v}" for k, v in sorted(parameters.items()))
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
    table_kind = "agreement" if kind == "agreement-splits" else "leaderboard"
    table, computed_at = _stored_table(table_kind, dataset)
    builders = {
        "agreement-splits": lambda: _agreement_chart(dataset, table, parameters["metrics"]),
        "leaderboard-win-rate": lambda: _win_rate_bars(dataset, table),
        "xace-attributes": lambda: _attribute_bars(table, parameters["system"], parameters["metric"]),
    }
    # drawn from the stored table: redrawn when a new one is stored
    return cached_content(key=key, fingerprint=f"{table_kind}:{computed_at.isoformat()}", build=builders[kind])


def _stored_table(kind: str, dataset: Dataset) -> tuple[dict, datetime]:
    """A dashboard's stored table for its plots (a stale one is recomputed by the workers, as for its page)."""
    state = dashboards.dashboard_state(kind=kind, target=dataset)
    if not state.fresh:
        request_dashboard_parts(kind=kind, target=dataset)
        state = dashboards.dashboard_state(kind=kind, target=dataset)
    if state.payload is None:
        raise Http404("this dashboard is being computed")
    return state.payload, state.computed_at


def _agreement_chart(dataset: Dataset, table: dict, chosen: str) -> str:
    names = dashboards.agreement_chart_metrics(table["metrics"], [name for name in chosen.split(",") if name])
    return plots.agreement_dots(
        splits=[column for column in table.get("columns", COLUMNS) if column != "f1"],
        metrics={name: table["metrics"][name] for name in names},
        pair_counts=table["pairs"],
        title=f"Agreement with people per split: {dataset.name}",
        intervals=table.get("intervals", {}).get("intervals"),
    )


def _win_rate_bars(dataset: Dataset, table: dict) -> str:
    rows = table["systems"]
    return plots.system_bars(
        systems=[row["system"] for row in rows],
        values=[row["human"]["pairwise_win_rate"] for row in rows],
        intervals=[row.get("win_rate_ci") for row in rows],
        ylabel="human pairwise win rate (0-1)",
        title=f"Systems by human pairwise win rate: {dataset.name}",
    )


def _attribute_bars(table: dict, system: str, metric: str) -> str:
    keys = {name: key for name, key, _ in XACE_TABLES}
    metric = metric if metric in keys else "XACE"
    xace = table.get(keys[metric], {})
    if system not in xace:
        return plots.attribute_bars(categories={}, title="")
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
