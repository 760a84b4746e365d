"""What a model loop's numbers rest on, against loopback servers that log every request: answers cached per
endpoint (a second server with the same model name gets its own requests), keys sent only to the server they are
for, every billed token kind counted with each provider's limits set explicitly, answers that are not captions
stored as failures with their reason, Ctrl-C leaving a resumable job, and prompt sets named for what they are."""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from corpus.models import Caption, CaptioningSystem
from metrics_bridge.captioning import providers
from metrics_bridge.captioning.answers import AnswerError, caption_from_answer
from metrics_bridge.captioning.pricing import Price
from metrics_bridge.captioning.prompts import (
    AFTER_AUDIOCAPBENCH,
    AFTER_AUDIOCAPBENCH_PROMPTS,
    prompt_set_builtin,
    prompt_set_label,
)
from metrics_bridge.captioning.providers import (
    KeyScopeError,
    endpoint_identity,
    endpoint_sha256,
    key_variable_check,
)
from metrics_bridge.management.commands import generate_captions
from metrics_bridge.models import CaptioningJob, ModelAnswer
from metrics_bridge.services.captioning import jobs as captioning
from metrics_bridge.services.captioning.jobs import (
    captioning_job_claim,
    captioning_job_cost,
    captioning_job_create,
    captioning_job_resume,
    captioning_job_summary,
)
from tests.metrics_bridge import test_captioning_jobs as captioning_jobs
from tests.metrics_bridge.fake_audio_apis import FakeAudioAPIs
from tests.metrics_bridge.test_captioning_jobs import FAST, audio_dataset, caption_for_request, run

pytestmark = pytest.mark.django_db
KEY_A, KEY_B, OPENAI_KEY = "sk-server-a-91e2", "sk-server-b-47c0", "sk-openai-real-0d3f"
media = captioning_jobs.media
apis = captioning_jobs.apis


@pytest.fixture
def second():
    server = FakeAudioAPIs()
    server.caption_suffix = " (server B)"
    server.start()
    yield server
    server.stop()


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("KEY_A", KEY_A)
    monkeypatch.setenv("KEY_B", KEY_B)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


def job_at(dataset, server, variable, *, provider="openai-compatible", model="audio-1", **options) -> CaptioningJob:
    return captioning_job_create(
        dataset=dataset, provider=provider, model=model, base_url=server.base_url(provider),
        api_key_variable=variable, status=CaptioningJob.Status.RUNNING, **options,
    )  # fmt: skip


def sent_keys(server) -> set[str]:
    return {r["headers"].get("authorization") or r["headers"].get("x-goog-api-key") for r in server.requests}


def command(server, *arguments, provider="openai-compatible", model="audio-1") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "generate_captions", "--dataset", "gen", "--provider", provider, "--model", model,
        "--base-url", server.base_url(provider), "--metrics", "ROUGE_L", "--no-wait", "--format", "json",
        *arguments, stdout=out, stderr=err,
    )  # fmt: skip
    return out.getvalue(), err.getvalue()


# --- the answer cache is per endpoint -----------------------------------------------------------------------


def test_a_second_server_with_the_same_model_name_gets_its_own_requests(apis, second, media, keys):
    dataset = audio_dataset(media)
    first = run(job_at(dataset, apis, "KEY_A", system_name="on-a"))
    assert first.status == "done" and len(apis.requests) == 3
    other = run(job_at(dataset, second, "KEY_B", system_name="on-b"))
    # the same provider, model, prompts and audio, another server: asked again, nothing from the first's cache
    assert other.status == "done" and len(second.requests) == 3 and len(apis.requests) == 3
    summary = captioning_job_summary(job=other)
    assert (summary["requested"], summary["cached"]) == (3, 0)
    b_captions = sorted(Caption.objects.filter(system__name="on-b").values_list("text", flat=True))
    assert b_captions == sorted(caption_for_request(r) + " (server B)" for r in second.requests)
    a_captions = sorted(Caption.objects.filter(system__name="on-a").values_list("text", flat=True))
    assert a_captions == sorted(caption_for_request(r) for r in apis.requests)
    assert {answer.base_url for answer in ModelAnswer.objects.all()} == {
        apis.base_url("openai-compatible"),
        second.base_url("openai-compatible"),
    }
    # each server's own cache still answers its re-run (written another way: the same server)
    again = run(job_at(dataset, apis, "KEY_A", system_name="on-a", concurrency=1))
    assert captioning_job_summary(job=again)["cached"] == 3 and len(apis.requests) == 3
    same_server = captioning_job_create(
        dataset=dataset, provider="openai-compatible", model="audio-1", api_key_variable="KEY_B",
        base_url=second.base_url("openai-compatible").replace("127.0.0.1", "127.0.0.1") + "/",
        status=CaptioningJob.Status.RUNNING, system_name="on-b",
    )  # fmt: skip
    assert captioning_job_summary(job=run(same_server))["cached"] == 3 and len(second.requests) == 3


