"""Evaluating a model through its API (generate_captions and its services) against loopback servers speaking the
providers' wire formats: the answers become a system, are scored and ranked; a re-run asks nothing again;
misbehaving servers (429 with Retry-After, 5xx, timeouts, malformed JSON, empty answers, refusals) leave a run
that completes with each failure named, and a resume that asks only for what is missing."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.audio import clip_attach_audio
from metrics_bridge.captioning.pricing import PRICE_TABLE
from metrics_bridge.captioning.prompts import AFTER_AUDIOCAPBENCH_PROMPTS, prompt_set_parse
from metrics_bridge.captioning.runner import RetryPolicy
from metrics_bridge.models import CaptioningJob, CaptioningJobItem, ModelAnswer, SystemScore
from metrics_bridge.services.captioning import jobs as captioning
from metrics_bridge.services.captioning.jobs import (
    captioning_job_cancel,
    captioning_job_claim,
    captioning_job_create,
    captioning_job_resume,
    captioning_job_run,
    captioning_job_summary,
)
from tests.metrics_bridge.fake_audio_apis import FakeAudioAPIs
from tests.metrics_bridge.test_captioning_clients import tone

pytestmark = pytest.mark.django_db
KEY = "sk-loopback-8c21f0"
FAST = RetryPolicy(attempts=5, base_delay=0.01)


@pytest.fixture
def apis():
    server = FakeAudioAPIs().start()
    yield server
    server.stop()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path


def audio_dataset(folder, name: str = "gen", clips=((440, 2.0), (660, 2.0), (880, 2.0)), domain: str = "sound"):
    """A dataset with one clip per (frequency, seconds) tone (stereo 44.1 kHz WAV) and three references each."""
    dataset = Dataset.objects.create(name=name, domain=domain)
    for number, (frequency, seconds) in enumerate(clips, start=1):
        file_name = f"{name}-{number}.wav"
        clip = Clip.objects.create(dataset=dataset, external_id=file_name, file_name=file_name)
        for position, text in enumerate(["a dog barks loudly", "cars pass while a dog barks", "traffic and barking"]):
            Caption.objects.create(clip=clip, text=text, role="reference", author_kind="human", position=position)
        path = tone(folder / file_name, frequency=frequency, seconds=seconds)
        clip_attach_audio(clip=clip, file=path, file_name=file_name)
    return dataset


def job_for(dataset, apis, provider="openai-compatible", model="audio-1", **options) -> CaptioningJob:
    job = captioning_job_create(
        dataset=dataset, provider=provider, model=model, base_url=apis.base_url(provider),
        api_key_variable="LOOP_KEY", status=CaptioningJob.Status.RUNNING, **options,
    )  # fmt: skip
    return job


def run(job, **options) -> CaptioningJob:
    return captioning_job_run(job=job, policy=options.pop("policy", FAST), **options)


def generate(apis, *arguments) -> dict:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "generate_captions", "--dataset", "gen", "--provider", "openai-compatible", "--model", "audio-1",
        "--base-url", apis.base_url("openai-compatible"), "--api-key-env", "LOOP_KEY", "--system", "loop",
        "--format", "json", "--metrics", "ROUGE_L", *arguments, stdout=out, stderr=err,
    )  # fmt: skip
    assert KEY not in out.getvalue() + err.getvalue()
    return json.loads(out.getvalue())


def test_generate_captions_files_a_system_scores_it_and_a_rerun_asks_nothing(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media)
    summary = generate(apis)
    assert apis.bad == []
    assert {key: summary[key] for key in ("system", "clips", "requested", "cached", "failed", "cost", "requests")} == {
        "system": "loop", "clips": 3, "requested": 3, "cached": 0, "failed": [], "cost": None, "requests": 3,
    }  # fmt: skip
    # the request shape: the clips in id order, AudioCapBench's sound prompts taking turns, 16 kHz mono WAV
    clips = list(Clip.objects.filter(dataset=dataset).order_by("pk"))
    sent = {request["audio_sha256"]: request for request in apis.requests}
    assert sorted(request["prompt"] for request in apis.requests) == sorted(
        AFTER_AUDIOCAPBENCH_PROMPTS["sound"][index % 2] for index in range(3)
    )
    assert {(r["model"], r["sample_rate"], r["channels"], round(r["seconds"], 2)) for r in apis.requests} == {
        ("audio-1", 16_000, 1, 2.0)
    }
    assert {r["headers"]["authorization"] for r in apis.requests} == {f"Bearer {KEY}"}
    # the answers (captions the server derived from the bytes it received) are the system's captions
    system = CaptioningSystem.objects.get(name="loop")
    captions = {c.clip_id: c.text for c in Caption.objects.filter(system=system, superseded_at__isnull=True)}
    answers = {item.clip_id: item.answer for item in CaptioningJobItem.objects.select_related("answer")}
    assert captions == {clip.pk: answers[clip.pk].text for clip in clips}
    assert sorted(captions.values()) == sorted(caption_for_request(r) for r in sent.values())
    prompts_by_clip = {clip.pk: AFTER_AUDIOCAPBENCH_PROMPTS["sound"][index % 2] for index, clip in enumerate(clips)}
    assert {clip_id: answer.prompt for clip_id, answer in answers.items()} == prompts_by_clip
    answer = next(iter(answers.values()))
    assert answer.raw_response["choices"][0]["message"]["content"] == answer.text
    assert (answer.prompt_tokens, answer.completion_tokens, answer.audio_tokens) == (100, 12, 80)
    assert answer.latency_seconds > 0 and answer.audio_seconds == pytest.approx(2.0, abs=0.01)
    # scored on its own, and on the leaderboard
    assert summary["metric_run"]["status"] == "done"
    assert SystemScore.objects.filter(system=system, metric="ROUGE_L").exists()
    out = io.StringIO()
    call_command("leaderboard", "--dataset", "gen", "--metrics", "ROUGE_L", "--format", "json", stdout=out,
                 stderr=io.StringIO())  # fmt: skip
    board = json.loads(out.getvalue())
    (row,) = [row for row in board["systems"] if row["system"] == "loop"]
    assert row["captions"] == 3 and row["metrics"]["ROUGE_L"] is not None
    by_domain = board["domains"]["systems"]["loop"]
    assert by_domain["sound"]["metrics"]["ROUGE_L"] == pytest.approx(row["metrics"]["ROUGE_L"])
    # a re-run sends no request and changes nothing
    again = generate(apis)
    assert len(apis.requests) == 3
    assert (again["requested"], again["cached"], again["failed"], again["requests"]) == (0, 3, [], 0)
    assert Caption.objects.filter(system=system).count() == 3


def caption_for_request(request: dict) -> str:
    return f"A dog barks while cars pass near sample {request['audio_sha256'][:6]}"


def test_retries_429_5xx_timeouts_and_malformed_json(apis, media, monkeypatch):
    """One clip at a time, so the script's misbehaviours hit known clips: every clip ends captioned."""
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media, clips=((440, 2.0), (550, 2.0), (660, 2.0), (770, 2.0)))
    apis.slow_seconds = 2.0
    apis.script = [
        ("status", 429, 1), "ok",  # clip 1: rate limited, waits the Retry-After second
        ("status", 500, None), ("status", 503, None), "ok",  # clip 2: two server errors
        "timeout", "ok",  # clip 3: the server does not answer within the client's timeout
        "malformed", "ok",  # clip 4: 200 with broken JSON
    ]  # fmt: skip
    job = run(job_for(dataset, apis, concurrency=1), timeout=0.7)
    assert job.status == CaptioningJob.Status.DONE and apis.bad == []
    items = list(job.items.order_by("clip_id"))
    assert [item.requests for item in items] == [2, 3, 2, 2]
    assert len(apis.requests) == 9
    assert all(item.outcome == "requested" and item.answer is not None for item in items)
    first, second = apis.requests[0], apis.requests[1]
    assert first["audio_sha256"] == second["audio_sha256"] and second["time"] - first["time"] >= 1.0
    assert Caption.objects.filter(system=job.system).count() == 4


