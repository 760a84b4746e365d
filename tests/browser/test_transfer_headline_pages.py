"""The agreement page and the benchmark page lead with CALIBRATED trained elsewhere, the in-study figure beside it,
with their intervals: first the "computing" state (a worker fits it), then the result; at 1280 and 390 px
(screenshots in test-artifacts/)."""

import json
import re

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
INTERVAL = re.compile(r"\d+\.\d–\d+\.\d")


@pytest.fixture(autouse=True)
def _metric_features_only(monkeypatch):
    """CALIBRATED on the metrics' differences only (the caption features load two models: minutes here)."""
    from metrics_bridge.agreement import calibration

    monkeypatch.setattr(calibration, "caption_features_available", lambda resources=None: False)


def _hold_refresh(page) -> list:
    """Keep the page's request for a computation from reaching the server (the page stays "computing")."""
    held = []

    def hold(route):
        if route.request.method == "POST":
            held.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/refresh/**", hold)
    return held


def _fits_in_width(page, selector: str) -> bool:
    """The element does not make the page scroll sideways (a wide table scrolls inside its own box)."""
    return page.evaluate(
        "s => document.querySelector(s).getBoundingClientRect().right <= document.documentElement.clientWidth + 1",
        selector,
    )


def test_the_pages_lead_with_trained_elsewhere_computing_then_the_result(
    page_for, live_server, make_user, artifacts, shared_dir
):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())
    pairwise_judgements_import(data=items[:10], dataset_name="study", source_name="a.json")
    pairwise_judgements_import(data=items[:5], dataset_name="study-half", source_name="a.json")
    pairwise_judgements_import(data=items[40:48], dataset_name="other-study", source_name="b.json")
    for name in ("study", "study-half", "other-study"):  # the scores; neither CALIBRATED nor the benchmark table
        call_command("agreement_report", "--dataset", name, "--metrics", "BLEU_4,ROUGE_L", "--format", "json")
    study = Dataset.objects.get(name="study")
    from metrics_bridge.services.evaluation.dashboards import dashboard_part_compute

    assert dashboard_part_compute(part="agreement", object_id=study.pk) == "done"  # the table; CALIBRATED not yet
    page = page_for(make_user("organiser", staff=True))

    # computing: the worker has not fitted CALIBRATED yet
    held = _hold_refresh(page)
    page.goto(f"{live_server.url}/metrics/datasets/{study.pk}/agreement/")
    lead = page.locator("#transfer-headline")
    assert lead.is_visible() and page.locator("#transfer-computing").is_visible()
    page.screenshot(path=str(artifacts / "transfer_agreement_computing_1280.png"), full_page=True)

    # the page's request goes through: the workers fit it (eagerly here) and the page shows the result by itself
    page.unroute("**/refresh/**")
    page.reload()
    page.locator("#transfer-elsewhere .value").first.wait_for(timeout=240_000)
    assert page.locator("#transfer-computing").count() == 0
    elsewhere = page.locator("#transfer-elsewhere").inner_text()
    assert "CALIBRATED, trained elsewhere" in elsewhere and "fitted on other-study" in elsewhere
    assert INTERVAL.search(elsewhere)
    page.locator("#transfer-in-study .value").first.wait_for(timeout=240_000)
    in_study = page.locator("#transfer-in-study").inner_text()
    assert "fitted on this study's own judgements (in-study)" in in_study and INTERVAL.search(in_study)
    assert "study-half left out: it shares 5 clips' audio" in page.locator("#transfer-left-out").inner_text()
    # it leads: above the table of single metrics
    assert lead.bounding_box()["y"] < page.locator("#agreement-table").bounding_box()["y"]
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(artifacts / "transfer_agreement_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert _fits_in_width(page, "#transfer-headline")
    lead.screenshot(path=str(artifacts / "transfer_agreement_headline_390.png"))
    page.screenshot(path=str(artifacts / "transfer_agreement_390.png"), full_page=True)
    assert held, "the computing state was shown while the page's request was held back"

    # the benchmark page: computing, then the table led by the trained-elsewhere figures
    page.set_viewport_size({"width": 1280, "height": 900})
    _hold_refresh(page)
    page.goto(f"{live_server.url}/metrics/benchmark/")
    assert (
        page.locator("#dashboard-stale").is_visible() and "Computing" in page.locator("#dashboard-stale").inner_text()
    )
    page.screenshot(path=str(artifacts / "transfer_benchmark_computing_1280.png"), full_page=True)
    page.unroute("**/refresh/**")
    page.reload()
    page.locator("#transfer-table").wait_for(timeout=240_000)
    row = page.locator("#transfer-table tr[data-dataset='study']")
    cells = row.locator("td").all_inner_texts()
    assert INTERVAL.search(cells[1]) and "fitted on other-study" in cells[1]
    assert INTERVAL.search(cells[2]) and INTERVAL.search(cells[3])
    assert "left out: study-half" in cells[4]
    first_row = page.locator("#benchmark-table tbody tr").first.inner_text()
    assert first_row.startswith("CALIBRATED, trained elsewhere")
    assert (
        page.locator("#benchmark-table tbody tr")
        .nth(1)
        .inner_text()
        .startswith("CALIBRATED, fitted on this study's own judgements (in-study)")
    )
    page.screenshot(path=str(artifacts / "transfer_benchmark_1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert _fits_in_width(page, "#transfer-headline")
    page.screenshot(path=str(artifacts / "transfer_benchmark_390.png"), full_page=True)