def test_a_changed_generation_parameter_asks_again(apis, media, keys, monkeypatch):
    dataset = audio_dataset(media, clips=((440, 1.0),))
    run(job_at(dataset, apis, "KEY_A"))
    monkeypatch.setattr(providers, "MAX_ANSWER_TOKENS", 120)
    run(job_at(dataset, apis, "KEY_A"))
    assert [r["parameters"]["max_tokens"] for r in apis.requests] == [300, 120]
    assert ModelAnswer.objects.count() == 2


def test_the_endpoint_identity_names_server_model_parameters_and_audio():
    base = endpoint_identity(provider="openai-compatible", model="m", base_url="http://Box:8000/v1/")
    assert base == {
        "provider": "openai-compatible",
        "base_url": "http://box:8000/v1",
        "model": "m",
        "parameters": {"temperature": 0, "max_tokens": 300, "modalities": ["text"]},
        "audio": "wav 16000 Hz mono",
    }
    same = endpoint_identity(provider="openai-compatible", model="m", base_url="http://box:8000/v1")
    other = endpoint_identity(provider="openai-compatible", model="m", base_url="http://box:8001/v1")
    assert endpoint_sha256(base) == endpoint_sha256(same) != endpoint_sha256(other)
    gemini = endpoint_identity(provider="gemini", model="gemini-2.5-flash", base_url=None)
    assert gemini["base_url"] == "https://generativelanguage.googleapis.com"
    assert endpoint_identity(provider="dashscope", model="qwen-audio-turbo", base_url="")["audio"] == (
        "wav 16000 Hz mono, first 30 s"
    )


# --- a key goes only to the server it is for ------------------------------------------------------------------


def test_openai_compatible_without_a_key_variable_never_sends_openai_api_key(apis, second, media, keys):
    audio_dataset(media)
    with pytest.raises(CommandError, match=r"--api-key-env: name the environment variable holding the key of http"):
        command(second)
    with pytest.raises(CommandError, match="--api-key-env OPENAI_API_KEY: that variable holds the key of OpenAI's API"):
        command(second, "--api-key-env", "OPENAI_API_KEY")
    with pytest.raises(CommandError, match="--api-key-env: name the environment variable"):
        command(second, provider="openai", model="gpt-4o-audio-preview")  # OpenAI's client, another server
    assert second.requests == [] and not CaptioningJob.objects.exists()
    # each server with its own variable: each gets its own key and never the other's (nor OpenAI's)
    command(apis, "--api-key-env", "KEY_A", "--system", "a")
    command(second, "--api-key-env", "KEY_B", "--system", "b")
    assert sent_keys(apis) == {f"Bearer {KEY_A}"} and sent_keys(second) == {f"Bearer {KEY_B}"}
    assert len(second.requests) == 3


def test_a_stored_job_whose_key_may_not_go_to_its_server_fails_without_a_request(second, media, keys):
    dataset = audio_dataset(media, clips=((440, 1.0),))
    job = CaptioningJob.objects.create(
        dataset=dataset, provider="openai-compatible", model="audio-1", base_url=second.base_url("openai"),
        api_key_variable="OPENAI_API_KEY", system_name="x", clips_total=1, prompts={"sound": ["Describe."]},
        status=CaptioningJob.Status.RUNNING,
    )  # fmt: skip
    job = run(job)
    assert job.status == "failed" and job.error.startswith("not sent: --api-key-env OPENAI_API_KEY")
    assert second.requests == []


