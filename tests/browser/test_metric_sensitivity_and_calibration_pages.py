"""The sensitivity page and the CALIBRATED block of the agreement page in headless Chromium (screenshots)."""

import json

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from metrics_bridge.agreement.calibration import CAPTION_FEATURES
from metrics_bridge.models import SensitivityReport
from ratings.services.pairwise_import import pairwise_judgements_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_an_admin_reads_the_sensitivity_table_and_the_calibrated_coefficients(
    page_for, live_server, make_user, artifacts, shared_dir
):
    items = json.loads((shared_dir / "datasets" / "clotho_eval.json").read_text())[:20]
    pairwise_judgements_import(data=items, dataset_name="browser-metrics", source_name="clotho_eval.json")
    dataset = Dataset.objects.get(name="browser-metrics")
    call_command("agreement_report", "--dataset", dataset.name, "--metrics", "BLEU_4,ROUGE_L,CALIBRATED")
    page = page_for(make_user("organiser", staff=True))

    # Start a report from the page (eager Celery computes it within the request), then read the table.
    page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/sensitivity/")
    page.check("input[name='metrics'][value='ROUGE_L']")
    page.check("input[name='metrics'][value='BLEU_4']")
    with page.expect_navigation(timeout=180_000):  # computed within the request; minutes on a loaded machine
        page.click("button:has-text('Compute')")
    assert SensitivityReport.objects.get().status == "done"
    table = page.locator("#sensitivity-table")
    assert table.is_visible()
    headers = table.locator("thead th").all_inner_texts()
    assert headers == ["Metric", "sound event", "source", "attribute", "temporal relation"]
    counts = table.locator("thead tr.pairs td").all_inner_texts()
    assert counts[0] == "perturbed captions" and all(count.endswith("/ 100") for count in counts[1:])
    metrics = [row.locator("td").first.inner_text() for row in table.locator("tbody tr").all()]
    assert metrics == ["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L"]
    page.screenshot(path=str(artifacts / "metric_sensitivity.png"), full_page=True)

    from metrics_bridge.services.evaluation.dashboards import dashboard_part_compute

    # What a worker does for the page: the agreement table and CALIBRATED's fit, each stored for the page to read
    for part in ("agreement", "calibration"):
        assert dashboard_part_compute(part=part, object_id=dataset.pk) == "done", part
    page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/agreement/")
    block = page.locator("#calibration")
    assert block.is_visible() and "held out only" in block.inner_text()
    coefficients = page.locator("#calibration-coefficients tbody tr")
    names = [row.locator("td").first.inner_text() for row in coefficients.all()]
    # the shipped fluency detector never saw Clotho-Eval's captions: CALIBRATED uses its feature
    features = list(CAPTION_FEATURES)
    assert sorted(names) == sorted(["BLEU_1", "BLEU_2", "BLEU_3", "BLEU_4", "ROUGE_L", *features])
    block.screenshot(path=str(artifacts / "agreement_calibration_block.png"))
    page.screenshot(path=str(artifacts / "agreement_with_calibration.png"), full_page=True)
