"""The admin dashboards in headless Chromium: on the demo data (eager Celery) and on a Clotho-Eval slice with a
system submitted through the upload page, computed by a real Celery worker while the progress bar is watched."""

import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from corpus.models import Caption, Dataset
from metrics_bridge.models import MetricRun
from ratings.models import Campaign, ThumbsRating
from tests.chunk_gate import ChunkGate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def rate(campaign: Campaign, captions, raters) -> None:
    """Ratings with some agreement between raters, so the THumBS dashboard has numbers."""
    for offset, rater in enumerate(raters):
        for index, caption in enumerate(captions):
            quality = (index * 7) % 5
            ThumbsRating.objects.create(
                rater=rater,
                caption=caption,
                campaign=campaign,
                precision=1 + (quality + (offset if index % 3 == 0 else 0)) % 5,
                recall=1 + quality,
                fluency=Decimal("-0.1") * (index % 2),
            )


def watch_run_finish(page, what: str) -> None:
    """The progress box of the run the page started: it ends as done, then the page reloads with fresh numbers."""
    page.wait_for_selector("#dashboard-run")
    page.wait_for_function(
        "() => { const s = document.getElementById('dashboard-run-status'); return s && /done/i.test(s.textContent); }",
        timeout=180_000,
    )
    page.wait_for_load_state("networkidle")
    assert (
        page.locator("#dashboard-stale").count() == 0
        or page.wait_for_selector("#dashboard-stale", state="detached", timeout=120_000) is None
    ), what


def _wait_for_text(page, selector: str, text: str) -> None:
    """Until the element shows `text`: the fresh numbers come by a region swap or a reload (static/core/js/live.js)
    that may still be on its way when the run's status says done."""
    page.wait_for_function(
        "([selector, text]) => document.querySelector(selector)?.innerText.includes(text)", arg=[selector, text]
    )


def test_dashboards_on_the_demo_data(page_for, live_server, make_user, media_root, artifacts):
    call_command("demo", "--no-metrics", stdout=io.StringIO())  # the simulated study, metrics computed below
    dataset = Dataset.objects.get(name="demo")
    campaign = Campaign.objects.get(task_type="thumbs")
    page = page_for(make_user("chief", staff=True))
    page.set_default_timeout(60_000)  # computing pages on a loaded 2-core machine

    page.goto(f"{live_server.url}/metrics/")
    page.click(f"a[href='/metrics/datasets/{dataset.pk}/leaderboard/']")
    page.wait_for_selector("#leaderboard-table")  # the first view computed itself through the refresh request
    page.locator("details", has_text="Compute metrics").click()
    page.check("input[name='metrics'][value='ROUGE_L']")
    page.check("input[name='metrics'][value='BLEU_4']")
    page.click("#compute-button")
    watch_run_finish(page, "leaderboard")
    _wait_for_text(page, "#leaderboard-table", "BLEU_4")
    table = page.inner_text("#leaderboard-table")
    assert "ROUGE_L" in table and "BLEU_4" in table and "Kendall" in table
    page.screenshot(path=str(artifacts / "dashboard_leaderboard_demo.png"), full_page=True)

    page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/agreement/")
    page.wait_for_selector("#agreement-table")
    page.locator("details", has_text="Compute metrics").click()
    page.check("input[name='metrics'][value='ROUGE_L']")
    page.click("#compute-button")
    watch_run_finish(page, "agreement")
    _wait_for_text(page, "#agreement-table", "ROUGE_L")
    # the plot is drawn by the server on its first request (matplotlib): wait for it to load; a broken
    # image never gets a width, so this still fails when the plot does
    page.wait_for_function(
        "() => { const img = document.querySelector('img.plot'); return img && img.complete && img.naturalWidth > 0; }",
        timeout=60_000,
    )
    page.screenshot(path=str(artifacts / "dashboard_agreement_demo.png"), full_page=True)

    page.goto(f"{live_server.url}/metrics/campaigns/{campaign.pk}/thumbs/")
    page.wait_for_selector("#alpha-table")
    page.locator("details", has_text="Compute metrics").click()
    page.check("input[name='metrics'][value='ROUGE_L']")
    page.click("#compute-button")
    watch_run_finish(page, "thumbs")
    _wait_for_text(page, "#correlation-table", "ROUGE_L")
    page.screenshot(path=str(artifacts / "dashboard_thumbs_demo.png"), full_page=True)

    caption = Caption.objects.filter(clip__dataset=dataset, role="candidate", metric_scores__isnull=False).first()
    page.goto(f"{live_server.url}/metrics/captions/{caption.pk}/")
    assert caption.text in page.inner_text("main")
    page.wait_for_selector(".clip-player canvas")
    page.screenshot(path=str(artifacts / "dashboard_caption_demo.png"), full_page=True)


