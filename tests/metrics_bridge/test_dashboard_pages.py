"""Dashboards: admins only, the same numbers as the commands, downloads, plots, cache invalidation, submissions."""

import io
import json
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from openpyxl import load_workbook

from corpus.models import Caption, Dataset, SystemSubmission
from metrics_bridge import plots
from metrics_bridge.models import DashboardCache
from metrics_bridge.views import dashboards as views_dashboards
from ratings.models import Campaign, PairwiseVote, ThumbsRating
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = pytest.mark.django_db
METRICS = "BLEU_4,ROUGE_L"


@pytest.fixture
def dataset(shared_dir) -> Dataset:
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:8]
    pairwise_judgements_import(data=items, dataset_name="dash", source_name="clotho_eval.json")
    return Dataset.objects.get(name="dash")


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("boss", staff=True))
    return client


@pytest.fixture
def campaign(dataset, make_user) -> Campaign:
    campaign = Campaign.objects.create(name="dash-thumbs", dataset=dataset, task_type="thumbs")
    captions = list(
        Caption.objects.filter(clip__dataset=dataset, role="candidate", author_kind="machine").order_by("pk")[:12]
    )
    for number, rater in enumerate([make_user("r1", "rater"), make_user("r2", "rater")]):
        for index, caption in enumerate(captions):
            ThumbsRating.objects.create(
                rater=rater,
                caption=caption,
                campaign=campaign,
                precision=1 + (index + number) % 5,
                recall=1 + index % 5,
                fluency=Decimal("-0.1") * number,
            )
    return campaign


def fresh_page(client, url: str, kind: str, object_id: int) -> str:
    """The page after the browser's refresh request (what a visitor sees once the numbers are current)."""
    assert client.post(f"/metrics/dashboards/{kind}/{object_id}/refresh/").json() == {"fresh": True}
    page = client.get(url).content.decode()
    assert 'id="dashboard-stale"' not in page
    return page


def dashboard_urls(dataset, campaign, caption) -> list[str]:
    return [
        f"/metrics/datasets/{dataset.pk}/agreement/",
        f"/metrics/datasets/{dataset.pk}/agreement/?format=csv",
        f"/metrics/datasets/{dataset.pk}/leaderboard/",
        f"/metrics/datasets/{dataset.pk}/leaderboard/?format=json",
        f"/metrics/campaigns/{campaign.pk}/thumbs/",
        f"/metrics/captions/{caption.pk}/",
        f"/metrics/plots/agreement-splits/{dataset.pk}.svg",
        f"/metrics/plots/leaderboard-win-rate/{dataset.pk}.svg",
        "/metrics/systems/submit/",
    ]


def test_only_admins_reach_the_dashboards(client, make_user, dataset, campaign):
    caption = Caption.objects.filter(clip__dataset=dataset).first()
    urls = dashboard_urls(dataset, campaign, caption)
    for url in urls:
        assert client.get(url).status_code == 302, url  # anonymous: to the login page
    for role in ("rater", "annotator", "reviewer"):
        client.force_login(make_user(f"a-{role}", role))
        for url in urls:
            assert client.get(url).status_code == 403, (role, url)
    posts = [
        f"/metrics/datasets/{dataset.pk}/agreement/compute/",
        f"/metrics/datasets/{dataset.pk}/leaderboard/compute/",
    ]
    for url in [*posts, f"/metrics/campaigns/{campaign.pk}/thumbs/compute/"]:
        assert client.post(url, {"metrics": ["ROUGE_L"]}).status_code == 403
    assert not DashboardCache.objects.exists()