def test_failed_clips_are_named_and_a_resume_asks_only_for_them(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media, clips=((440, 2.0), (550, 2.0), (660, 2.0), (770, 2.0)))
    apis.script = [("status", 500, None)] * 5 + ["empty", "refusal", "markdown"]
    job = run(job_for(dataset, apis, concurrency=1))
    assert len(apis.requests) == 8
    assert job.status == CaptioningJob.Status.DONE_WITH_FAILURES
    summary = captioning_job_summary(job=job)
    assert [(f["clip"], f["error"]) for f in summary["failed"]] == [
        ("gen-1.wav", "failed after 5 requests: HTTP 500: error 500"),
        ("gen-2.wav", "the model's answer is empty (finish reason stop)"),
        (
            "gen-3.wav",
            "the model declined to caption the clip: \"I'm sorry, but I can't help with identifying sounds in this "
            'recording." (finish reason stop)',
        ),
    ]
    # only the good answer is cached and filed; its markdown is gone
    (answer,) = ModelAnswer.objects.all()
    assert answer.text == caption_for_request(apis.requests[-1]) and answer.raw_text.startswith("**Caption:**")
    assert list(Caption.objects.filter(system=job.system).values_list("text", flat=True)) == [answer.text]
    assert (
        job.items.get(clip__file_name="gen-3.wav")
        .raw_response["choices"][0]["message"]["content"]
        .startswith("I'm sorry")
    )
    # resume: the three failed clips are asked again, the cached one is not
    assert captioning_job_resume(job=job)
    job = run(captioning_job_claim(job_id=job.pk))
    assert len(apis.requests) == 11 and job.status == CaptioningJob.Status.DONE
    assert Caption.objects.filter(system=job.system, superseded_at__isnull=True).count() == 4
    assert [item.outcome for item in job.items.order_by("clip_id")] == ["requested"] * 4
    # a new run of the same evaluation: everything from the cache
    again = run(job_for(dataset, apis, concurrency=1))
    assert len(apis.requests) == 11 and captioning_job_summary(job=again)["cached"] == 4