def test_key_variables_belong_to_their_servers():
    check = key_variable_check
    assert check(provider="gemini", base_url="", variable="") == "GEMINI_API_KEY"
    assert check(provider="openai", base_url="https://API.openai.com/v1/", variable="") == "OPENAI_API_KEY"
    intl = "https://dashscope-intl.aliyuncs.com/api/v1"
    assert check(provider="dashscope", base_url=intl, variable="") == "DASHSCOPE_API_KEY"
    assert check(provider="openai-compatible", base_url="http://box/v1", variable="VLLM_KEY") == "VLLM_KEY"
    refused = [
        ("openai-compatible", "http://box/v1", ""),
        ("openai-compatible", "http://box/v1", "GEMINI_API_KEY"),
        ("gemini", "https://proxy.example/gemini", ""),
        ("gemini", "", "OPENAI_API_KEY"),
        ("openai", "https://api.openai.com.evil.example/v1", "OPENAI_API_KEY"),
    ]
    for provider, url, variable in refused:
        with pytest.raises(KeyScopeError):
            check(provider=provider, base_url=url, variable=variable)


def test_the_form_refuses_a_providers_key_for_another_server(client, make_user, apis, media, keys):
    user = make_user("chief", "admin")
    client.force_login(user)
    dataset = audio_dataset(media, clips=((440, 1.0),))
    response = client.post(
        reverse("metrics_bridge:evaluate"),
        {"dataset": dataset.pk, "provider": "openai-compatible", "model": "audio-1",
         "base_url": apis.base_url("openai-compatible"), "api_key_variable": "OPENAI_API_KEY", "concurrency": 1,
         "action": "start"},
    )  # fmt: skip
    text = response.content.decode()
    assert response.status_code == 400 and "holds the key of OpenAI&#x27;s API" in text
    assert not CaptioningJob.objects.exists() and apis.requests == []


# --- costs and limits -------------------------------------------------------------------------------------------


def camel(value):
    """Proto JSON field names as camelCase (the API accepts either spelling)."""
    if not isinstance(value, dict):
        return value
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): camel(item) for key, item in value.items()}


def test_gemini_thinking_tokens_are_billed_and_the_limits_are_sent(apis, media, keys, settings, tmp_path):
    dataset = audio_dataset(media, clips=((440, 2.0), (660, 2.0)))
    apis.usage = {"thoughtsTokenCount": 400}
    job = run(job_at(dataset, apis, "KEY_A", provider="gemini", model="gemini-2.5-flash"))
    assert job.status == "done" and apis.bad == []
    # (the SDK writes the nested field in proto JSON's snake_case, which the API reads as well as camelCase)
    assert [camel(r["parameters"]) for r in apis.requests] == [
        {"maxOutputTokens": 300, "temperature": 0, "thinkingConfig": {"thinkingBudget": 0}}
    ] * 2
    # 80 audio tokens at $1/M, 20 text at $0.30/M, 12 answer + 400 thinking tokens at the output price $2.50/M
    per_answer = (80 * 1.0 + 20 * 0.3 + (12 + 400) * 2.5) / 1e6
    assert captioning_job_cost(job=job) == pytest.approx(2 * per_answer)
    answer = ModelAnswer.objects.first()
    assert (answer.completion_tokens, answer.reasoning_tokens) == (412, 400)
    assert answer.cost == pytest.approx(per_answer)
    # a 2.5 Pro model cannot turn thinking off: the least budget, on top of the answer's own tokens
    run(job_at(dataset, apis, "KEY_A", provider="gemini", model="gemini-2.5-pro", limit=1))
    assert camel(apis.requests[-1]["parameters"]) == {
        "maxOutputTokens": 428,
        "temperature": 0,
        "thinkingConfig": {"thinkingBudget": 128},
    }


