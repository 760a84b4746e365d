"""Pages that wait on work done elsewhere update themselves when it ends, without a reload (static/core/js/live.js).

Each test opens a page, marks the document (a reload would lose the mark), does the work the page waits on from
the test (a metric run, a dashboard's data changing, a sensitivity report, an annotator's submission, a workbook
upload), and waits for the page to show the outcome in the same document.
"""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.services.annotation_campaigns import annotation_task_next
from annotation.services.annotation_tasks import task_draft_save, task_submit
from corpus.models import Dataset
from metrics_bridge.models import MetricRun
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from metrics_bridge.services.evaluation.sensitivity import sensitivity_report_compute, sensitivity_report_create
from metrics_bridge.services.runs.runs import metric_run_create
from metrics_bridge.tasks.runs import execute_metric_run
from ratings.services.workbook_import import workbook_upload_create, workbook_upload_import
from tests.annotation.workspace_data import draft_of, workspace_build
from tests.metrics_bridge.dashboard_data import clotho_slice, rated_thumbs_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
#: a page not busy asks every 10 s; a loaded machine adds its own delays
WAIT_MS = 60_000


@pytest.fixture
def dataset(shared_dir) -> Dataset:
    return clotho_slice(shared_dir, name="live", clips=8)


@pytest.fixture
def admin_page(page_for, make_user):
    page = page_for(make_user("organiser", staff=True))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.set_default_timeout(WAIT_MS)
    return page


def mark_document(page) -> None:
    page.wait_for_selector("#live", state="attached")
    page.evaluate("window.__sameDocument = true")


def wait_in_place(page, condition: str) -> None:
    """Wait until `condition` (JS) holds after a live update, and check the page was not reloaded."""
    page.wait_for_function(f"() => {{ try {{ return Boolean({condition}); }} catch (e) {{ return false; }} }}")
    assert page.evaluate("window.__sameDocument === true"), "the page reloaded instead of updating in place"
    assert int(page.get_attribute("#live", "data-live-updates") or 0) >= 1


def text_of(selector: str) -> str:
    return f"document.querySelector({selector!r}).innerText"


def test_run_page_shows_the_end_of_the_run(admin_page, live_server, dataset, artifacts):
    run = metric_run_create(dataset=dataset, metric_names=["ROUGE_L"])
    admin_page.goto(f"{live_server.url}/metrics/runs/{run.pk}/")
    assert admin_page.locator("button:has-text('Cancel run')").count() == 1
    mark_document(admin_page)

    execute_metric_run(run=run)  # a worker (here: this process) scores the chunks

    wait_in_place(admin_page, "document.getElementById('run-status').dataset.status === 'done'")
    assert admin_page.locator("button:has-text('Cancel run')").count() == 0
    results = admin_page.inner_text("#run-results")
    assert "Leaderboard" in results and "Agreement table" in results
    assert admin_page.locator("#run-results a[href^='/metrics/captions/']").count() >= 2
    admin_page.screenshot(path=str(artifacts / "live_run_done.png"), full_page=True)


def test_metrics_home_lists_a_new_run(admin_page, live_server, dataset):
    admin_page.goto(f"{live_server.url}/metrics/")
    mark_document(admin_page)

    run = execute_metric_run(run=metric_run_create(dataset=dataset, metric_names=["ROUGE_L"]))

    wait_in_place(admin_page, f"{text_of('#recent-runs')}.includes('#{run.pk}')")
    assert "Done" in admin_page.inner_text("#recent-runs")


@pytest.mark.parametrize("kind", ["leaderboard", "agreement", "thumbs"])
def test_dashboards_show_a_finished_run(admin_page, live_server, dataset, make_user, kind):
    raters = [make_user("r1", "rater"), make_user("r2", "rater")]
    campaign = rated_thumbs_campaign(dataset, raters, name="live-thumbs", captions=10)
    url, table = {
        "leaderboard": (f"/metrics/datasets/{dataset.pk}/leaderboard/", "#leaderboard-table"),
        "agreement": (f"/metrics/datasets/{dataset.pk}/agreement/", "#agreement-table"),
        "thumbs": (f"/metrics/campaigns/{campaign.pk}/thumbs/", "#correlation-table"),
    }[kind]
    admin_page.goto(f"{live_server.url}{url}")
    admin_page.wait_for_selector(table)  # the first view computed its numbers and reloaded (a new page)
    assert "ROUGE_L" not in admin_page.inner_text(table)
    mark_document(admin_page)

    # A run started elsewhere (another admin, the API, compute_metrics) ends
    run = execute_metric_run(run=dataset_run_create(dataset=dataset, metric_names=["ROUGE_L"]))
    assert run.status == MetricRun.Status.DONE

    wait_in_place(admin_page, f"{text_of(table)}.includes('ROUGE_L') && !document.getElementById('dashboard-stale')")
    if kind == "agreement":  # the chart came with the numbers; its smallest text is readable at this width
        assert smallest_plot_text_px(admin_page, "#agreement-chart img.plot") >= 11