def test_a_refused_key_stops_the_run_and_files_nothing(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media)
    apis.script = [("status", 401, None)]
    job = run(job_for(dataset, apis, concurrency=1))
    assert job.status == CaptioningJob.Status.FAILED and len(apis.requests) == 1
    assert job.error == "stopped: failed: HTTP 401: error 401" and job.system is None
    monkeypatch.delenv("LOOP_KEY")
    missing = run(job_for(dataset, apis))
    assert missing.status == CaptioningJob.Status.FAILED and "LOOP_KEY is not set" in missing.error
    assert len(apis.requests) == 1


def test_the_command_fails_naming_the_clips_that_failed(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    audio_dataset(media)
    apis.script = ["refusal"]
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"done, some clips failed: 1 clip\(s\) failed. Run the same command again"):
        call_command(
            "generate_captions", "--dataset", "gen", "--provider", "openai-compatible", "--model", "audio-1",
            "--base-url", apis.base_url("openai-compatible"), "--api-key-env", "LOOP_KEY", "--concurrency", "1",
            "--metrics", "ROUGE_L", "--format", "json", stdout=out, stderr=io.StringIO(),
        )  # fmt: skip
    summary = json.loads(out.getvalue())
    assert (summary["requested"], [f["clip"] for f in summary["failed"]]) == (2, ["gen-1.wav"])
    assert summary["system"] == "openai-compatible/audio-1"
    with pytest.raises(CommandError, match="the environment variable NOT_THERE is not set"):
        call_command("generate_captions", "--dataset", "gen", "--provider", "gemini", "--model", "m",
                     "--api-key-env", "NOT_THERE")  # fmt: skip
    with pytest.raises(CommandError, match="--base-url 'ftp://x': must be an http"):
        call_command("generate_captions", "--dataset", "gen", "--provider", "gemini", "--model", "m",
                     "--api-key-env", "LOOP_KEY", "--base-url", "ftp://x")  # fmt: skip
    with pytest.raises(CommandError, match='dataset "nope" does not exist'):
        call_command("generate_captions", "--dataset", "nope", "--provider", "gemini", "--model", "m")


def test_a_changed_prompt_asks_again(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media)
    first = run(job_for(dataset, apis))
    assert len(apis.requests) == 3
    custom = prompt_set_parse(content=b"List every sound you hear.\n", source_name="mine.txt")
    second = run(job_for(dataset, apis, prompt_set=custom))
    assert len(apis.requests) == 6 and {r["prompt"] for r in apis.requests[3:]} == {"List every sound you hear."}
    assert captioning_job_summary(job=second)["requested"] == 3 and ModelAnswer.objects.count() == 6
    assert first.system == second.system  # same provider/model: the system's captions are replaced


