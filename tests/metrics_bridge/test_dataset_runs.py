"""One notion of results: a metric run started from any page computes everything every page shows for its metrics."""

import pytest

from corpus.models import Caption, Dataset
from metrics_bridge.models import MetricRun, MetricRunChunk
from metrics_bridge.services.evaluation.dashboards import agreement_page_data, leaderboard_page_data, thumbs_page_data
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from ratings.models import Campaign
from tests.metrics_bridge.dashboard_data import clotho_slice, rated_thumbs_campaign

pytestmark = pytest.mark.django_db
METRICS = ["ROUGE_L", "CIDEr_D"]  # a caption-mean metric and a corpus-level one


@pytest.fixture
def dataset(shared_dir) -> Dataset:
    return clotho_slice(shared_dir, name="one-run", clips=10)


@pytest.fixture
def campaign(dataset, make_user) -> Campaign:
    return rated_thumbs_campaign(
        dataset, [make_user("r1", "rater"), make_user("r2", "rater")], name="one-run-thumbs", captions=16
    )


def pycocoevalcap_system_scores(systems: dict[str, list[tuple[str, list[str]]]]) -> dict[str, dict[str, float]]:
    """The independent reference: pycocoevalcap 1.2's corpus ROUGE-L and CIDEr-D over each system's captions
    ((caption, references) each), tokenized in one PTBTokenizer call per side."""
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    keys = [(system, i) for system, captions in systems.items() for i in range(len(captions))]
    tokenizer = PTBTokenizer()
    references = tokenizer.tokenize({k: [{"caption": r} for r in systems[k[0]][k[1]][1]] for k in keys})
    candidates = tokenizer.tokenize({k: [{"caption": systems[k[0]][k[1]][0]}] for k in keys})
    result = {}
    for system in systems:
        own = [k for k in keys if k[0] == system]
        gts, res = {k: references[k] for k in own}, {k: candidates[k] for k in own}
        result[system] = {"ROUGE_L": Rouge().compute_score(gts, res)[0], "CIDEr_D": Cider().compute_score(gts, res)[0]}
    return result


@pytest.mark.parametrize("page", ["leaderboard", "agreement", "thumbs"])
def test_a_run_started_on_any_page_fills_every_page(
    client, make_user, dataset, campaign, page, django_capture_on_commit_callbacks
):
    # Given an admin on one of the dashboards, before anything was computed
    client.force_login(make_user("boss", staff=True))
    assert set(METRICS) <= set(leaderboard_page_data(dataset=dataset)["unavailable"])
    compute = {
        "leaderboard": f"/metrics/datasets/{dataset.pk}/leaderboard/compute/",
        "agreement": f"/metrics/datasets/{dataset.pk}/agreement/compute/",
        "thumbs": f"/metrics/campaigns/{campaign.pk}/thumbs/compute/",
    }[page]

    # When they press Compute for ROUGE-L and CIDEr-D (tasks run eagerly here: the run ends at once)
    with django_capture_on_commit_callbacks(execute=True):  # the chunks' messages leave on commit
        response = client.post(compute, {"metrics": METRICS})
    run = MetricRun.objects.get()
    assert response.status_code == 302 and response.url.endswith(f"?run={run.pk}")

    # Then one run did all of it, with one progress: caption chunks, the campaign's corpus, system chunks
    assert run.status == MetricRun.Status.DONE and run.chunks_done == run.chunks_total
    kinds = {
        ("system" if chunk.requests[0].get("system_level") else "caption", chunk.metric) for chunk in run.chunks.all()
    }
    assert kinds == {("caption", "ROUGE_L"), ("caption", "CIDEr_D"), ("system", "ROUGE_L"), ("system", "CIDEr_D")}
    assert run.chunks.filter(status=MetricRunChunk.Status.DONE).count() == run.chunks_total

    # and no page says "not computed" for its metrics
    leaderboard = leaderboard_page_data(dataset=dataset)
    agreement = agreement_page_data(dataset=dataset)
    thumbs = thumbs_page_data(campaign=campaign)
    for metric in METRICS:
        assert metric not in leaderboard["unavailable"], leaderboard["unavailable"].get(metric)
        assert metric not in agreement["unavailable"], agreement["unavailable"].get(metric)
        assert metric in agreement["metrics"] and metric in thumbs["correlations"]
        assert leaderboard["rank_agreement"][metric]["systems"] >= 2

    # and the leaderboard's system values are pycocoevalcap's corpus scores of each system's captions
    references = {}
    for clip_id, text in (
        Caption.objects.filter(clip__dataset=dataset, role="reference")
        .order_by("position")
        .values_list("clip_id", "text")
    ):
        references.setdefault(clip_id, []).append(text)
    systems = {}
    for row in leaderboard["systems"]:
        captions = Caption.objects.filter(clip__dataset=dataset, system__name=row["system"], superseded_at__isnull=True)
        distinct = sorted({(caption.clip_id, caption.text) for caption in captions})
        systems[row["system"]] = [(text, references[clip_id]) for clip_id, text in distinct]
    expected = pycocoevalcap_system_scores(systems)
    for row in leaderboard["systems"]:
        for metric in METRICS:
            assert row["metrics"][metric] == pytest.approx(expected[row["system"]][metric], abs=1e-9), row["system"]

    # and a second press has nothing left to compute
    assert dataset_run_create(dataset=dataset, metric_names=METRICS).chunks_total == 0


def test_system_chunks_come_last_so_they_read_the_caption_scores(dataset):
    run = dataset_run_create(dataset=dataset, metric_names=["ROUGE_L", "BLEU_4"])
    chunks = list(run.chunks.order_by("index"))
    is_system = [bool(chunk.requests[0].get("system_level")) for chunk in chunks]
    assert any(is_system) and not all(is_system)
    assert is_system == sorted(is_system), "a system chunk was planned before a caption chunk"