@pytest.mark.redis
def test_clotho_slice_with_a_submitted_system_computed_by_a_real_worker(
    page_for, live_server, make_user, shared_dir, real_celery, tmp_path, artifacts
):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:12]
    (tmp_path / "slice.json").write_text(json.dumps(items))
    call_command(
        "import_pairwise_judgements", str(tmp_path / "slice.json"), "--dataset", "clotho-slice", stdout=io.StringIO()
    )
    dataset = Dataset.objects.get(name="clotho-slice")
    submission = tmp_path / "my_system.csv"
    submission.write_text(
        "file_name,caption_predicted\n" + "".join(f'{item["raw_name"]},"{item["MM_1"][1]}"\n' for item in items)
    )
    gate = ChunkGate(tmp_path / "gate")  # the system-score run's chunks wait here until the test lets them
    gate.open()
    real_celery(gate=gate)
    page = page_for(make_user("chief", staff=True))
    page.set_default_timeout(60_000)  # computing pages on a loaded 2-core machine

    page.goto(f"{live_server.url}/metrics/systems/submit/")
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.fill("input[name='system']", "my-system")
    page.set_input_files("input[name='file']", str(submission))
    with page.expect_navigation():
        page.click("button:has-text('Upload and import')")
    page.wait_for_selector("h1:has-text('Imported')")  # the worker imports it; the page follows (live.js)
    page.screenshot(path=str(artifacts / "dashboard_submission.png"), full_page=True)

    page.click("text=See it on the leaderboard")
    page.wait_for_selector("#leaderboard-table", timeout=120_000)  # computed by the worker (refresh task)
    page.locator("details", has_text="Compute metrics").click()
    for metric in ("BLEU_4", "ROUGE_L", "CIDEr_D"):
        page.check(f"input[name='metrics'][value='{metric}']")
    gate.allow(gate.arrived() + 1)  # one chunk of the coming run may be scored, then the run waits
    page.click("#compute-button")
    page.wait_for_selector("#dashboard-run")
    # The bar shows one chunk of the run done (its caption scores and system scores: one run), then done once the
    # gate opens: it moves without a reload.
    total = MetricRun.objects.order_by("-pk").first().chunks_total
    assert total > 3  # the caption-score chunks and the three system-score chunks
    page.wait_for_function(f"document.getElementById('dashboard-run-count')?.innerText.includes('1/{total}')")
    gate.open()
    page.wait_for_function(
        "document.getElementById('dashboard-run-status')?.innerText.toLowerCase().includes('done')", timeout=120_000
    )
    page.screenshot(path=str(artifacts / "dashboard_leaderboard_run_done.png"), full_page=True)
    page.wait_for_function("() => !document.getElementById('dashboard-stale')", timeout=120_000)
    page.wait_for_selector("#leaderboard-table")
    row = page.locator("#leaderboard-table tr", has_text="my-system").inner_text()
    assert row.count("—") <= 2, row  # its metric values are there (the human columns may be empty)
    run = MetricRun.objects.order_by("-pk").first()
    system_chunks = [chunk for chunk in run.chunks.all() if chunk.requests[0].get("system_level")]
    assert run.status == "done" and len(system_chunks) == 3  # one run: caption scores and the systems' scores
    page.screenshot(path=str(artifacts / "dashboard_leaderboard_clotho.png"), full_page=True)