def smallest_plot_text_px(page, selector: str) -> float:
    """The smallest font of an SVG plot as the page shows it: its font sizes scaled by the shown / drawn width.

    The live page may swap its regions once more after the numbers arrive (another part of the dashboard stored),
    and a swapped-in <img> has no width until it loads: the width is taken from an image loaded and laid out, and
    the font sizes from that image's own source.
    """
    shown = page.wait_for_function(
        """(selector) => {
            const img = document.querySelector(selector);
            const width = img && img.complete && img.naturalWidth ? img.getBoundingClientRect().width : 0;
            return width > 0 ? { src: img.src, width } : null;
        }""",
        arg=selector,
    ).json_value()
    svg = page.evaluate("async (src) => (await fetch(src)).text()", shown["src"])
    drawn_width = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
    font_sizes = [float(size) for size in re.findall(r"font-size: ([\d.]+)px", svg)]
    return min(font_sizes) * shown["width"] / drawn_width


def test_sensitivity_page_shows_the_finished_report(admin_page, live_server, dataset):
    report = sensitivity_report_create(dataset=dataset, metric_names=["ROUGE_L"])
    admin_page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/sensitivity/")
    assert "Pending" in admin_page.inner_text("#sensitivity-reports")
    mark_document(admin_page)

    sensitivity_report_compute(report_id=report.pk)  # the worker's task

    wait_in_place(admin_page, "document.getElementById('sensitivity-table')")
    assert "ROUGE_L" in admin_page.inner_text("#sensitivity-table")
    assert "Done" in admin_page.inner_text("#sensitivity-reports")


def test_review_pages_count_a_new_submission(page_for, live_server, make_user):
    workspace = workspace_build(make_user, clip_count=2, annotator_count=1, per_clip=1)
    overview = page_for(workspace.reviewer)
    overview.set_default_timeout(WAIT_MS)
    overview.goto(f"{live_server.url}/review/")
    campaign_page = overview.context.new_page()
    campaign_page.set_default_timeout(WAIT_MS)
    campaign_page.goto(f"{live_server.url}/review/campaigns/{workspace.campaign.pk}/")
    assert campaign_page.locator("[data-state='ready']").count() == 0
    mark_document(overview)
    mark_document(campaign_page)

    annotator = workspace.annotators[0]
    task = annotation_task_next(campaign=workspace.campaign, annotator=annotator)
    saved = task_draft_save(
        task=task, annotator=annotator, base_version=0, draft=draft_of(("beep", ["alarm"], ["loud"]))
    )
    task_submit(task=task, annotator=annotator, base_version=saved.version, confirm_warnings=True)

    ready_cell = "document.querySelector('#review-overview tbody tr td:nth-child(4)').innerText.trim()"
    wait_in_place(overview, f"{ready_cell} === '1'")
    wait_in_place(campaign_page, "document.querySelectorAll(\"[data-state='ready']\").length === 1")


def test_workbook_upload_page_lists_an_upload_made_elsewhere(admin_page, live_server, dataset, make_user):
    admin_page.goto(f"{live_server.url}/ratings/staff/workbooks/upload/")
    mark_document(admin_page)

    upload = workbook_upload_create(
        uploaded_file=SimpleUploadedFile("P7_excel.xlsx", b"not a workbook"),
        campaign_name="live-thumbs",
        rater=make_user("offline-rater", "rater"),
        uploaded_by=make_user("other-admin", staff=True),
    )
    workbook_upload_import(upload=upload)

    wait_in_place(admin_page, f"{text_of('#recent-uploads')}.includes('P7_excel.xlsx')")
    assert "Failed" in admin_page.inner_text("#recent-uploads")


def test_a_fresh_clip_shows_no_error_before_anything_is_typed(page_for, live_server, make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    page = page_for(workspace.annotators[0])
    page.goto(f"{live_server.url}/annotate/")
    page.click("form[action*='/next/'] button")
    page.wait_for_selector("#annotation-page[data-ready=true]")
    page.wait_for_load_state("networkidle")  # a check request, if one were sent on opening, has answered
    assert page.locator("#checks-list .check.is-error").count() == 0
    assert page.inner_text("#checks-list") == "Checked after each save."
    # Once something is saved the checks run (here: an event without a source or attribute, a warning)
    page.keyboard.press("n")
    page.keyboard.type("beep")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")
    page.wait_for_function("() => document.querySelectorAll('#checks-list .check').length > 0")