def test_agreement_page_and_downloads_equal_agreement_report(
    admin_client, dataset, capsys, django_capture_on_commit_callbacks, monkeypatch
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/metrics/datasets/{dataset.pk}/agreement/compute/", {"metrics": METRICS.split(",")}
        )
    assert response.status_code == 302 and "?run=" in response.url
    call_command("agreement_report", "--dataset", "dash", "--metrics", METRICS, "--format", "json")
    report = json.loads(capsys.readouterr().out)

    page = fresh_page(admin_client, response.url, "agreement", dataset.pk)
    assert 'id="dashboard-run"' in page and "status-done" in page
    for metric, row in report["metrics"].items():
        assert metric in page
        for column in ("HC", "HI", "HM", "MM", "total"):
            assert f'<span class="value">{row[column]:.1f}</span>' in page, (metric, column)
    assert f'<td class="num">{report["pairs"]["total"]}</td>' in page
    assert "SPICE</strong>: " in page and "CoreNLP" in page  # unavailable with its reason
    assert "METEOR</strong>: not computed yet" in page
    # 8 clips: the page says its intervals understate the uncertainty; from FEW_CLIPS clips on it does not
    assert '<p class="warning" id="few-clips"><strong>Only 8 clips:</strong>' in page
    monkeypatch.setattr(views_dashboards, "FEW_CLIPS", 8)
    assert 'id="few-clips"' not in admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/").content.decode()

    csv_lines = admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/?format=csv").content.decode().splitlines()
    bounds = [f"{c} 95% {end}" for c in ("HC", "HI", "HM", "MM", "total") for end in ("low", "high")]
    assert csv_lines[0] == "metric,HC,HI,HM,MM,total," + ",".join(bounds)
    assert csv_lines[1] == "pairs (denominator)," + ",".join(
        str(report["pairs"][c]) for c in ("HC", "HI", "HM", "MM", "total")
    ) + "," * len(bounds)
    # the downloads lead with CALIBRATED trained elsewhere (no other study here: it says why) and in-study
    assert csv_lines[2].startswith("CALIBRATED (trained elsewhere),no other study shares nothing with this one")
    assert csv_lines[3].startswith("CALIBRATED (in-study: fitted on this study's own judgements),")
    cells = {line.split(",")[0]: [float(v) for v in line.split(",")[1:]] for line in csv_lines[4:]}
    rows = {name: values[:5] for name, values in cells.items()}
    assert rows == {m: [r[c] for c in ("HC", "HI", "HM", "MM", "total")] for m, r in report["metrics"].items()}
    for values in cells.values():  # each figure lies inside its interval
        for index, value in enumerate(values[:5]):
            assert values[5 + 2 * index] <= value <= values[6 + 2 * index]
    workbook = load_workbook(
        io.BytesIO(admin_client.get(f"/metrics/datasets/{dataset.pk}/agreement/?format=xlsx").content)
    )
    sheet = workbook["Agreement"]
    assert [cell.value for cell in sheet[2]] == ["metric", "HC", "HI", "HM", "MM", "total"]
    xlsx_rows = {row[0]: list(row[1:]) for row in sheet.iter_rows(min_row=4, values_only=True)}
    assert xlsx_rows == rows

    svg = admin_client.get(f"/metrics/plots/agreement-splits/{dataset.pk}.svg")
    assert svg["Content-Type"] == "image/svg+xml"
    assert b"agreement with people (% of pairs with a human preference" in svg.content
    assert b"95% bootstrap interval over clips" in svg.content  # the table's intervals are drawn
    # the stored drawing is served until the data or the plots' revision changes (a new drawing of the same numbers)
    monkeypatch.setattr(plots, "agreement_dots", lambda **kwargs: "<svg>redrawn</svg>")
    assert admin_client.get(f"/metrics/plots/agreement-splits/{dataset.pk}.svg").content == svg.content
    monkeypatch.setattr(plots, "REVISION", plots.REVISION + 1)
    assert admin_client.get(f"/metrics/plots/agreement-splits/{dataset.pk}.svg").content == b"<svg>redrawn</svg>"
    download = admin_client.get(f"/metrics/plots/agreement-splits/{dataset.pk}.svg?download=1")
    assert download["Content-Disposition"].startswith("attachment;")


