"""Which metrics the agreement chart draws: at most eight by default, the best of each kind first; the admin's pick."""

from metrics_bridge.services.dashboards import CHART_METRICS, agreement_chart_metrics, metric_family

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
