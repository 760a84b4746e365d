"""The pages this issue changed, in headless Chromium: conflicts, the submitted view, error summaries,
error pages, the Huggins screen, and the campaign, raters and workbook administration pages."""

import io
from datetime import timedelta

import openpyxl
import pytest
from django.utils import timezone

from ratings.models import AssignmentItem, Campaign, HeadphoneCheck, PairwiseVote, campaign_rater_code
from ratings.services.campaigns import campaign_setup
from ratings.services.judgements import pairwise_item_submit
from ratings.services.workbooks import rater_workbook_export
from tests.ratings.campaign_data import clip_audio_attach, corpus_build, headphone_pass_give, listened_give
from tests.ratings.workbook_helpers import caption_rows, thumbs_campaign, workbook_fill

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _listened(item: AssignmentItem) -> AssignmentItem:
    now = timezone.now()
    AssignmentItem.objects.filter(pk=item.pk).update(first_shown_at=now - timedelta(seconds=30), listened_at=now)
    return AssignmentItem.objects.get(pk=item.pk)


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        f"() => {{ const r = document.querySelector({selector!r}).getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )


def test_second_tab_conflict_then_submitted_view_and_change(page_for, live_server, make_user, media_root, artifacts):
    dataset, clips, _ = corpus_build(clip_count=2)
    for clip in clips:
        clip_audio_attach(clip)
    rater = make_user("two-tabs", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="tabs", dataset=dataset, task_type="pairwise", split_counts={"HM": 2}, raters=[rater], title="Sound study"
    )
    first, _ = (_listened(item) for item in campaign.assignments.get().items.order_by("position"))
    url = f"{live_server.url}/ratings/items/{first.token}/"
    tab_a, tab_b = page_for(rater), page_for(rater)
    tab_a.goto(url)
    tab_b.goto(url)
    tab_a.check("input[name='side'][value='left']")
    with tab_a.expect_navigation():
        tab_a.click("#submit-button")
    tab_b.check("input[name='side'][value='right']")
    with tab_b.expect_navigation():
        tab_b.click("#submit-button")
    assert tab_b.locator("#conflict").is_visible()
    assert "Caption A (left) describes the clip better" in tab_b.inner_text("#conflict")
    assert tab_b.is_checked("input[name='side'][value='right']"), "the rater's own choice is kept in the form"
    tab_b.screenshot(path=str(artifacts / "pairwise_conflict_409.png"), full_page=True)
    with tab_b.expect_navigation():
        tab_b.click("#replace-button")
    assert PairwiseVote.objects.get().choice == ("b" if first.a_on_left else "a")

    tab_a.goto(url)
    assert "Submitted" in tab_a.inner_text("#submitted") and tab_a.locator("input[name='side']").count() == 0
    assert "Caption B (right) describes the clip better" in tab_a.inner_text("#submitted")
    tab_a.screenshot(path=str(artifacts / "pairwise_submitted_view.png"), full_page=True)
    with tab_a.expect_navigation():
        tab_a.click("#change-button")
    assert tab_a.url.endswith("?change=1") and tab_a.is_checked("input[name='side'][value='right']")
    assert tab_a.inner_text("#submit-button") == "Save my changed answer"
    tab_a.screenshot(path=str(artifacts / "pairwise_change_answer.png"), full_page=True)


def test_server_side_errors_show_a_summary_and_bring_the_first_error_into_view(
    page_for, live_server, make_user, media_root, artifacts
):
    dataset, clips, systems = corpus_build(clip_count=1)
    clip_audio_attach(clips[0])
    rater = make_user("careless", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="errs", dataset=dataset, task_type="thumbs", systems=systems, human_captions_per_clip=1, raters=[rater]
    )
    item = _listened(campaign.assignments.get().items.get())
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{item.token}/")
    for key in ["4", "3", "5", "2", "3", "3", "4", "4", "y"]:
        page.keyboard.press(key)
    page.fill("input[name='fluency_4']", "-3")  # out of range: only the server says so
    with page.expect_navigation():
        page.click("#submit-button")
    summary = page.locator("[data-error-summary]")
    assert summary.is_visible() and "Caption 4: fluency" in summary.inner_text()
    assert page.evaluate("() => document.activeElement.hasAttribute('data-error-summary')")
    assert _in_viewport(page, ".penalty .errorlist"), "scrolled to the first wrong field"
    page.screenshot(path=str(artifacts / "thumbs_error_scrolled.png"))
    page.screenshot(path=str(artifacts / "thumbs_error_summary_full.png"), full_page=True)
    page.click("[data-error-summary] a")
    assert page.evaluate("() => document.activeElement.name") == "fluency_4"


def test_error_pages_and_the_huggins_screen_for_a_rater(page_for, live_server, make_user, artifacts):
    dataset, _, _ = corpus_build(clip_count=1)
    rater = make_user("strict-rater", "rater")
    headphone_pass_give(rater)
    campaign = campaign_setup(
        name="strict",
        dataset=dataset,
        task_type="pairwise",
        split_counts={"HC": 1},
        raters=[rater],
        requires_huggins=True,
    )
    item = campaign.assignments.get().items.get()
    page = page_for(rater)
    page.goto(f"{live_server.url}/ratings/items/{item.token}/")
    assert "/ratings/headphones/huggins/" in page.url
    assert "Which noise contains a faint tone?" in page.content()
    page.screenshot(path=str(artifacts / "huggins_screen.png"), full_page=True)
    page.goto(f"{live_server.url}/ratings/items/not-a-real-token/")
    assert "This page does not exist" in page.content() and "Go to your ratings" in page.content()
    page.screenshot(path=str(artifacts / "error_404_rater.png"), full_page=True)
    page.goto(f"{live_server.url}/ratings/staff/campaigns/")
    assert "You cannot open this page" in page.content() and "Traceback" not in page.content()
    page.screenshot(path=str(artifacts / "error_403_rater.png"), full_page=True)