def test_leaderboard_page_equals_the_command_and_refreshes_when_votes_change(
    admin_client, dataset, capsys, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(f"/metrics/datasets/{dataset.pk}/leaderboard/compute/", {"metrics": ["ROUGE_L"]})
    call_command("leaderboard", "--dataset", "dash", "--metrics", "ROUGE_L", "--format", "json")
    report = json.loads(capsys.readouterr().out)
    page_json = admin_client.get(f"/metrics/datasets/{dataset.pk}/leaderboard/?format=json").json()
    intervals = {name: row.pop("kendall_tau_ci") for name, row in page_json["rank_agreement"].items()}
    assert page_json["systems"] == report["systems"] and page_json["rank_agreement"] == report["rank_agreement"]
    low, high = intervals["ROUGE_L"]  # tau over the systems, with its clip-bootstrap interval around it
    assert -1 <= low <= report["rank_agreement"]["ROUGE_L"]["kendall_tau"] <= high <= 1
    page = fresh_page(admin_client, f"/metrics/datasets/{dataset.pk}/leaderboard/", "leaderboard", dataset.pk)
    for row in report["systems"]:
        assert row["system"] in page
        assert f"{row['metrics']['ROUGE_L']:.4f}" in page

    # a vote changes: the cached leaderboard is recomputed on the next view
    nn = next(row for row in report["systems"] if row["system"] == "nn")
    vote = PairwiseVote.objects.filter(pair__caption_b__system__name="nn", choice="a").first()
    vote.choice = "b"
    vote.save()
    after = admin_client.get(f"/metrics/datasets/{dataset.pk}/leaderboard/?format=json").json()
    nn_after = next(row for row in after["systems"] if row["system"] == "nn")
    assert nn_after["human"]["pairwise_win_rate"] == pytest.approx(
        nn["human"]["pairwise_win_rate"] + 1 / nn["human"]["pairwise_votes"]
    )
    svg = admin_client.get(f"/metrics/plots/leaderboard-win-rate/{dataset.pk}.svg").content
    assert b"human pairwise win rate (0-1)" in svg and b"95% bootstrap interval" in svg
    assert admin_client.get(f"/metrics/plots/leaderboard-win-rate/{dataset.pk}.svg").content == svg  # cached
    flipped = PairwiseVote.objects.filter(pair__caption_b__system__name="nn", choice="a").first()
    flipped.choice = "b"
    flipped.save()  # services save (or bulk-update with updated_at): the fingerprint sees it
    assert admin_client.get(f"/metrics/plots/leaderboard-win-rate/{dataset.pk}.svg").content != svg


def test_thumbs_page_equals_thumbs_report(admin_client, campaign, capsys, django_capture_on_commit_callbacks):
    call_command("thumbs_report", "--campaign", "dash-thumbs", "--metrics", "ROUGE_L", "--format", "json")
    report = json.loads(capsys.readouterr().out)
    page_json = admin_client.get(f"/metrics/campaigns/{campaign.pk}/thumbs/?format=json").json()
    assert page_json == {key: value for key, value in report.items() if key != "unavailable"}
    page = fresh_page(admin_client, f"/metrics/campaigns/{campaign.pk}/thumbs/", "thumbs", campaign.pk)
    assert f"{report['agreement']['krippendorff_alpha']['overall']:.3f}" in page
    pearson = report["correlations"]["ROUGE_L"]["caption"]["overall"]["pearson"]
    assert f"{pearson['value']:.3f}" in page and f"{pearson['ci_low']:.2f}" in page
    svg = admin_client.get(f"/metrics/plots/thumbs-scatter/{campaign.pk}.svg?metric=ROUGE_L&field=overall").content
    assert b"THumBS overall (points, -5 to 5)" in svg and b"n = 12 captions" in svg

    # a new rating invalidates the cached report
    ThumbsRating.objects.filter(campaign=campaign).first().delete()
    again = admin_client.get(f"/metrics/campaigns/{campaign.pk}/thumbs/?format=json").json()
    assert again["ratings"] == report["ratings"] - 1


def test_caption_page_shows_references_scores_ratings_and_pairs(
    admin_client, dataset, campaign, django_capture_on_commit_callbacks
):
    caption = Caption.objects.filter(thumbs_ratings__isnull=False, pairs_as_b__isnull=False).first()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(f"/metrics/datasets/{dataset.pk}/agreement/compute/", {"metrics": ["XACE"]})
    page = admin_client.get(f"/metrics/captions/{caption.pk}/").content.decode()
    for reference in caption.clip.captions.filter(role="reference"):
        assert reference.text in page
    assert caption.text in page and "r1" in page and "X-ACE explained" in page and "Pair outcomes" in page
    graph = admin_client.get(f"/metrics/plots/caption-graph/{caption.pk}.svg?side=candidate")
    assert graph.status_code == 200 and b"<svg" in graph.content


def test_submission_page_keeps_the_file_and_lists_problems(admin_client, dataset, django_capture_on_commit_callbacks):
    name = dataset.clips.order_by("pk").first().file_name
    bad = SimpleUploadedFile("mine.csv", f"file_name,caption_predicted\n{name},fine\nnope.wav,x\n".encode())
    # the page keeps the file and answers; the worker's task, queued on commit, imports it (eagerly in tests)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = admin_client.post("/metrics/systems/submit/", {"dataset": dataset.pk, "system": "mine", "file": bad})
    submission = SystemSubmission.objects.get()
    assert response.url == f"/metrics/systems/submissions/{submission.pk}/"
    assert submission.status == "pending" and b"A worker imports the file" in admin_client.get(response.url).content
    for task in queued:
        task()
    submission.refresh_from_db()
    assert submission.status == "failed" and submission.errors == [
        'mine.csv: row 3: file_name "nope.wav": no clip of this dataset has that file name or id'
    ]
    assert b"nope.wav" in admin_client.get(response.url).content
    assert not Caption.objects.filter(system__name="mine").exists()
    good = SimpleUploadedFile("mine.csv", f"file_name,caption_predicted\n{name},fine\n".encode())
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/metrics/systems/submit/", {"dataset": dataset.pk, "system": "mine", "file": good})
    assert SystemSubmission.objects.filter(status="imported").count() == 1
    assert Caption.objects.get(system__name="mine").text == "fine"
    assert SystemSubmission.objects.first().file.read() == f"file_name,caption_predicted\n{name},fine\n".encode()


def test_a_page_answers_at_once_with_flagged_old_numbers_until_the_browser_asks_for_current_ones(
    admin_client, dataset, django_capture_on_commit_callbacks
):
    url = f"/metrics/datasets/{dataset.pk}/leaderboard/"
    first = admin_client.get(url).content.decode()
    assert "Computing</strong> this dashboard for the first time" in first and 'id="live"' in first
    status = admin_client.get(f"/metrics/dashboards/leaderboard/{dataset.pk}/refresh/").json()
    assert status["busy"] and status["refresh"] == f"/metrics/dashboards/leaderboard/{dataset.pk}/refresh/"
    fresh_page(admin_client, url, "leaderboard", dataset.pk)
    assert admin_client.post(f"/metrics/dashboards/leaderboard/{dataset.pk}/refresh/").status_code == 200
    PairwiseVote.objects.filter(choice="a").first().delete()  # the data changes
    stale = admin_client.get(url).content.decode()
    assert "the data changed since these numbers were computed" in stale and 'id="leaderboard-table"' in stale
    fresh_page(admin_client, url, "leaderboard", dataset.pk)
    assert admin_client.post("/metrics/dashboards/nope/1/refresh/").status_code == 404
    status = admin_client.get(f"/metrics/dashboards/leaderboard/{dataset.pk}/refresh/").json()
    assert status["fresh"] and not status["busy"] and status["refresh"] is None
