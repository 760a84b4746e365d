"""A warm dashboard page runs a small fixed number of queries, whatever the data's size: each dataset's fingerprint
is read once per view (the agreement page's trained-elsewhere part reads every judged dataset's, together with its
own), the dataset page's counts are one aggregate per table. The bounds are the counts measured when they were set:
a page that starts reading a fingerprint again, or a query per row, fails here. The fingerprint still changes on
every change of the data it covers."""

import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpus.models import Caption, Dataset
from metrics_bridge.models import SystemScore
from metrics_bridge.services.evaluation.dashboard_cache import dataset_fingerprint, dataset_fingerprints
from metrics_bridge.services.evaluation.transfer import transfer_fingerprint
from ratings.models import Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db


def _import(shared_dir, name: str, items: slice) -> Dataset:
    data = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[items]
    pairwise_judgements_import(data=data, dataset_name=name, source_name=f"{name}.json")
    return Dataset.objects.get(name=name)


@pytest.fixture
def datasets(shared_dir) -> tuple[Dataset, Dataset]:
    return _import(shared_dir, "study", slice(0, 8)), _import(shared_dir, "elsewhere", slice(8, 16))


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


@pytest.fixture
def campaign(datasets, make_user) -> Campaign:
    campaign = Campaign.objects.create(name="thumbs", dataset=datasets[0], task_type="thumbs")
    captions = Caption.objects.filter(clip__dataset=datasets[0], role="candidate").order_by("pk")[:6]
    rater = make_user("r1", "rater")
    for index, caption in enumerate(captions):
        ThumbsRating.objects.create(
            rater=rater, caption=caption, campaign=campaign, precision=1 + index % 5, recall=2, fluency=Decimal("0")
        )
    return campaign


def _warm_queries(client, url: str) -> list[str]:
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200, url
    assert 'id="dashboard-stale"' not in page and "for the first time" not in page, url  # the stored numbers
    return [query["sql"] for query in queries]


def _vote_summaries(queries: list[str]) -> list[str]:
    """The fingerprint's aggregate over votes (one per reading of fingerprints)."""
    return [sql for sql in queries if sql.startswith("SELECT") and 'MAX("ratings_pairwisevote"."updated_at")' in sql]


def test_each_warm_dashboard_page_runs_a_small_fixed_number_of_queries(admin_client, datasets, campaign):
    study = datasets[0]
    for kind, object_id in (("agreement", study.pk), ("leaderboard", study.pk), ("thumbs", campaign.pk)):
        assert admin_client.post(f"/metrics/dashboards/{kind}/{object_id}/refresh/").json() == {"fresh": True}
    admin_client.post("/metrics/benchmark/refresh/")
    # measured when the bounds were set (sessions, roles and the page's own reads included)
    bounds = {
        f"/metrics/datasets/{study.pk}/agreement/": 18,
        f"/metrics/datasets/{study.pk}/agreement/pairs/?metric=BLEU_4": 14,
        f"/metrics/datasets/{study.pk}/leaderboard/": 18,
        f"/metrics/campaigns/{campaign.pk}/thumbs/": 15,
        "/metrics/benchmark/": 12,
        f"/datasets/{study.pk}/": 19,
    }
    counts = {}
    for url in bounds:
        queries = _warm_queries(admin_client, url)
        counts[url] = len(queries)
        # every fingerprint a page needs is read in one pass: both judged datasets' on the agreement page and
        # the benchmark, the page's dataset's elsewhere
        assert len(_vote_summaries(queries)) <= 1, (url, _vote_summaries(queries))
    assert all(counts[url] <= bound for url, bound in bounds.items()), counts


def test_the_agreement_page_reads_both_studies_fingerprints_in_one_pass(admin_client, datasets):
    study = datasets[0]
    assert admin_client.post(f"/metrics/dashboards/agreement/{study.pk}/refresh/").json() == {"fresh": True}

    queries = _warm_queries(admin_client, f"/metrics/datasets/{study.pk}/agreement/")

    (votes,) = _vote_summaries(queries)
    assert "GROUP BY" in votes  # the evaluated study and the other judged one together


