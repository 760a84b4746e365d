"""The leaderboard's layout in headless Chromium at 1280 and 390 px: on the demo's seven systems with the demo's
metric columns, every column of the table is in the card (at 1280 px without scrolling; on a phone the table scrolls
inside its own box, the row's system staying in view), and the win-rate chart shows every system at the card's
width instead of being cut after four. Screenshots in test-artifacts/."""

import io

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from demo.build import DEMO_METRICS
from metrics_bridge.services.evaluation.dashboards import dashboard_refresh
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create
from metrics_bridge.tasks.runs import execute_metric_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# the demo's own metric run: n-gram metrics, Sentence-BERT and FENSE (eight metric columns)
METRICS = DEMO_METRICS

GEOMETRY = """() => {
  const card = document.getElementById('leaderboard-table').closest('.card, .table-box');
  const box = card.getBoundingClientRect();
  const outer = document.getElementById('leaderboard-table').closest('.card').getBoundingClientRect();
  const header = [...document.querySelectorAll('#leaderboard-table thead th')];
  const last = header[header.length - 1].getBoundingClientRect();
  const system = document.querySelector('#leaderboard-table tbody tr td:nth-child(2)').getBoundingClientRect();
  const chart = document.querySelector('img.plot[alt^="Bar chart"]');
  const chartBox = chart.getBoundingClientRect();
  const chartCard = chart.closest('.card').getBoundingClientRect();
  return {
    outerLeft: outer.left, outerRight: outer.right,
    cardLeft: box.left, cardRight: box.right, scrollWidth: card.scrollWidth, clientWidth: card.clientWidth,
    overflowX: getComputedStyle(card).overflowX, lastRight: last.right, lastText: header[header.length - 1].innerText,
    systemLeft: system.left, systemRight: system.right, pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth, chartLeft: chartBox.left, chartRight: chartBox.right, chartWidth: chartBox.width,
    chartCardLeft: chartCard.left, chartCardRight: chartCard.right, chartNatural: chart.naturalWidth,
  };
}"""


def _scroll_card_to_end(page) -> None:
    page.evaluate(
        "() => { const c = document.getElementById('leaderboard-table').closest('.card, .table-box');"
        " c.scrollLeft = c.scrollWidth; }"
    )


def test_the_leaderboard_fits_its_card_at_1280_and_scrolls_inside_it_at_390(
    page_for, live_server, make_user, media_root, artifacts
):
    call_command("demo", "--no-metrics", stdout=io.StringIO())
    dataset = Dataset.objects.get(name="demo")
    assert execute_metric_run(run=dataset_run_create(dataset=dataset, metric_names=METRICS)).status == "done"
    dashboard_refresh(kind="leaderboard", target=dataset)  # as the demo does: the page then shows it at once
    page = page_for(make_user("chief", staff=True))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/metrics/datasets/{dataset.pk}/leaderboard/")
    page.wait_for_selector("#leaderboard-table tbody tr td:nth-child(2)")
    page.wait_for_function("() => { const i = document.querySelector('img.plot[alt^=\"Bar chart\"]');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    assert page.locator("#leaderboard-table tbody tr").count() == 7
    header = page.locator("#leaderboard-table thead th").all_inner_texts()
    assert len(header) == 3 + len(METRICS) + 4 and header[-1] == "Ratings", header

    # 1280 px: the whole table in its card, nothing to scroll, the chart in its card
    wide = page.evaluate(GEOMETRY)
    page.screenshot(path=str(artifacts / "leaderboard_1280.png"), full_page=True)
    assert wide["lastRight"] <= wide["cardRight"] + 0.5, wide
    assert wide["scrollWidth"] <= wide["clientWidth"] + 1, wide
    assert wide["pageWidth"] <= wide["viewport"], wide
    assert wide["chartCardLeft"] <= wide["chartLeft"] and wide["chartRight"] <= wide["chartCardRight"], wide

    # 390 px: the page itself does not widen; the table scrolls inside its card up to its last column, the
    # system column stays in view while it does; the chart is as wide as its card, with every system in it
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(100)  # a frame for the layout at the new width
    narrow = page.evaluate(GEOMETRY)
    page.screenshot(path=str(artifacts / "leaderboard_390.png"), full_page=True)
    assert narrow["pageWidth"] <= narrow["viewport"], narrow
    assert narrow["overflowX"] in ("auto", "scroll") and narrow["scrollWidth"] > narrow["clientWidth"], narrow
    assert narrow["outerLeft"] <= narrow["cardLeft"] and narrow["cardRight"] <= narrow["outerRight"], narrow
    _scroll_card_to_end(page)
    scrolled = page.evaluate(GEOMETRY)
    page.screenshot(path=str(artifacts / "leaderboard_390_scrolled.png"), full_page=True)
    assert scrolled["lastRight"] <= scrolled["cardRight"] + 0.5, scrolled  # the last column reached
    assert scrolled["cardLeft"] <= scrolled["systemLeft"] and scrolled["systemRight"] <= scrolled["cardRight"]
    assert narrow["chartCardLeft"] <= narrow["chartLeft"] and narrow["chartRight"] <= narrow["chartCardRight"] + 0.5
    # not shrunk out of reading: at least 80 % of its own size (its text 11 pt at 96 px per inch)
    assert narrow["chartWidth"] >= 0.8 * narrow["chartNatural"], narrow