def test_gemini_and_dashscope_with_trimming_note_and_costs(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media, clips=((440, 2.0), (660, 31.0)), domain="music")
    gemini = job_for(dataset, apis, provider="gemini", model="gemini-2.5-flash")
    price = PRICE_TABLE["gemini/gemini-2.5-flash"]
    assert gemini.estimated_cost == pytest.approx(
        sum((seconds * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6 for seconds in (2.0, 31.0)), rel=1e-3
    )
    gemini = run(gemini)
    assert gemini.status == "done" and apis.bad == []
    assert {r["provider"] for r in apis.requests} == {"gemini"}
    assert [r["prompt"] for r in apis.requests] == list(AFTER_AUDIOCAPBENCH_PROMPTS["music"])
    assert sorted(round(r["seconds"]) for r in apis.requests) == [2, 31]  # Gemini takes the whole clip
    assert captioning_job_summary(job=gemini)["cost"] == pytest.approx(
        2 * price.answer_cost(prompt_tokens=100, completion_tokens=12, audio_tokens=80, audio_seconds=0)
    )
    qwen = run(job_for(dataset, apis, provider="dashscope", model="qwen-audio-turbo"))
    assert qwen.status == "done" and apis.bad == []
    dashscope = [r for r in apis.requests if r["provider"] == "dashscope"]
    assert sorted(round(r["seconds"], 2) for r in dashscope) == [2.0, 30.0]  # trimmed to Qwen-Audio's limit
    assert {r["headers"]["authorization"] for r in dashscope} == {f"Bearer {KEY}"}
    long_caption = Caption.objects.get(system=qwen.system, clip__file_name="gen-2.wav")
    assert long_caption.note == (
        "Only the first 30 s of the 31.0 s clip were sent: qwen-audio-turbo accepts at most 30 s of audio."
    )
    assert Caption.objects.get(system=qwen.system, clip__file_name="gen-1.wav").note == ""
    assert captioning_job_summary(job=qwen)["cost"] is None  # no price for the model in the table


def test_cancel_keeps_the_answers_files_nothing_and_resume_finishes(apis, media, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    monkeypatch.setattr(captioning, "CHECK_SECONDS", 0)
    dataset = audio_dataset(media)
    job = job_for(dataset, apis, concurrency=1)

    def cancel_after_the_first_clip(counts):
        if counts["done"] == 1:
            captioning_job_cancel(job=job)

    job = run(job, on_progress=cancel_after_the_first_clip)
    assert job.status == CaptioningJob.Status.CANCELLED and len(apis.requests) == 1
    assert job.system is None and ModelAnswer.objects.count() == 1
    assert captioning_job_resume(job=job)
    job = run(captioning_job_claim(job_id=job.pk))
    assert job.status == "done" and len(apis.requests) == 3
    assert Caption.objects.filter(system=job.system).count() == 3


def test_a_job_is_claimed_once(media, apis):
    dataset = audio_dataset(media, clips=((440, 1.0),))
    job = captioning_job_create(dataset=dataset, provider="gemini", model="m", api_key_variable="X")
    assert captioning_job_claim(job_id=job.pk) is not None
    assert captioning_job_claim(job_id=job.pk) is None  # a second delivery while the first one lives
    assert captioning_job_claim(job_id=job.pk, stale_seconds=0) is not None  # the first one died


def test_setup_errors_name_the_parameter(media):
    dataset = audio_dataset(media, clips=((440, 1.0),))
    empty = Dataset.objects.create(name="silent")
    cases = [
        ({"provider": "anthropic"}, "--provider 'anthropic': use one of openai, gemini, dashscope, openai-compatible"),
        ({"model": " "}, "--model: give the model's name"),
        ({"concurrency": 0}, "--concurrency 0: must be between 1 and 32"),
        ({"limit": 0}, "--limit 0: must be at least 1"),
        ({"api_key_variable": "MY KEY"}, "--api-key-env 'MY KEY': not an environment variable name"),
        ({"base_url": "http://user:pw@host/v1"}, "--base-url: must not carry credentials"),
        ({"system_name": "x" * 101}, "longer than 100 characters"),
        ({"dataset": empty}, "dataset silent has no clip with audio"),
    ]
    for changes, message in cases:
        arguments = {"dataset": dataset, "provider": "gemini", "model": "m", **changes}
        with pytest.raises(captioning.CaptioningSetupError, match=message.replace("(", r"\(").replace(")", r"\)")):
            captioning_job_create(**arguments)
    assert not CaptioningJob.objects.exists()


def test_the_task_ends_a_job_that_breaks_off_without_leaking_the_key(media, monkeypatch):
    from metrics_bridge.tasks.captioning import generate_captions

    monkeypatch.setenv("LOOP_KEY", KEY)
    dataset = audio_dataset(media, clips=((440, 1.0),))
    job = captioning_job_create(dataset=dataset, provider="gemini", model="m", api_key_variable="LOOP_KEY")

    def broken(**arguments):
        raise RuntimeError(f"client could not start with {arguments['api_key']}")

    monkeypatch.setattr(captioning, "provider_for", broken)
    # The eager result's value, not .get(): get() refuses when Celery's process-wide "inside a task" flag was left
    # set, which is no state of this test's
    assert generate_captions.apply(args=[job.pk]).result == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "RuntimeError: client could not start with [redacted]"
    assert generate_captions.apply(args=[job.pk]).result == "skipped"  # a finished job is not taken again