def test_the_fingerprint_changes_with_the_data_it_covers_and_only_that_datasets(datasets, make_user):
    study, elsewhere = datasets
    before = dataset_fingerprints(datasets=[study, elsewhere])
    transfer_before = transfer_fingerprint(dataset=study)
    assert before[study.pk] == dataset_fingerprint(dataset=study)
    assert before[elsewhere.pk] == dataset_fingerprint(dataset=elsewhere)
    assert transfer_fingerprint(dataset=study, known=before) == transfer_before

    # a vote on the other study: its fingerprint and the trained-elsewhere figure's move, the study's does not
    pair = CaptionPair.objects.filter(clip__dataset=elsewhere).order_by("pk").first()
    PairwiseVote.objects.create(pair=pair, rater=make_user("late"), choice="a", source="import")
    after_vote = dataset_fingerprints(datasets=[study, elsewhere])
    assert after_vote[study.pk] == before[study.pk]
    assert after_vote[elsewhere.pk] != before[elsewhere.pk]
    assert transfer_fingerprint(dataset=study) != transfer_before

    # a caption edited in the study
    caption = Caption.objects.filter(clip__dataset=study).order_by("pk").first()
    caption.text += " loudly"
    caption.save()
    after_edit = dataset_fingerprint(dataset=study)
    assert after_edit != before[study.pk]

    # the vote deleted: the other study's data, and its fingerprint, are back to what they were
    PairwiseVote.objects.filter(pair=pair, rater__username="late").delete()
    assert dataset_fingerprint(dataset=elsewhere) != after_vote[elsewhere.pk]
    assert dataset_fingerprint(dataset=elsewhere) == before[elsewhere.pk]


def test_the_pairs_page_reads_one_stored_page_of_the_rows_the_filters_select(admin_client, shared_dir):
    from metrics_bridge.services.evaluation.benchmark import agreement_pairs

    study = _import(shared_dir, "paged", slice(0, 20))
    url = f"/metrics/datasets/{study.pk}/agreement/pairs/?metric=BLEU_4"
    assert admin_client.get(url).status_code == 200  # eager Celery: the worker's task stores the rows here
    every = agreement_pairs(dataset=study, metric="BLEU_4")["pairs"]  # the unpaged list, as the builder gives it
    wrong_hc = [row for row in every if row["split"] == "HC" and row["correct"] is False]
    assert len(every) > 100 and wrong_hc

    for query, expected in (("", every[100:200]), ("&split=HC&verdict=wrong", wrong_hc[:100])):
        number = 2 if not query else 1
        with CaptureQueriesContext(connection) as queries:
            page = admin_client.get(f"{url}{query}&page={number}").content.decode()
        assert 'id="pairs-table"' in page and f"({len(every) if not query else len(wrong_hc)} pairs)" in page
        assert page.count("<tr><td>") == len(expected)
        assert all(row["clip"] in page for row in expected)
        reads = [sql for sql in (q["sql"] for q in queries) if "metrics_bridge_dashboardcache" in sql]
        assert len(reads) == 2  # the header and the one page shown


def test_the_fingerprint_changes_when_votes_ratings_or_scores_are_edited_in_place(shared_dir, datasets, campaign):
    """Edits that add no row (a re-imported vote's new choice, a rating's new score) are seen through updated_at, and
    a system's new metric score through its own summary: a fingerprint that ignored votes, ratings or scores fails."""
    study = datasets[0]
    votes_before = PairwiseVote.objects.filter(pair__clip__dataset=study).count()
    fingerprints = [dataset_fingerprint(dataset=study)]

    # a vote's choice changed by importing the corrected file again
    data = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[0:8]
    choices = data[0]["HC"][4]
    choices[1] = 1 if choices[1] != 1 else -1
    summary = pairwise_judgements_import(data=data, dataset_name="study", source_name="study.json")
    assert summary.counts["votes"]["updated"] == 1
    assert PairwiseVote.objects.filter(pair__clip__dataset=study).count() == votes_before
    fingerprints.append(dataset_fingerprint(dataset=study))

    # a THumBS rating's precision edited
    rating = ThumbsRating.objects.filter(campaign=campaign).order_by("pk").first()
    rating.precision = 5 if rating.precision != 5 else 4
    rating.save()
    fingerprints.append(dataset_fingerprint(dataset=study))

    # a system's score stored for a metric
    caption = Caption.objects.filter(clip__dataset=study, system__isnull=False).order_by("pk").first()
    SystemScore.objects.create(dataset=study, system=caption.system, metric="BLEU_4", version="v", fingerprint="f")
    fingerprints.append(dataset_fingerprint(dataset=study))

    assert len(set(fingerprints)) == len(fingerprints)
