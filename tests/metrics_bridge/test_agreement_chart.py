"""The agreement chart draws each figure's 95 % interval: a line through the dot, from the interval's low to its
high end, on the split's panel and the metric's row; a figure without an interval gets none."""

from metrics_bridge import plots

SPLITS = ["HC", "total"]
METRICS = {"SBERT": {"HC": 58.6, "total": 69.8}, "BLEU_4": {"HC": 52.9, "total": None}}
INTERVALS = {"SBERT": {"HC": [51.8, 65.2], "total": [67.2, 72.5]}, "BLEU_4": {"HC": [46.2, 59.3]}}


def test_each_figure_has_its_interval_drawn_through_its_dot(monkeypatch):
    figures = []
    monkeypatch.setattr(plots, "_svg", lambda figure: figures.append(figure) or "<svg/>")
    plots.agreement_dots(
        splits=SPLITS, metrics=METRICS, pair_counts={"HC": 210, "total": 1555}, title="t", intervals=INTERVALS
    )
    (figure,) = figures
    drawn = {}
    for split, panel in zip(SPLITS, figure.axes, strict=True):
        names = [label.get_text() for label in figure.axes[0].get_yticklabels()]
        for line in panel.get_lines():
            xs, ys = list(line.get_xdata()), list(line.get_ydata())
            if len(xs) == 2 and xs[0] != xs[1]:  # an interval (not the vertical chance line): on its metric's row
                assert ys[0] == ys[1]
                drawn[(names[int(ys[0])], split)] = xs
    assert drawn == {
        ("SBERT", "HC"): [51.8, 65.2],
        ("SBERT", "total"): [67.2, 72.5],
        ("BLEU_4", "HC"): [46.2, 59.3],
    }


def test_without_intervals_only_dots_are_drawn():
    svg = plots.agreement_dots(splits=SPLITS, metrics=METRICS, pair_counts={}, title="t")
    with_intervals = plots.agreement_dots(
        splits=SPLITS, metrics=METRICS, pair_counts={}, title="t", intervals=INTERVALS
    )
    assert "bootstrap interval" not in svg and "95% bootstrap interval over clips" in with_intervals
    # three more lines: one per finite interval
    assert with_intervals.count('id="line2d_') - svg.count('id="line2d_') == 3