def test_openai_reasoning_tokens_are_counted_once_and_limits_are_sent(apis, media, keys, settings, tmp_path):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"openai/o-audio": {"text_input": 1, "audio_input": 10, "output": 5,
                                                    "audio_tokens_per_second": 10}}))  # fmt: skip
    settings.CAPTIONING_PRICE_TABLE = str(table)
    dataset = audio_dataset(media, clips=((440, 2.0),))
    apis.usage = {"completion_tokens": 52, "completion_tokens_details": {"reasoning_tokens": 40}}
    job = run(job_at(dataset, apis, "KEY_A", provider="openai", model="o-audio"))
    (request,) = apis.requests
    assert request["parameters"] == {"max_completion_tokens": 300, "modalities": ["text"], "temperature": 0}
    answer = ModelAnswer.objects.get()
    assert (answer.completion_tokens, answer.reasoning_tokens) == (52, 40)
    price = Price(1, 10, 5, 10)
    assert captioning_job_cost(job=job) == pytest.approx((80 * 10 + 20 * 1 + 52 * 5) / 1e6)
    assert answer.cost == pytest.approx(price.answer_cost(prompt_tokens=100, completion_tokens=52, audio_tokens=80,
                                                          audio_seconds=2.0))  # fmt: skip


def test_dashscope_gets_temperature_max_tokens_and_its_result_format(apis, media, keys):
    dataset = audio_dataset(media, clips=((440, 2.0),))
    apis.usage = {"output_tokens_details": {"reasoning_tokens": 5}}
    run(job_at(dataset, apis, "KEY_A", provider="dashscope", model="qwen-audio-turbo"))
    (request,) = apis.requests
    assert request["parameters"] == {"temperature": 0, "max_tokens": 300, "result_format": "message"}
    assert ModelAnswer.objects.get().reasoning_tokens == 5


# --- answers that are not captions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, caption",
    [
        ('```json\n{"caption": "A dog barks twice."}\n```', "A dog barks twice."),
        ('{"Caption": "Rain falls on a tin roof."}', "Rain falls on a tin roof."),
        ('```\n{"description": "A bell rings."}\n```', "A bell rings."),
        ("1. A single train passes by.", "A single train passes by."),
    ],
)
def test_json_is_unwrapped(answer, caption):
    assert caption_from_answer(answer) == caption


@pytest.mark.parametrize(
    "answer, finish, blocked, message",
    [
        ("- A dog barks\n- Cars pass\n- Wind", "stop", "", "the answer is a list of 3 items"),
        ("1. Dog barking\n2. Traffic noise", "", "", "the answer is a list of 2 items"),
        ('```json\n{"sounds": ["dog", "car"]}\n```', "", "", "the answer is JSON without a caption field"),
        ('["a dog barks"]', "", "", "the answer is JSON, not a caption"),
        ("A dog barks while a car", "length", "", r"cut off at the token limit \(finish reason length\)"),
        ("A dog barks while", "MAX_TOKENS", "", r"cut off at the token limit \(finish reason MAX_TOKENS\)"),
        (None, "SAFETY", "Gemini withheld the answer (finish reason SAFETY)", "Gemini withheld the answer"),
    ],
)
def test_what_is_not_a_caption_is_refused_with_its_reason(answer, finish, blocked, message):
    with pytest.raises(AnswerError, match=message):
        caption_from_answer(answer, finish_reason=finish, blocked=blocked)


