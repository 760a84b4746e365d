"""metric_scores_upsert: new scores are inserted, scores already stored for the same identity are updated."""

import json

import pytest
from django.db import transaction

from corpus.models import Dataset
from metrics_bridge.models import MetricRun, MetricScore, ReferenceSet
from metrics_bridge.services.runs.score_storage import ScoreRow, metric_scores_upsert
from ratings.services.pairwise_import import pairwise_judgements_import

# db_specific: bulk_sql writes scores with engine-specific SQL
pytestmark = [pytest.mark.django_db, pytest.mark.db_specific]


@pytest.fixture
def identities(shared_dir):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:1]
    pairwise_judgements_import(data=items, dataset_name="storage-sample", source_name="clotho_eval.json")
    dataset = Dataset.objects.get(name="storage-sample")
    captions = list(dataset.clips.first().captions.order_by("pk")[:3])
    reference_set = ReferenceSet.objects.create(key="k" * 64, texts=["a dog barks"], context="test")
    return [(caption.pk, reference_set.pk) for caption in captions], dataset


def rows_of(identities, values, *, version="v1"):
    return [
        ScoreRow(metric="BLEU_1", version=version, caption_id=caption_id, reference_set_id=refs, value=value,
                 details={"n": value} if value is not None else {})
        for (caption_id, refs), value in zip(identities, values, strict=True)
    ]


def stored(version="v1"):
    return {
        (row.caption_id, row.reference_set_id): (row.value, row.details, row.run_id, row.created_at)
        for row in MetricScore.objects.filter(metric="BLEU_1", version=version)
    }


def test_new_scores_are_inserted_and_a_rerun_updates_them_in_place(identities):
    pairs, dataset = identities
    first_run = MetricRun.objects.create(dataset=dataset, metrics=["BLEU_1"])
    second_run = MetricRun.objects.create(dataset=dataset, metrics=["BLEU_1"])
    with transaction.atomic():
        assert metric_scores_upsert(rows=rows_of(pairs[:2], [0.1, 0.2]), run_id=first_run.pk) == 2
    before = stored()
    assert {key: value[:3] for key, value in before.items()} == {
        pairs[0]: (0.1, {"n": 0.1}, first_run.pk),
        pairs[1]: (0.2, {"n": 0.2}, first_run.pk),
    }
    ids_before = set(MetricScore.objects.values_list("pk", flat=True))

    # One identity already stored with another value, one stored with the same value, one new.
    with transaction.atomic():
        metric_scores_upsert(rows=rows_of(pairs, [0.5, 0.2, None]), run_id=second_run.pk)

    after = stored()
    assert {key: value[:3] for key, value in after.items()} == {
        pairs[0]: (0.5, {"n": 0.5}, second_run.pk),
        pairs[1]: (0.2, {"n": 0.2}, second_run.pk),
        pairs[2]: (None, {}, second_run.pk),
    }
    assert after[pairs[0]][3] == before[pairs[0]][3]  # an update keeps the row's created_at
    assert ids_before <= set(MetricScore.objects.values_list("pk", flat=True))  # updated in place
    assert MetricScore.objects.count() == 3


def test_another_version_is_a_new_row_beside_the_old_one(identities):
    pairs, _ = identities
    with transaction.atomic():
        metric_scores_upsert(rows=rows_of(pairs[:1], [0.1]), run_id=None)
        metric_scores_upsert(rows=rows_of(pairs[:1], [0.9], version="v2"), run_id=None)
    assert stored()[pairs[0]][0] == 0.1
    assert stored("v2")[pairs[0]][0] == 0.9


def test_a_repeated_identity_in_one_call_keeps_the_last_value(identities):
    pairs, _ = identities
    with transaction.atomic():
        stored_count = metric_scores_upsert(rows=rows_of([pairs[0], pairs[1], pairs[0]], [0.1, 0.2, 0.3]), run_id=None)
    assert stored_count == 2
    assert {key: value[0] for key, value in stored().items()} == {pairs[0]: 0.3, pairs[1]: 0.2}


def test_thousands_of_rows_span_several_statements(identities, monkeypatch):
    from metrics_bridge.services.runs import bulk_sql

    pairs, _ = identities
    monkeypatch.setattr(bulk_sql, "rows_per_statement", lambda columns: 2)  # 5 versions x 3 captions: 8 statements
    rows = [row for version in range(5) for row in rows_of(pairs, [0.1, 0.2, 0.3], version=f"v{version}")]
    with transaction.atomic():
        assert metric_scores_upsert(rows=rows, run_id=None) == 15
    with transaction.atomic():  # again, with new values: every row is updated through the fallback
        metric_scores_upsert(rows=[row._replace(value=row.value + 1) for row in rows], run_id=None)
    assert MetricScore.objects.count() == 15
    assert sorted(MetricScore.objects.values_list("value", flat=True)) == sorted([1.1, 1.2, 1.3] * 5)