def test_campaign_form_detail_raters_and_workbook_pages(page_for, live_server, make_user, media_root, artifacts):
    dataset, clips, systems = corpus_build(name="admin-pages", clip_count=3)
    raters = [make_user(name, "rater") for name in ("ana", "ben")]
    admin = make_user("organiser", staff=True)
    page = page_for(admin)
    # The form shows only the chosen task type's fields, and refuses more judgements than raters.
    page.goto(f"{live_server.url}/ratings/staff/campaigns/new/")
    page.select_option("select[name='task_type']", "thumbs")
    assert page.locator("input[name='count_hc']").is_hidden()
    assert page.locator("input[name='human_captions_per_clip']").is_visible()
    page.screenshot(path=str(artifacts / "campaign_form_thumbs.png"), full_page=True)
    page.select_option("select[name='task_type']", "pairwise")
    assert page.locator("input[name='count_hc']").is_visible()
    assert page.locator("input[name='human_captions_per_clip']").is_hidden()
    page.fill("input[name='name']", "too-few")
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.fill("input[name='count_hm']", "2")
    page.check(f"input[name='raters'][value='{raters[0].pk}']")
    with page.expect_navigation():
        page.click("form.campaign-form button[type='submit']")
    assert "4 judgements per item need at least 4 raters" in page.inner_text("[data-error-summary]")
    page.screenshot(path=str(artifacts / "campaign_form_error_summary.png"))

    thumbs = thumbs_campaign(name="offline", raters=raters, with_audio=True)
    Campaign.objects.filter(pk=thumbs.pk).update(title="Caption quality, spring")
    page.goto(f"{live_server.url}/ratings/staff/campaigns/")
    with page.expect_navigation():
        page.click(f"a[href='/ratings/staff/campaigns/{thumbs.pk}/']")
    assert page.locator("a", has_text="Download zip").count() == 2
    assert page.locator("a", has_text="Upload filled workbook").count() == 2
    page.screenshot(path=str(artifacts / "campaign_detail.png"), full_page=True)
    with page.expect_download() as download:
        page.locator("tr", has_text="ana").locator("a", has_text="Download zip").click()
    assert download.value.suggested_filename == f"study-{campaign_rater_code(thumbs.pk)}_P1_ana.zip"
    with page.expect_navigation():
        page.locator("tr", has_text="ben").locator("a", has_text="Upload filled workbook").click()
    visible = "os => os.filter((o) => o.value && !o.hidden).map((o) => o.value)"
    assert page.eval_on_selector_all("select[name='rater'] option", visible) == ["ana", "ben"]
    assert page.input_value("select[name='rater']") == "ben"
    page.screenshot(path=str(artifacts / "workbook_upload_page.png"), full_page=True)
    # A filled workbook with two wrong cells: the result page is titled for cell errors.
    content = rater_workbook_export(campaign=thumbs, rater=raters[1]).workbooks
    sheet_bytes = next(iter(content.values()))
    first_row = caption_rows(openpyxl.load_workbook(io.BytesIO(sheet_bytes))["Assessment"])[0]
    filled = workbook_fill(sheet_bytes, {(first_row[1], first_row[2]): {"E": 9, "F": "x"}})
    page.set_input_files(
        "input[name='file']", {"name": "P2_excel.xlsx", "mimeType": "application/octet-stream", "buffer": filled}
    )
    with page.expect_navigation():
        page.click("#upload-form button[type='submit']")
    assert "2 cells to fix in P2_excel.xlsx" in page.inner_text("h1")
    page.screenshot(path=str(artifacts / "workbook_upload_cell_errors.png"), full_page=True)
    page.goto(f"{live_server.url}/ratings/staff/workbooks/upload/?campaign=offline")
    page.check("input[name='create_campaign']")
    assert page.locator("input[name='new_campaign']").is_visible() and page.locator("#existing-campaign").is_hidden()
    assert "organiser" in page.eval_on_selector_all("select[name='rater'] option", visible), "any account"

    # Quality control explains its terms; the raters page has the headphone reset.
    for rater, side in ((raters[0], "left"),):
        pairs_campaign = campaign_setup(
            name="qc", dataset=dataset, task_type="pairwise", split_counts={"HC": 2}, raters=[rater]
        )
        for item in pairs_campaign.assignments.get().items.all():
            pairwise_item_submit(item=listened_give(item), side=side, seen_version=0)
    page.goto(f"{live_server.url}/ratings/staff/campaigns/{pairs_campaign.pk}/quality/")
    assert "Same as previous" in page.inner_text(".qc-terms") and "Longest run" in page.inner_text(".qc-terms")
    page.screenshot(path=str(artifacts / "campaign_quality_terms.png"), full_page=True)
    for _ in range(2):  # ben failed the antiphase screen twice: blocked until reset
        HeadphoneCheck.objects.create(
            rater=raters[1], trials=[], correct_count=2, passed=False, completed_at=timezone.now()
        )
    with page.expect_navigation():
        page.click("nav >> text=Raters")
    assert page.locator("table.raters tr", has_text="ana").count() == 1
    assert (
        page.locator("table.raters tr", has_text="ben").locator("button", has_text="Reset headphone checks").count()
        == 1
    )
    page.screenshot(path=str(artifacts / "raters_page.png"), full_page=True)
    with page.expect_navigation():
        page.locator("table.raters tr", has_text="ben").locator("button", has_text="Reset headphone checks").click()
    assert "Headphone screening of ben reset (2 attempts set aside)" in page.content()
