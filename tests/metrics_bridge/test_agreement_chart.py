"""Which metrics the agreement chart draws: at most eight by default, the best of each kind first; the admin's pick.
And each figure's 95 % interval: a line through its dot, from the interval's low to its high end, on the split's
panel and the metric's row; a figure without an interval gets none."""

from metrics_bridge import plots
from metrics_bridge.services.evaluation.dashboards import CHART_METRICS, agreement_chart_metrics, metric_family

ROWS = {
    name: {"total": total}
    for name, total in [
        ("BLEU_1", 70.0),
        ("BLEU_2", 69.0),
        ("BLEU_3", 68.0),
        ("BLEU_4", 67.0),
        ("METEOR", 71.0),
        ("ROUGE_L", 66.0),
        ("CIDEr_D", 72.5),
        ("SPICE", 60.0),
        ("SBERT", 76.0),
        ("FENSE", 75.0),
        ("DATE", 55.0),
        ("XACE", 74.0),
        ("XACE_E", 79.0),
        ("XACE_S", 50.0),
        ("BERTScore", 73.0),
    ]
}


def test_default_is_the_best_of_each_kind_then_the_next_best():
    chosen = agreement_chart_metrics(ROWS)
    assert len(chosen) == CHART_METRICS == 8
    # the best of every kind is in: n-gram CIDEr_D, embedding SBERT, audio graph XACE, its factors XACE_E
    assert {"CIDEr_D", "SBERT", "XACE", "XACE_E"} <= set(chosen)
    # then the best of the rest by total: FENSE 75, BERTScore 73, METEOR 71, BLEU_1 70
    assert set(chosen) == {"CIDEr_D", "SBERT", "XACE", "XACE_E", "FENSE", "BERTScore", "METEOR", "BLEU_1"}
    assert chosen == [name for name in ROWS if name in chosen]  # in the table's order


def test_the_admins_pick_wins_even_past_eight():
    pick = list(ROWS)[:10] + ["NOT_A_METRIC"]
    assert agreement_chart_metrics(ROWS, pick) == list(ROWS)[:10]


def test_families():
    assert [metric_family(name) for name in ("BLEU_4", "SPIDEr", "SBERT", "XACE_CAPTIONS", "XACE_CAPTIONS_R")] == [
        "n-gram",
        "n-gram",
        "embedding",
        "audio graph",
        "audio graph factor",
    ]


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