def test_truncated_blocked_and_list_answers_are_failures_with_their_reason(apis, media, keys, settings, tmp_path):
    dataset = audio_dataset(media, clips=((440, 2.0), (550, 2.0), (660, 2.0), (770, 2.0), (880, 2.0)))
    apis.script = ["fenced_json", "bullets", "truncated", "blocked", "ok"]
    job = run(job_at(dataset, apis, "KEY_A", concurrency=1))
    errors = {f["clip"]: f["error"] for f in captioning_job_summary(job=job)["failed"]}
    assert errors["gen-2.wav"].startswith("the answer is a list of 3 items, not one caption")
    assert errors["gen-3.wav"].startswith("the answer was cut off at the token limit (finish reason length)")
    assert errors["gen-4.wav"] == ("the provider's content filter withheld the answer (finish reason content_filter)")
    assert set(errors) == {"gen-2.wav", "gen-3.wav", "gen-4.wav"}
    captions = dict(Caption.objects.filter(system=job.system).values_list("clip__file_name", "text"))
    assert captions["gen-1.wav"] == caption_for_request(apis.requests[0])  # unwrapped: no braces, no key
    assert set(captions) == {"gen-1.wav", "gen-5.wav"} and ModelAnswer.objects.count() == 2
    # Gemini: cut at MAX_TOKENS, withheld for SAFETY, and a request blocked as a whole; each billed answer counted
    apis.script = ["truncated", "blocked", "prompt_blocked"]
    gemini = run(job_at(dataset, apis, "KEY_A", provider="gemini", model="gemini-2.5-flash", concurrency=1, limit=3))
    errors = [f["error"] for f in captioning_job_summary(job=gemini)["failed"]]
    assert errors[0].startswith("the answer was cut off at the token limit (finish reason MAX_TOKENS)")
    assert errors[1:] == [
        "Gemini withheld the answer (finish reason SAFETY)",
        "Gemini blocked the request (block reason PROHIBITED_CONTENT)",
    ]
    billed = (80 * 1.0 + 20 * 0.3 + 12 * 2.5) / 1e6  # two answers reported usage; the blocked request none
    assert captioning_job_cost(job=gemini) == pytest.approx(2 * billed)
    # a resume asks for them again (and files what is a caption now)
    assert captioning_job_resume(job=gemini)
    gemini = run(captioning_job_claim(job_id=gemini.pk))
    assert gemini.status == "done" and Caption.objects.filter(system=gemini.system).count() == 3


