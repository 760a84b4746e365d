"""Per-domain coverage is exact per metric: a metric stored on some datasets only averages those, and each cell says
which datasets it covers and which it misses (an "overall" of one metric was once the music value alone under a
cell claiming two datasets)."""

import pytest
from django.urls import reverse

from corpus.models import Dataset
from metrics_bridge.models import SystemScore
from metrics_bridge.services.evaluation.leaderboard import leaderboard_build, leaderboard_table
from metrics_bridge.tasks.runs import enqueue_chunks
from tests.metrics_bridge.test_leaderboard_domains import build

pytestmark = pytest.mark.django_db


def _stored(dataset_name: str, system: str, metric: str) -> SystemScore:
    return SystemScore.objects.get(dataset__name=dataset_name, system__name=system, metric=metric)


def test_a_metric_stored_on_one_domain_only_covers_that_domain_and_says_what_it_misses(client, make_user):
    build()
    for name in ("birds", "yard", "songs"):
        leaderboard_build(dataset=Dataset.objects.get(name=name), enqueue=enqueue_chunks, metric_names=["ROUGE_L"])
    # BLEU_4 (a corpus metric, like METEOR) only on the music dataset
    leaderboard_build(dataset=Dataset.objects.get(name="songs"), enqueue=enqueue_chunks, metric_names=["BLEU_4"])

    table = leaderboard_table(dataset=Dataset.objects.get(name="birds"), metric_names=["ROUGE_L", "BLEU_4"])
    a = table["domains"]["systems"]["A"]

    music_bleu = _stored("songs", "A", "BLEU_4").value
    assert a["overall"]["metrics"]["BLEU_4"] == pytest.approx(music_bleu)
    assert a["overall"]["coverage"]["BLEU_4"] == {"datasets": ["songs"], "captions": 2, "missing": ["birds", "yard"]}
    assert a["overall"]["coverage"]["ROUGE_L"] == {"datasets": ["birds", "songs", "yard"], "captions": 7, "missing": []}
    # ROUGE_L over all three datasets, weighted by captions (2 birds, 3 yard, 2 songs), from the stored values
    expected = sum(_stored(name, "A", "ROUGE_L").value * n for name, n in (("birds", 2), ("yard", 3), ("songs", 2)))
    assert a["overall"]["metrics"]["ROUGE_L"] == pytest.approx(expected / 7)
    # the cell's own claim covers only datasets where every asked metric is stored
    assert (a["overall"]["datasets"], a["overall"]["captions"], a["overall"]["missing"]) == (
        ["songs"],
        2,
        ["birds", "yard"],
    )
    assert a["sound"]["metrics"]["BLEU_4"] is None and a["sound"]["coverage"]["BLEU_4"]["missing"] == ["birds", "yard"]

    client.force_login(make_user("chief", "admin"))
    songs = Dataset.objects.get(name="songs")  # its own leaderboard has BLEU_4
    client.post(reverse("metrics_bridge:dashboard_refresh", args=["leaderboard", songs.pk]))
    page = client.get(reverse("metrics_bridge:leaderboard", args=[songs.pk]) + "?domain_metric=BLEU_4")
    html = page.content.decode()
    assert "Per domain: BLEU_4" in html and "not stored on birds, yard" in html
