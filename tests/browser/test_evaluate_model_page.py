""" "Evaluate a model" in headless Chromium with a real Celery worker (embedded broker): the estimate follows the
form, the job's progress bar moves while the worker captions clips through a loopback OpenAI-compatible server,
the answers land on the leaderboard, and one click makes the confirmation campaign. Also cancel, and 390 px."""

import pytest

from corpus.models import CaptioningSystem
from metrics_bridge.models import CaptioningJob
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.runs import current_broker
from ratings.models import Campaign
from tests.metrics_bridge.fake_audio_apis import FakeAudioAPIs
from tests.metrics_bridge.test_captioning_jobs import audio_dataset
from tests.metrics_bridge.test_metric_runs_worker import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
KEY = "sk-browser-5e0b71"
#: the content fits the viewport (wide tables scroll inside their cards; the shared top bar is not this page's)
FITS = "[...document.querySelectorAll('main > *')].every(e => e.getBoundingClientRect().right <= window.innerWidth + 1)"


def test_evaluate_a_model_with_a_real_worker(page_for, live_server, make_user, embedded_celery, media_root, artifacts,
                                             monkeypatch, tmp_path, settings):  # fmt: skip
    # the loopback server's own key variable: the providers' own (OPENAI_API_KEY, ...) go only to their APIs
    settings.CAPTIONING_KEY_VARIABLES = ["OPENAI_API_KEY", "LOOP_KEY"]
    apis = FakeAudioAPIs().start()
    apis.answer_delay = 0.5
    try:
        _evaluate(apis, page_for, live_server, make_user, embedded_celery, media_root, artifacts, monkeypatch, tmp_path)
    finally:
        apis.stop()


def _evaluate(apis, page_for, live_server, make_user, embedded_celery, media_root, artifacts, monkeypatch, tmp_path):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(tmp_path, clips=[(300 + 60 * n, 1.5) for n in range(6)])
    baseline = CaptioningSystem.objects.create(name="baseline")
    for clip in dataset.clips.all():
        clip.captions.create(text="a dog barks and a car passes", role="candidate", author_kind="machine",
                             system=baseline)  # fmt: skip
    worker = embedded_celery(LOOP_KEY=KEY, MEDIA_ROOT=str(media_root), CAPTIONING_METRICS="ROUGE_L")
    wait_for(lambda: live_workers(broker=current_broker()), timeout=120, worker=worker, what="worker heartbeat")
    page = page_for(make_user("chief", "admin"))
    page.set_default_timeout(60_000)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/metrics/evaluate/")
    assert "LOOP_KEY (set)" in page.inner_text("select[name='api_key_variable']")
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.select_option("select[name='provider']", "openai-compatible")
    page.fill("input[name='model']", "audio-1")
    page.fill("input[name='base_url']", apis.base_url("openai-compatible"))
    page.select_option("select[name='api_key_variable']", "LOOP_KEY")
    page.fill("input[name='concurrency']", "1")
    page.wait_for_function("document.querySelector('#estimate-text').textContent.includes('6 clips, 9 s of audio')")
    assert "no price known for this model" in page.inner_text("#estimate-text")
    page.screenshot(path=str(artifacts / "evaluate_form_1280.png"), full_page=True)
    assert KEY not in page.content()
    with page.expect_navigation():
        page.click("#evaluate-start")
    job = CaptioningJob.objects.get()
    assert page.url.endswith(f"/metrics/evaluate/jobs/{job.pk}/")
    # the bar moves while the worker captions (two different values before the end), then the page reloads done
    page.wait_for_function("+document.querySelector('#job-progress').value >= 2")
    first = int(page.get_attribute("#job-progress", "value"))
    page.screenshot(path=str(artifacts / "evaluate_job_running_1280.png"), full_page=True)
    page.wait_for_function("document.querySelector('#job-status').dataset.status === 'done'", timeout=120_000)
    assert first < 6 and page.inner_text("#job-count") == "6/6"
    page.wait_for_selector("#job-next")
    job.refresh_from_db()
    assert job.system.name == "openai-compatible/audio-1" and job.system.captions.count() == 6

    def scored() -> bool:
        job.refresh_from_db()
        return job.metric_run is not None and job.metric_run.is_finished

    wait_for(scored, timeout=120, worker=worker, what="the metric run the worker queued for the new captions")
    assert job.metric_run.status == "done" and job.metric_run.metrics == ["ROUGE_L"]
    page.screenshot(path=str(artifacts / "evaluate_job_done_1280.png"), full_page=True)
    assert KEY not in page.content()
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.screenshot(path=str(artifacts / "evaluate_job_done_390.png"), full_page=True)
    assert page.evaluate(FITS), "the page's content is wider than the phone"
    page.goto(f"{live_server.url}/metrics/evaluate/")
    page.screenshot(path=str(artifacts / "evaluate_form_390.png"), full_page=True)
    assert page.evaluate(FITS), "the page's content is wider than the phone"
    page.set_viewport_size({"width": 1280, "height": 900})
    # one click: the pairwise campaign against the best other system
    page.goto(f"{live_server.url}/metrics/evaluate/jobs/{job.pk}/")
    with page.expect_navigation():
        page.click("#job-campaign")
    campaign = Campaign.objects.get()
    assert page.url.endswith(f"/ratings/staff/campaigns/{campaign.pk}/")
    assert sorted(campaign.pairs.values_list("split", flat=True)) == ["HM"] * 12 + ["MM"] * 6
    assert "pairs of openai-compatible/audio-1 against baseline" in page.inner_text(".messages")
    page.screenshot(path=str(artifacts / "evaluate_campaign_created.png"), full_page=True)
    # a second job, cancelled from its page while the worker works on it
    apis.answer_delay = 1.0
    page.goto(f"{live_server.url}/metrics/evaluate/")
    page.select_option("select[name='dataset']", str(dataset.pk))
    page.select_option("select[name='provider']", "openai-compatible")
    page.fill("input[name='model']", "audio-2")
    page.fill("input[name='base_url']", apis.base_url("openai-compatible"))
    page.select_option("select[name='api_key_variable']", "LOOP_KEY")
    page.fill("input[name='concurrency']", "1")
    with page.expect_navigation():
        page.click("#evaluate-start")
    page.wait_for_function("+document.querySelector('#job-progress').value >= 1")
    with page.expect_navigation():
        page.click("text=Cancel")
    page.wait_for_function("document.querySelector('#job-status').dataset.status === 'cancelled'")
    second = CaptioningJob.objects.get(model="audio-2")
    wait_for(lambda: second.items.count() == len([r for r in apis.requests if r["model"] == "audio-2"]), timeout=90,
             worker=worker, what="the cancelled job's last answer")  # fmt: skip
    assert second.system is None and second.items.count() < 6
    worker.stop()
