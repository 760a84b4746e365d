"""The "Evaluate a model" page, its job page, the confirmation campaign one click away, and the guarantee that an
API key never appears in logs, in the database or on any page."""

import io
import json
import logging

import pytest
from django.core.management import call_command
from django.urls import reverse

from corpus.models import Caption, CaptioningSystem
from metrics_bridge.captioning.pricing import PRICE_TABLE
from metrics_bridge.models import CaptioningJob, ModelAnswer, SystemScore
from metrics_bridge.services.captioning.jobs import captioning_job_run
from ratings.models import Campaign
from tests.metrics_bridge import test_captioning_jobs as captioning_jobs
from tests.metrics_bridge.test_captioning_jobs import FAST, audio_dataset, job_for

pytestmark = pytest.mark.django_db
KEY = "sk-never-shown-73d1aa90"


# the loopback servers and the media folder of the job tests, as fixtures here too
apis = captioning_jobs.apis
media = captioning_jobs.media


@pytest.fixture
def admin_client(client, make_user):
    user = make_user("chief", "admin", staff=True)
    user.is_superuser = True  # the Django admin's change lists of jobs and answers are checked too
    user.save()
    client.force_login(user)
    return client


@pytest.fixture
def fast_scoring(settings):
    """The metric run a job starts scores one quick metric (eager Celery scores it inside the request)."""
    settings.CAPTIONING_METRICS = ["ROUGE_L"]


