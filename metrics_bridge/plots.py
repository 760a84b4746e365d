"""Server-side plots as SVG (matplotlib, Agg backend). Plain Python: takes numbers, returns SVG text.

Every plot has labelled axes with units, a title naming what it shows, and no external resources
(fonts stay text, so the SVG is small and searchable). Callers cache the SVG by a fingerprint of the
data (metrics_bridge/services/evaluation/dashboard_cache.py).
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Sequence

COLORS = ["#2f6db5", "#e08a1e", "#3a9a5b", "#c0392b", "#7e57c2", "#8d6e63", "#d81b60", "#546e7a"]
#: Okabe & Ito's colour-blind-safe palette (yellow left out: too light on white), and a marker per series as well
SAFE_COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#999933"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
#: points: at the width the pages show plots (about 10 in at 96 px per inch), 10 pt is 13 px
STATUS_COLORS = {"matched": "#cdeedd", "missed": "#ffe9b8", "hallucinated": "#f8d0cc", "neutral": "#e6ecf3"}
#: Stored SVGs are keyed by it: change it when a plot draws something new, else the old drawing is served until
#: the data changes (the agreement chart's intervals were missing on every dataset computed before them).
REVISION = 2


@functools.cache
def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported on first use: the web server and the management
    commands import this module with the views, and matplotlib takes ~0.3 s to import."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _svg(figure) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "caption-eval"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(figure)
    return buffer.getvalue()


def _empty(message: str, width: float = 6, height: float = 2) -> str:
    figure, axes = _pyplot().subplots(figsize=(width, height))
    axes.axis("off")
    axes.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555")
    return _svg(figure)


def _finite(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def agreement_dots(
    *,
    splits: Sequence[str],
    metrics: dict[str, dict[str, float | None]],
    pair_counts: dict[str, int],
    title: str,
    intervals: dict[str, dict[str, Sequence]] | None = None,
) -> str:
    """Small multiples, one panel per split (HC / HI / HM / MM / total): each metric a dot (its colour and marker the
    same in every panel) at its agreement with people in %, best metric of the total on top; 50 % is chance.

    `intervals` (metric -> split -> (low, high)) draws each figure's 95 % interval as a line through its dot: on a
    split of a few dozen pairs the dots alone suggest an order the data cannot tell apart."""
    intervals = intervals or {}
    if not metrics:
        return _empty("No metric scores yet: compute some to see this chart.")
    names = sorted(metrics, key=lambda name: -(metrics[name].get("total") or 0))
    pyplot = _pyplot()
    with _readable_text():
        figure, panels = pyplot.subplots(
            1, len(splits), sharey=True, figsize=(10, 0.38 * len(names) + 1.9), squeeze=False
        )
        for panel, split in zip(panels[0], splits, strict=True):
            panel.axvline(50, color="#888", linewidth=0.9, linestyle="--")
            for row, name in enumerate(names):
                value = metrics[name].get(split)
                if not _finite(value):
                    continue
                style = {"color": SAFE_COLORS[row % len(SAFE_COLORS)], "marker": MARKERS[row % len(MARKERS)]}
                low, high = (list(intervals.get(name, {}).get(split) or ()) + [None, None])[:2]
                if _finite(low) and _finite(high):
                    panel.plot([low, high], [row, row], color=style["color"], linewidth=2, alpha=0.6, clip_on=False)
                panel.plot([value], [row], linestyle="none", markersize=8, label=name, clip_on=False, **style)
            panel.set_title(f"{split}\n(n = {pair_counts.get(split, 0)} pairs)")
            panel.set_xlim(0, 100)
            panel.set_xticks([0, 50, 100])
            panel.grid(axis="x", alpha=0.3)
            panel.set_ylim(len(names) - 0.5, -0.5)
        panels[0][0].set_yticks(range(len(names)), names)
        label = "agreement with people (% of pairs with a human preference; dashed: chance)"
        if intervals:
            label += "\nlines: 95% bootstrap interval over clips"
        figure.supxlabel(label)
        figure.suptitle(title)
        figure.tight_layout()
        return _svg(figure)


def _readable_text():
    """Text sizes for plots shown at page width: ticks and labels 10-11 pt (13-15 px), titles 12 pt."""
    import matplotlib

    return matplotlib.rc_context(
        {
            "font.size": 11,
            "axes.titlesize": 11,
            "axes.labelsize": 11,
            "xtick.labelsize": 10.5,
            "ytick.labelsize": 10.5,
            "figure.titlesize": 12,
            "legend.fontsize": 10.5,
        }
    )


def system_bars(
    *, systems: Sequence[str], values: Sequence[float | None], intervals: Sequence, ylabel: str, title: str
) -> str:
    """One bar per system, sorted by value, with its 95% interval as an error bar."""
    rows = [(s, v, ci) for s, v, ci in zip(systems, values, intervals, strict=True) if _finite(v)]
    if not rows:
        return _empty("No system has a value for this yet.")
    rows.sort(key=lambda row: row[1], reverse=True)
    with _readable_text():
        return _system_bars(rows, ylabel, title)


def _system_bars(rows, ylabel: str, title: str) -> str:
    """Horizontal bars, best on top, each system's name on its own line above its bar: the chart grows in height
    with the systems, not in width, so it stays readable at a phone's width (vertical bars needed 600 px and were
    cut after four of seven systems at 390 px)."""
    import textwrap

    count = len(rows)
    figure, axes = _pyplot().subplots(figsize=(4.3, 1.5 + 0.62 * count))
    positions = list(range(count))
    values = [v for _, v, _ in rows]
    lower = [v - ci[0] if ci else 0 for _, v, ci in rows]
    upper = [ci[1] - v if ci else 0 for _, v, ci in rows]
    axes.barh(positions, values, height=0.42, color=COLORS[0], xerr=[lower, upper], capsize=3, ecolor="#333")
    for position, (name, value, _) in zip(positions, rows, strict=True):
        axes.text(0, position - 0.3, f"{name}  {value:.3f}", ha="left", va="bottom", fontsize=10)
    axes.set_yticks([])
    axes.set_ylim(count - 0.5, -0.95)  # best on top, room for the first name
    right = max([ci[1] for _, _, ci in rows if ci] + values)
    axes.set_xlim(0, max(right * 1.05, 1e-9) if right > 0 else 1)
    axes.set_xlabel(f"{ylabel}\n(error bars: 95% bootstrap interval)")
    axes.set_title(textwrap.fill(title, 42))
    axes.grid(axis="x", alpha=0.3)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    return _svg(figure)


def metric_scatter(
    *, metric: Sequence[float], human: Sequence[float], metric_name: str, human_label: str, title: str
) -> str:
    """Metric vs human score per caption with the least-squares regression line."""
    import numpy as np

    pairs = [(m, h) for m, h in zip(metric, human, strict=True) if _finite(m) and _finite(h)]
    if len(pairs) < 2:
        return _empty(f"Fewer than two rated captions have a {metric_name} score.")
    with _readable_text():
        return _scatter(
            np.array([m for m, _ in pairs]), np.array([h for _, h in pairs]), metric_name, human_label, title
        )


def _scatter(x, y, metric_name: str, human_label: str, title: str) -> str:
    import numpy as np

    figure, axes = _pyplot().subplots(figsize=(7.5, 5))
    axes.scatter(x, y, s=14, alpha=0.6, color=COLORS[0], edgecolors="none")
    if np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        line_x = np.linspace(x.min(), x.max(), 50)
        axes.plot(
            line_x,
            slope * line_x + intercept,
            color=COLORS[3],
            linewidth=1.5,
            label=f"y = {slope:.2f} x + {intercept:.2f}",
        )
        axes.legend(loc="lower right")
    axes.set_xlabel(f"{metric_name} (caption score against all references)")
    axes.set_ylabel(human_label)
    axes.set_title(f"{title} (n = {len(x)} captions)")
    axes.grid(alpha=0.3)
    return _svg(figure)


def attribute_bars(*, categories: dict[str, dict], title: str) -> str:
    """X-ACE attribute sub-category precision and recall (0-1) per category."""
    rows = [
        (name, values)
        for name, values in categories.items()
        if _finite(values.get("precision")) or _finite(values.get("recall"))
    ]
    if not rows:
        return _empty("No attribute matched a tag category.")
    figure, axes = _pyplot().subplots(figsize=(7, 3.6))
    positions = range(len(rows))
    for offset, key, color in ((-0.2, "precision", COLORS[0]), (0.2, "recall", COLORS[1])):
        values = [v.get(key) if _finite(v.get(key)) else 0 for _, v in rows]
        axes.bar([p + offset for p in positions], values, width=0.4, label=key, color=color)
    axes.set_xticks(list(positions), [name for name, _ in rows], rotation=30, ha="right")
    axes.set_ylim(0, 1)
    axes.set_ylabel("attribute match (0-1)")
    axes.set_xlabel("attribute category (AudioCaps-F tag library)")
    axes.set_title(title)
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    return _svg(figure)


def audio_graph(*, graph: dict, statuses: dict[str, str], title: str, per_row: int = 4) -> str:
    """An X-ACE audio graph: event boxes (bold) in rows of `per_row`, each with its sources and attributes
    below it, then the temporal relations between events as "a -relation-> b" boxes.

    `statuses` maps "event:<name>", "source:<event>/<name>", "attr:<event>/<name>", "relation:<a> <kind> <b>"
    to matched / missed / hallucinated (the box colour); other nodes are neutral."""
    events = list((graph.get("node") or {}).items())
    if not events:
        return _empty("(no events)", 4, 1.2)
    relations = []
    for key, relation in (graph.get("relationship") or {}).items():
        first, _, second = key.partition("|&|")
        relations.append((first, relation, second))
    columns = min(per_row, len(events))
    event_rows = [events[start : start + per_row] for start in range(0, len(events), per_row)]
    heights = [1 + max(len(n.get("source", [])) + len(n.get("attr", [])) for _, n in row) for row in event_rows]
    relation_lines = math.ceil(len(relations) / 2)
    total = sum(heights) + len(event_rows) * 0.6 + (relation_lines + 1 if relations else 0)
    figure, axes = _pyplot().subplots(figsize=(max(4.0, 2.7 * columns), 0.42 * total + 0.6))
    axes.axis("off")
    axes.set_xlim(-0.6, columns - 0.4)
    axes.set_ylim(-total, 0.6)

    def box(x, y, text, status, bold=False):
        colour = STATUS_COLORS.get(status, STATUS_COLORS["neutral"])
        axes.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=8.5,
            fontweight="bold" if bold else "normal",
            bbox={"boxstyle": "round,pad=0.3", "facecolor": colour, "edgecolor": "#777"},
        )

    top = 0.0
    for row, height in zip(event_rows, heights, strict=True):
        for column, (event, node) in enumerate(row):
            box(column, top, event, statuses.get(f"event:{event}", "neutral"), bold=True)
            children = [("source", s) for s in node.get("source", [])] + [("attr", a) for a in node.get("attr", [])]
            for depth, (kind, text) in enumerate(children, start=1):
                axes.plot([column, column], [top - depth + 0.3, top - depth + 0.7], color="#aaa", linewidth=0.8)
                label = f"{'source' if kind == 'source' else 'attribute'}: {text}"
                box(column, top - depth, label, statuses.get(f"{kind}:{event}/{text}", "neutral"))
        top -= height + 0.6
    if relations:
        axes.text(-0.55, top, "relations", fontsize=8.5, color="#555", va="center")
        top -= 1
        for index, (first, relation, second) in enumerate(relations):
            x = (columns - 1) * (0.25 if index % 2 == 0 else 0.75) if columns > 1 else 0
            status = statuses.get(f"relation:{first} {relation} {second}", "neutral")
            box(x, top - index // 2, f"{first} —{relation}→ {second}", status)
    axes.set_title(title, fontsize=10)
    return _svg(figure)


def graph_matches(
    *,
    candidate: dict,
    reference: dict,
    matches: Sequence[tuple[str, str, float]],
    statuses: dict[str, dict[str, str]],
    titles: tuple[str, str],
) -> str:
    """Two audio graphs side by side (the caption's on the left, e.g. the gold annotation's on the right), each
    event a box listing its sources and attributes, and a line with the match score between matched events.

    `matches`: (candidate event, reference event, score); `statuses`: {"candidate": ..., "reference": ...} as
    audio_graph takes them (box colours: matched / missed / hallucinated)."""
    sides = {
        "candidate": list((candidate.get("node") or {}).items()),
        "reference": list((reference.get("node") or {}).items()),
    }
    if not sides["candidate"] and not sides["reference"]:
        return _empty("(no events on either side)", 6, 1.2)

    def lines(node: dict) -> int:
        return 1 + len(node.get("source", [])) + len(node.get("attr", []))

    heights = {side: [lines(node) for _, node in events] for side, events in sides.items()}
    total = max(sum(h) + 1.2 * len(h) for h in heights.values()) + 0.5
    figure, axes = _pyplot().subplots(figsize=(8.6, max(2.2, 0.34 * total + 0.8)))
    axes.axis("off")
    axes.set_xlim(-1.6, 7.6)
    axes.set_ylim(-total, 1.0)
    centres: dict[str, dict[str, float]] = {"candidate": {}, "reference": {}}
    for side, x in (("candidate", 0.0), ("reference", 6.0)):
        axes.text(x, 0.6, titles[0 if side == "candidate" else 1], ha="center", fontsize=10, fontweight="bold")
        top = 0.0
        for (event, node), height in zip(sides[side], heights[side], strict=True):
            children = [f"source: {s}" for s in node.get("source", [])] + [
                f"attribute: {a}" for a in node.get("attr", [])
            ]
            status = statuses.get(side, {}).get(f"event:{event}", "neutral")
            middle = top - (height - 1) / 2
            axes.text(
                x,
                middle,
                "\n".join([event, *children]),
                ha="center",
                va="center",
                fontsize=8.5,
                linespacing=1.5,
                bbox={
                    "boxstyle": "round,pad=0.4",
                    "facecolor": STATUS_COLORS.get(status, STATUS_COLORS["neutral"]),
                    "edgecolor": "#777",
                },
            )
            centres[side][event] = middle
            top -= height + 1.2
    for first, second, score in matches:
        if first in centres["candidate"] and second in centres["reference"]:
            y0, y1 = centres["candidate"][first], centres["reference"][second]
            axes.annotate(
                "",
                xy=(4.55, y1),
                xytext=(1.45, y0),
                arrowprops={"arrowstyle": "-", "color": "#3a9a5b", "linewidth": 1.4},
            )
            axes.text(3.0, (y0 + y1) / 2 + 0.25, f"{score:.2f}", ha="center", fontsize=8, color="#2d6b45")
    return _svg(figure)
