"""The run page's best and worst captions: the right ones, read from the (run, metric, value) index rather than by
sorting every score of the run (on a BRACE-size run that sort was most of the page's time under load)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from metrics_bridge.models import MetricScore, ReferenceSet
from metrics_bridge.selectors.runs import run_example_captions
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import execute_metric_run
from tests.metrics_bridge.dashboard_data import clotho_slice

# db_specific: the second test reads the query planner's choice of index on each engine
pytestmark = [pytest.mark.django_db, pytest.mark.db_specific]


@pytest.fixture
def finished_run(shared_dir):
    dataset = clotho_slice(shared_dir, name="examples", clips=6)
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L", "BLEU_1"])
    execute_metric_run(run=run)
    run.refresh_from_db()
    assert run.is_finished and run.metrics[0] == "ROUGE_L"
    return run


def _scores_against_all_references(run) -> list[tuple[float, int]]:
    """(value, caption id) of every score of the run's first metric against all references, read row by row."""
    rows = MetricScore.objects.filter(run=run, metric=run.metrics[0]).select_related("reference_set")
    return [(row.value, row.caption_id) for row in rows if row.reference_set.context == "" and row.value is not None]


def test_the_run_page_lists_the_highest_and_lowest_scored_captions(finished_run):
    # not listed: the run's second metric, a score against references of another context, a score that is null
    assert MetricScore.objects.filter(run=finished_run, metric="BLEU_1").exists()
    some = MetricScore.objects.filter(run=finished_run, metric="ROUGE_L").order_by("pk")[0]
    elsewhere = ReferenceSet.objects.create(key="e" * 64, texts=["a dog barks"], context="other")
    MetricScore.objects.create(
        metric="ROUGE_L",
        version=some.version,
        caption_id=some.caption_id,
        reference_set=elsewhere,
        value=5.0,
        run=finished_run,
    )
    MetricScore.objects.filter(pk=some.pk).update(value=None)
    scores = _scores_against_all_references(finished_run)
    assert len(scores) > 8 and len({value for value, _ in scores}) > 4
    best = sorted(scores, key=lambda score: (-score[0], score[1]))[:4]
    worst = sorted(scores)[:4]

    shown = run_example_captions(run=finished_run)

    expected = []
    for _, caption in best + worst[::-1]:
        if caption not in expected:
            expected.append(caption)
    assert [row["caption_id"] for row in shown] == expected
    assert [row["value"] for row in shown[:4]] == [value for value, _ in best]


def test_the_best_and_worst_are_read_in_value_order_from_the_runs_index(finished_run):
    # Given as many scores as a large run has per metric, under other metric names, and the planner's statistics
    template = list(MetricScore.objects.filter(run=finished_run, metric="ROUGE_L"))
    copies = [
        MetricScore(
            metric=f"COPY_{number}",
            version=score.version,
            caption_id=score.caption_id,
            reference_set_id=score.reference_set_id,
            value=score.value,
            run=finished_run,
        )
        for number in range(max(1, 3000 // len(template)))
        for score in template
    ]
    MetricScore.objects.bulk_create(copies, batch_size=500)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    # When the page reads the best captions
    with CaptureQueriesContext(connection) as queries:
        run_example_captions(run=finished_run)
    scores = MetricScore.objects.filter(
        run=finished_run, metric=finished_run.metrics[0], value__isnull=False, reference_set__context=""
    ).order_by("-value", "caption_id")[:4]

    # Then two queries, each planned on the (run, metric, value) index
    assert len(queries) == 2
    assert "score_run_metric_value" in scores.explain()