def test_the_form_shows_the_estimate_and_the_key_variables_but_no_key(admin_client, media, apis, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    dataset = audio_dataset(media, clips=((440, 2.0), (660, 4.0)))
    page = admin_client.get(reverse("metrics_bridge:evaluate"))
    text = page.content.decode()
    assert page.status_code == 200 and "Evaluate a model" in text
    assert "GEMINI_API_KEY (set)" in text and "OPENAI_API_KEY (not set here)" in text and KEY not in text
    expected = sum((seconds * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6 for seconds in (2.0, 4.0))
    estimate = admin_client.get(
        reverse("metrics_bridge:evaluate_estimate"),
        {"dataset": dataset.pk, "provider": "gemini", "model": "gemini-2.5-flash", "limit": ""},
    ).json()
    assert (estimate["clips"], round(estimate["audio_seconds"], 1)) == (2, 6.0)
    assert estimate["cost"] == pytest.approx(expected, rel=1e-3)
    assert estimate["price"] == PRICE_TABLE["gemini/gemini-2.5-flash"].__dict__
    one = admin_client.get(
        reverse("metrics_bridge:evaluate_estimate"),
        {"dataset": dataset.pk, "provider": "dashscope", "model": "qwen-audio-turbo", "limit": "1"},
    ).json()
    assert (one["clips"], one["cost"]) == (1, None)
    bad = admin_client.get(reverse("metrics_bridge:evaluate_estimate"), {"dataset": "x", "provider": "gemini"})
    assert bad.status_code == 400
    # "Update the estimate" renders it server-side too, and starts nothing
    posted = admin_client.post(
        reverse("metrics_bridge:evaluate"),
        {"dataset": dataset.pk, "provider": "gemini", "model": "gemini-2.5-flash", "api_key_variable": "GEMINI_API_KEY",
         "concurrency": 4, "action": "estimate"},
    )  # fmt: skip
    assert posted.status_code == 200 and "2 clips, 6 s of audio: about $" in posted.content.decode()
    assert not CaptioningJob.objects.exists()
    refused = admin_client.post(
        reverse("metrics_bridge:evaluate"),
        {"dataset": dataset.pk, "provider": "gemini", "model": "m", "api_key_variable": "SECRET_KEY",
         "concurrency": 4, "action": "start"},
    )  # fmt: skip
    assert refused.status_code == 400 and "Select a valid choice" in refused.content.decode()
    assert not CaptioningJob.objects.exists()


def test_start_follow_and_confirm_with_people(admin_client, media, apis, monkeypatch, settings, fast_scoring,
                                              django_capture_on_commit_callbacks):  # fmt: skip
    # the loopback server's own key variable: OPENAI_API_KEY goes only to OpenAI's API
    settings.CAPTIONING_KEY_VARIABLES = ["OPENAI_API_KEY", "LOOP_KEY"]
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media)
    # an existing system people already judged as the best one so far
    best = CaptioningSystem.objects.create(name="baseline")
    for clip in dataset.clips.all():
        Caption.objects.create(clip=clip, text=f"a dog is barking ({clip.pk})", role="candidate",
                               author_kind="machine", system=best)  # fmt: skip
    data = {
        "dataset": dataset.pk, "provider": "openai-compatible", "model": "audio-1",
        "base_url": apis.base_url("openai-compatible"), "api_key_variable": "LOOP_KEY", "system": "",
        "concurrency": 2, "limit": "", "action": "start",
    }  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(reverse("metrics_bridge:evaluate"), data)
    job = CaptioningJob.objects.get()
    assert started.status_code == 302 and started.url == reverse("metrics_bridge:evaluate_job", args=[job.pk])
    assert job.status == "done" and job.system.name == "openai-compatible/audio-1" and len(apis.requests) == 3
    assert job.metric_run is not None and SystemScore.objects.filter(system=job.system, metric="ROUGE_L").exists()
    page = admin_client.get(started.url).content.decode()
    assert "3/3" in page and "openai-compatible/audio-1" in page and caption_in(page)
    progress = admin_client.get(reverse("metrics_bridge:evaluate_job_progress", args=[job.pk])).json()
    assert {key: progress[key] for key in ("done", "total", "requested", "cached", "failed", "is_finished")} == {
        "done": 3, "total": 3, "requested": 3, "cached": 0, "failed": 0, "is_finished": True,
    }  # fmt: skip
    # one click: a pairwise campaign of the new system against the best one (by the leaderboard's metric)
    campaign_response = admin_client.post(reverse("metrics_bridge:evaluate_job_campaign", args=[job.pk]))
    campaign = Campaign.objects.get()
    assert campaign_response.url == reverse("ratings:campaign_detail", args=[campaign.pk])
    assert campaign.task_type == "pairwise" and campaign.title == "Which caption describes the sound better?"
    pairs = list(campaign.pairs.select_related("caption_a", "caption_b"))
    splits = sorted(pair.split for pair in pairs)
    assert splits == ["HM"] * 6 + ["MM"] * 3  # every shared clip: one MM pair, one HM pair per system
    for pair in pairs:
        systems = {pair.caption_a.system_id, pair.caption_b.system_id} - {None}
        assert systems == ({job.system_id, best.pk} if pair.split == "MM" else systems)
        assert systems <= {job.system_id, best.pk}
    detail = admin_client.get(campaign_response.url).content.decode()
    assert campaign.name in detail


def caption_in(page: str) -> bool:
    return any(answer.text in page for answer in ModelAnswer.objects.all())


def test_cancel_and_resume_from_the_page(admin_client, media, apis, monkeypatch, fast_scoring,
                                         django_capture_on_commit_callbacks):  # fmt: skip
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media)
    job = CaptioningJob.objects.create(dataset=dataset, provider="openai-compatible", model="audio-1",
                                       base_url=apis.base_url("openai-compatible"),
                                       api_key_variable="LOOP_KEY", system_name="x", clips_total=3,
                                       prompts={"sound": ["Describe."]})  # fmt: skip
    admin_client.post(reverse("metrics_bridge:evaluate_job_cancel", args=[job.pk]))
    job.refresh_from_db()
    assert (
        job.status == "cancelled"
        and "Resume" in admin_client.get(reverse("metrics_bridge:evaluate_job", args=[job.pk])).content.decode()
    )
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("metrics_bridge:evaluate_job_resume", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == "done" and len(apis.requests) == 3 and {r["prompt"] for r in apis.requests} == {"Describe."}


def test_other_roles_cannot_reach_the_pages(client, make_user, media):
    client.force_login(make_user("rita", "rater"))
    for name in ("metrics_bridge:evaluate", "metrics_bridge:evaluate_estimate"):
        assert client.get(reverse(name)).status_code in (302, 403)


def test_the_key_never_appears_in_logs_the_database_or_any_page(admin_client, media, apis, monkeypatch, settings):
    """Every provider, a success and failures (one server error echoes the key back), DEBUG logging everywhere."""
    monkeypatch.setenv("LOOP_KEY", KEY)
    records: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record):
            records.append(f"{record.name} {record.getMessage()} {getattr(record, 'event_fields', '')}")
            if record.exc_info:
                records.append(logging.Formatter().formatException(record.exc_info))

    handler = Capture(level=logging.DEBUG)
    loggers = [logging.getLogger(name) for name in ("", "captioneval", "openai", "httpx", "httpcore", "google_genai",
                                                     "httpx2", "httpcore2", "dashscope", "urllib3")]  # fmt: skip
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    logging.getLogger("").addHandler(handler)
    logging.getLogger("captioneval").addHandler(handler)
    try:
        dataset = audio_dataset(media, clips=((440, 2.0), (660, 2.0)))
        jobs = []
        for provider, model in (("openai-compatible", "audio-1"), ("gemini", "gemini-2.5-flash"),
                                ("dashscope", "qwen-audio-turbo")):  # fmt: skip
            apis.script = ["echo", ("status", 500, None), "ok"]
            jobs.append(captioning_job_run(job=job_for(dataset, apis, provider=provider, model=model,
                                                       concurrency=1), policy=FAST))  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        call_command("generate_captions", "--dataset", "gen", "--provider", "gemini", "--model", "gemini-2.5-flash",
                     "--base-url", apis.base_url("gemini"), "--api-key-env", "LOOP_KEY", "--metrics", "ROUGE_L",
                     "--no-wait", stdout=out, stderr=err)  # fmt: skip
    finally:
        logging.getLogger("").removeHandler(handler)
        logging.getLogger("captioneval").removeHandler(handler)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
    sent = [request["headers"].get("authorization") or request["headers"].get("x-goog-api-key") for request in
            apis.requests]  # fmt: skip
    assert len(sent) == 3 * 3 + 1 and all(KEY in value for value in sent)  # the key did go to the servers
    # the echoed key was stored redacted: the failure is there, the key is not
    echoed = [item for job in jobs for item in job.items.filter(outcome="failed")]
    assert len(echoed) == 3 and all("[redacted]" in item.error for item in echoed)
    logs = "\n".join(records)
    assert "captioning_job_started" in logs and "HTTP Request: POST" in logs and "Request body" in logs
    assert KEY not in logs
    assert KEY not in out.getvalue() + err.getvalue()
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    assert '"model": "metrics_bridge.modelanswer"' in dump.getvalue() and "LOOP_KEY" in dump.getvalue()
    assert KEY not in dump.getvalue()
    urls = [
        reverse("metrics_bridge:evaluate"),
        reverse("metrics_bridge:home"),
        reverse("metrics_bridge:leaderboard", args=[dataset.pk]),
        reverse("admin:index"),
        reverse("admin:metrics_bridge_captioningjob_changelist"),
        reverse("admin:metrics_bridge_modelanswer_changelist"),
    ]
    for job in CaptioningJob.objects.all():
        urls += [reverse("metrics_bridge:evaluate_job", args=[job.pk]),
                 reverse("metrics_bridge:evaluate_job_progress", args=[job.pk]),
                 reverse("admin:metrics_bridge_captioningjob_change", args=[job.pk])]  # fmt: skip
    for answer in ModelAnswer.objects.all():
        urls.append(reverse("admin:metrics_bridge_modelanswer_change", args=[answer.pk]))
    for url in urls:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert KEY not in response.content.decode(), url
    job_page = admin_client.get(reverse("metrics_bridge:evaluate_job", args=[jobs[0].pk])).content.decode()
    assert "[redacted]" in job_page and "LOOP_KEY" in job_page  # the page shows the failure and the variable name
    assert json.loads(dump.getvalue())  # a real dump was searched