def test_ctrl_c_marks_the_job_interrupted_and_a_rerun_asks_only_for_the_rest(apis, media, keys, monkeypatch):
    audio_dataset(media)
    calls = []

    def interrupt_after_the_first_clip(self, counts):
        calls.append(counts["done"])
        if counts["done"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(generate_captions.Command, "_progress", interrupt_after_the_first_clip)
    with pytest.raises(CommandError, match=r"captioning job \d+ interrupted: the answers received so far are cached"):
        command(apis, "--api-key-env", "KEY_A", "--concurrency", "1")
    job = CaptioningJob.objects.get()
    assert job.status == CaptioningJob.Status.INTERRUPTED and job.get_status_display() == "Interrupted (resumable)"
    assert "run the same command again" in job.error and job.finished_at is not None
    assert ModelAnswer.objects.count() == 1 and job.system is None
    monkeypatch.setattr(generate_captions.Command, "_progress", lambda self, counts: None)
    out, _ = command(apis, "--api-key-env", "KEY_A", "--concurrency", "1")
    assert (json.loads(out)["cached"], json.loads(out)["requested"]) == (1, 2)
    assert len(apis.requests) == 3  # the first clip was not asked again
    assert captioning_job_resume(job=job)  # the interrupted job itself can be resumed from its page


def test_an_interrupted_worker_job_is_resumable(apis, media, keys, monkeypatch):
    dataset = audio_dataset(media)
    job = job_at(dataset, apis, "KEY_A", concurrency=1)

    def interrupt(counts):
        if counts["done"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(job, on_progress=interrupt)
    job.refresh_from_db()
    assert job.status == "interrupted" and job.items.count() == 2
    assert captioning_job_resume(job=job)
    job = run(captioning_job_claim(job_id=job.pk))
    assert job.status == "done" and len(apis.requests) == 3


# --- prompt sets named for what they are ------------------------------------------------------------------------


def test_the_built_in_prompt_set_is_named_written_after_audiocapbench(apis, media, keys, client, make_user, tmp_path):
    assert AFTER_AUDIOCAPBENCH.name != "audiocapbench"
    label = "written after AudioCapBench's description (not AudioCapBench's own prompts)"
    assert prompt_set_label("audiocapbench") == prompt_set_label(AFTER_AUDIOCAPBENCH.name) == label
    assert prompt_set_builtin("audiocapbench") is AFTER_AUDIOCAPBENCH  # the key stored jobs carry still works
    dataset = audio_dataset(media, clips=((440, 1.0), (660, 1.0)))
    command(apis, "--api-key-env", "KEY_A", "--prompt-set", "audiocapbench", "--system", "legacy-key")
    assert CaptioningJob.objects.get().prompt_set == AFTER_AUDIOCAPBENCH.name
    assert {r["prompt"] for r in apis.requests} == set(AFTER_AUDIOCAPBENCH_PROMPTS["sound"])
    old = CaptioningJob.objects.create(dataset=dataset, provider="gemini", model="m", api_key_variable="X",
                                       system_name="old", prompt_set="audiocapbench",
                                       prompts=AFTER_AUDIOCAPBENCH.as_dict())  # fmt: skip
    client.force_login(make_user("chief", "admin"))
    page = client.get(reverse("metrics_bridge:evaluate_job", args=[old.pk])).content.decode()
    assert "written after AudioCapBench&#x27;s description" in page
    form = client.get(reverse("metrics_bridge:evaluate")).content.decode()
    assert "Empty: AudioCapBench&#x27;s prompts" not in form
    assert "written after AudioCapBench&#x27;s description" in form and "Prompt file" in form


def test_a_prompt_file_for_whoever_holds_the_original_prompts(apis, media, keys, client, make_user, settings, tmp_path):
    audio_dataset(media, clips=((440, 1.0), (660, 1.0)))
    original = tmp_path / "audiocapbench-original.json"
    original.write_text(json.dumps({"sound": ["Caption this sound.", "What do you hear?"]}))
    command(apis, "--api-key-env", "KEY_A", "--prompt-file", str(original), "--system", "orig")
    job = CaptioningJob.objects.get()
    assert job.prompt_set == "file:audiocapbench-original.json"
    assert sorted(r["prompt"] for r in apis.requests) == ["Caption this sound.", "What do you hear?"]
    assert prompt_set_label(job.prompt_set) == "from the prompt file audiocapbench-original.json"
    with pytest.raises(CommandError, match="--prompt-file nope.txt: not an existing file"):
        command(apis, "--api-key-env", "KEY_A", "--prompt-file", "nope.txt")
    with pytest.raises(CommandError, match="not allowed with argument"):
        command(apis, "--api-key-env", "KEY_A", "--prompt-file", str(original), "--prompt-set", "audiocapbench")
    # the form's prompt file: the job's page names the file
    settings.CAPTIONING_KEY_VARIABLES = ["KEY_A"]
    settings.CAPTIONING_METRICS = ["ROUGE_L"]
    client.force_login(make_user("chief", "admin"))
    with original.open("rb") as upload:
        response = client.post(
            reverse("metrics_bridge:evaluate"),
            {"dataset": job.dataset.pk, "provider": "openai-compatible", "model": "audio-2",
             "base_url": apis.base_url("openai-compatible"), "api_key_variable": "KEY_A", "concurrency": 1,
             "prompt_file": upload, "action": "start"},
        )  # fmt: skip
    created = CaptioningJob.objects.get(model="audio-2")
    assert response.status_code == 302 and created.prompt_set == "file:audiocapbench-original.json"
    page = client.get(reverse("metrics_bridge:evaluate_job", args=[created.pk])).content.decode()
    assert "from the prompt file audiocapbench-original.json" in page


def test_legacy_answers_are_kept_but_never_served(apis, media, keys):
    """Answers cached before endpoint keys (made at a server the row does not name) are not reused."""
    dataset = audio_dataset(media, clips=((440, 1.0),))
    job = run(job_at(dataset, apis, "KEY_A"))
    answer = ModelAnswer.objects.get()
    ModelAnswer.objects.filter(pk=answer.pk).update(endpoint_sha256="0" * 64, base_url="")
    again = run(job_at(dataset, apis, "KEY_A"))
    assert len(apis.requests) == 2 and captioning_job_summary(job=again)["requested"] == 1
    assert job.items.get().answer_id == answer.pk  # the old job keeps its answer
    assert CaptioningSystem.objects.count() == 1


def test_fatal_setup_without_a_base_url_for_openai_compatible(media):
    dataset = audio_dataset(media, clips=((440, 1.0),))
    with pytest.raises(captioning.CaptioningSetupError, match="--base-url: an OpenAI-compatible provider needs"):
        captioning_job_create(dataset=dataset, provider="openai-compatible", model="m", api_key_variable="K")
    assert FAST.attempts == 5  # the shared retry policy the runs above used
