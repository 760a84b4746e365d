"""The plain-Python side of captioning through model APIs: prompts, answers, audio, prices, the providers' wire
formats (each official client against a loopback server that checks the request) and the retry runner."""

import base64
import json
import subprocess
import threading
import time
import wave
from email.utils import formatdate
from pathlib import Path

import pytest

from corpus.services.ffmpeg import ffmpeg_executable
from metrics_bridge.captioning.answers import AnswerError, caption_from_answer, strip_markdown
from metrics_bridge.captioning.audio import AudioPrepareError, AudioSpec, prepare_audio, trim_note
from metrics_bridge.captioning.pricing import PRICE_TABLE, Price, PriceTableError, price_table_load, run_estimate
from metrics_bridge.captioning.prompts import (
    AFTER_AUDIOCAPBENCH,
    AFTER_AUDIOCAPBENCH_PROMPTS,
    PromptSetError,
    prompt_set_parse,
)
from metrics_bridge.captioning.providers import ProviderError, parse_retry_after, provider_for
from metrics_bridge.captioning.runner import ClipRequest, RetryPolicy, caption_all
from tests.metrics_bridge.fake_audio_apis import FakeAudioAPIs, caption_for, wav_facts

KEY = "sk-test-4f1c9e"


def tone(path: Path, *, frequency: int = 440, seconds: float = 2.0, sample_rate: int = 44100, channels: int = 2):
    subprocess.run(
        [ffmpeg_executable(), "-v", "error", "-y", "-f", "lavfi", "-i",
         f"sine=frequency={frequency}:duration={seconds}:sample_rate={sample_rate}", "-ac", str(channels), str(path)],
        check=True,
    )  # fmt: skip
    return path


@pytest.fixture
def apis():
    server = FakeAudioAPIs().start()
    yield server
    server.stop()


# --- prompts ------------------------------------------------------------------------------------------------


def test_prompts_alternate_per_domain_and_custom_sets_are_checked():
    assert [AFTER_AUDIOCAPBENCH.prompt_for(domain="music", index=i)[1] for i in range(4)] == [0, 1, 0, 1]
    assert AFTER_AUDIOCAPBENCH.prompt_for(domain="speech", index=3)[0] == AFTER_AUDIOCAPBENCH_PROMPTS["speech"][1]
    custom = prompt_set_parse(content=b'{"music": ["Name the genre.", "Name the instruments."]}', source_name="p.json")
    assert custom.prompts["music"] == ("Name the genre.", "Name the instruments.")
    assert custom.prompts["sound"] == AFTER_AUDIOCAPBENCH_PROMPTS["sound"]  # domains left out keep the built-in set
    lines = prompt_set_parse(content=b"Describe the audio.\n\nWhat do you hear?\n", source_name="p.txt")
    assert lines.prompts["speech"] == ("Describe the audio.", "What do you hear?")
    for content, message in [
        (b'{"noise": "x"}', 'p.json: key "noise" is not a domain'),
        (b'{"sound": []}', 'p.json: "sound" must be a prompt or a non-empty list'),
        (b'{"sound": ["ok", 3]}', 'p.json: "sound" prompt 2: must be text'),
        (b'{"sound": ', "p.json: not valid JSON (line 1"),
        (b"  \n", "p.json: no prompt in the file"),
        (b"\xff\xfe", "p.json: not UTF-8 text"),
    ]:
        with pytest.raises(PromptSetError, match=message.replace("(", r"\(").replace("[", r"\[")):
            prompt_set_parse(content=content, source_name="p.json")


# --- answers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, caption",
    [
        ("**Caption:** A dog _barks_ near a_b road.", "A dog barks near a_b road."),
        ("# Audio caption\n\n- A dog barks near cars", "A dog barks near cars"),
        ('"A man speaks calmly."', "A man speaks calmly."),
        ("```\nA bell rings `twice`.\n```", "A bell rings twice."),
        ("A [siren](http://x) wails ***loudly***.", "A siren wails loudly."),
    ],
)
def test_markdown_is_stripped(answer, caption):
    assert strip_markdown(answer) == caption
    assert caption_from_answer(answer) == caption


@pytest.mark.parametrize(
    "answer, message",
    [
        ("", "empty"),
        ("  \n ", "empty"),
        (None, "empty"),
        ("** **", "no text once markdown is removed"),
        ("I'm sorry, but I can't help with that.", "declined"),
        ("Unfortunately, I cannot listen to audio files.", "declined"),
        ("As an AI, I do not have ears.", "declined"),
    ],
)
def test_empty_answers_and_refusals_are_not_captions(answer, message):
    with pytest.raises(AnswerError, match=message):
        caption_from_answer(answer)


# --- audio --------------------------------------------------------------------------------------------------


def test_audio_is_transcoded_to_the_provider_spec_and_trimmed(tmp_path):
    stereo = tone(tmp_path / "long.flac", seconds=31.0, sample_rate=48000, channels=2).read_bytes()
    audio = prepare_audio(stereo, AudioSpec("wav", 16_000, 1, 30.0), source_name="long.flac")
    (tmp_path / "sent.wav").write_bytes(audio.data)
    with wave.open(str(tmp_path / "sent.wav"), "rb") as sent:  # the standard library's reading, not the product's
        facts = (sent.getcomptype(), sent.getsampwidth(), sent.getframerate(), sent.getnchannels())
        assert facts == ("NONE", 2, 16000, 1)
        assert sent.getnframes() / sent.getframerate() == pytest.approx(30.0, abs=0.01)
    assert audio.trimmed and audio.original_seconds == pytest.approx(31.0, abs=0.01)
    assert trim_note(audio, model="qwen-audio-turbo") == (
        "Only the first 30 s of the 31.0 s clip were sent: qwen-audio-turbo accepts at most 30 s of audio."
    )
    whole = prepare_audio(stereo, AudioSpec("wav", 24_000, 1, None), source_name="long.flac")
    assert not whole.trimmed and wav_facts(whole.data)["sample_rate"] == 24_000
    assert trim_note(whole, model="m") == ""
    with pytest.raises(AudioPrepareError, match="broken.wav: audio cannot be decoded"):
        prepare_audio(b"RIFF not really", AudioSpec(), source_name="broken.wav")


# --- prices -------------------------------------------------------------------------------------------------


def test_estimate_is_clips_times_the_price_table(tmp_path):
    price = PRICE_TABLE["gemini/gemini-2.5-flash"]
    # 10 s and 40 s of audio at 32 tokens/s and $1/M audio, 60 prompt tokens at $0.30/M, 40 answer tokens at $2.50/M
    expected = (10 * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6 + (40 * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6
    assert run_estimate(price, [10.0, 40.0], max_seconds=None) == pytest.approx(expected)
    trimmed = (10 * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6 + (30 * 32 * 1.0 + 60 * 0.3 + 40 * 2.5) / 1e6
    assert run_estimate(price, [10.0, 40.0], max_seconds=30.0) == pytest.approx(trimmed)
    assert run_estimate(None, [10.0], max_seconds=None) is None
    assert price.answer_cost(prompt_tokens=100, completion_tokens=12, audio_tokens=80, audio_seconds=2.5) == (
        pytest.approx((80 * 1.0 + 20 * 0.3 + 12 * 2.5) / 1e6)
    )
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"dashscope/qwen-audio-turbo": {"text_input": 0.2, "audio_input": 0.2, "output": 0.6,
                                                                "audio_tokens_per_second": 25}}))  # fmt: skip
    assert price_table_load(table)["dashscope/qwen-audio-turbo"] == Price(0.2, 0.2, 0.6, 25)
    table.write_text(json.dumps({"dashscope/qwen-audio-turbo": {"text_input": 0.2}}))
    with pytest.raises(PriceTableError, match='prices.json: entry "dashscope/qwen-audio-turbo" needs numbers'):
        price_table_load(table)


def test_retry_after_as_seconds_or_http_date():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("  0.5 ") == 0.5
    assert parse_retry_after(formatdate(time.time() + 20, usegmt=True)) == pytest.approx(20, abs=1.5)
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


# --- each provider's wire format, through its official client -----------------------------------------------


@pytest.mark.parametrize(
    "provider, model, sample_rate",
    [
        ("openai", "gpt-4o-audio-preview", 24_000),
        ("openai-compatible", "Qwen2-Audio-7B-Instruct", 16_000),
        ("gemini", "gemini-2.5-flash", 16_000),
        ("dashscope", "qwen-audio-turbo", 16_000),
    ],
)
def test_each_provider_speaks_its_wire_format(apis, tmp_path, provider, model, sample_rate):
    client = provider_for(provider=provider, model=model, api_key=KEY, base_url=apis.base_url(provider), timeout=10)
    audio = prepare_audio(tone(tmp_path / "a.wav", seconds=2.0).read_bytes(), client.audio_spec, source_name="a.wav")
    answer = client.caption("Describe the sounds.", audio)
    assert apis.bad == []
    (request,) = apis.requests
    assert answer.text == caption_for(audio.data)  # the server read the very bytes that were sent
    assert (request["model"], request["prompt"]) == (model, "Describe the sounds.")
    assert (request["sample_rate"], request["channels"], request["sample_width"]) == (sample_rate, 1, 2)
    assert request["seconds"] == pytest.approx(2.0, abs=0.01)
    headers = {key.lower(): value for key, value in request["headers"].items()}
    if provider == "gemini":
        assert headers["x-goog-api-key"] == KEY and request["mime_type"] == "audio/wav"
        assert request["path"].endswith(f"/models/{model}:generateContent")
    else:
        assert headers["authorization"] == f"Bearer {KEY}"
    if provider == "dashscope":
        assert request["mime_type"] == "audio/wav"
    elif provider != "gemini":
        assert request["format"] == "wav"
    assert (answer.prompt_tokens, answer.completion_tokens, answer.audio_tokens) == (100, 12, 80)


@pytest.mark.parametrize("provider", ["openai-compatible", "gemini", "dashscope"])
def test_provider_errors_say_whether_to_retry(apis, tmp_path, provider):
    client = provider_for(provider=provider, model="m", api_key=KEY, base_url=apis.base_url(provider), timeout=0.5)
    audio = prepare_audio(tone(tmp_path / "a.wav").read_bytes(), client.audio_spec, source_name="a.wav")
    apis.slow_seconds = 2.0
    apis.script = [("status", 429, 7), ("status", 503, None), ("status", 401, None), "malformed", "timeout"]
    expected = [(True, 429, 7.0, False), (True, 503, None, False), (False, 401, None, True)]
    for retryable, status, retry_after, fatal in expected:
        with pytest.raises(ProviderError) as caught:
            client.caption("p", audio)
        error = caught.value
        assert (error.retryable, error.status, error.retry_after, error.fatal) == (
            retryable,
            status,
            retry_after,
            fatal,
        )
    for message in ("not valid JSON", "timed out"):
        with pytest.raises(ProviderError, match=message) as caught:
            client.caption("p", audio)
        assert caught.value.retryable
    assert len(apis.requests) == 5  # the clients' own retries are off: one request per call


def test_clients_never_fall_back_to_a_key_in_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    with pytest.raises(ValueError, match="no API key"):
        provider_for(provider="openai-compatible", model="m", api_key="", base_url="http://127.0.0.1:9/v1")


# --- the runner ---------------------------------------------------------------------------------------------


class ScriptedProvider:
    """A provider whose answers follow a script per clip; counts calls and the clips in flight."""

    model = "scripted"
    audio_spec = AudioSpec("wav", 8000, 1, None)

    def __init__(self, script: dict, delay: float = 0.0):
        self.script, self.delay = script, delay
        self.calls: dict[str, int] = {}
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()

    def caption(self, prompt, audio):
        from metrics_bridge.captioning.providers import ProviderAnswer

        with self.lock:
            self.calls[prompt] = self.calls.get(prompt, 0) + 1
            step = self.script.get(prompt, [])
            action = step.pop(0) if step else "ok"
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            if isinstance(action, ProviderError):
                raise action
            return ProviderAnswer(text=f"caption of {prompt}", prompt_tokens=50, completion_tokens=5)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="module")
def wav_bytes(tmp_path_factory):
    return tone(tmp_path_factory.mktemp("audio") / "t.wav", seconds=0.5).read_bytes()


def _requests(names, wav_bytes):
    return [ClipRequest(key=name, name=f"{name}.wav", prompt=name, load_audio=lambda: wav_bytes) for name in names]


def test_runner_retries_backs_off_and_names_failures(wav_bytes):
    retry = ProviderError("HTTP 500", retryable=True, status=500)
    provider = ScriptedProvider(
        {
            "a": [ProviderError("HTTP 429", retryable=True, status=429, retry_after=0.3), "ok"],
            "b": [retry] * 5,
            "c": [ProviderError("HTTP 400: bad", retryable=False, status=400)],
        }
    )
    sleeps, outcomes = [], []

    class RecordingPolicy(RetryPolicy):
        def delay(self, attempt, retry_after):
            sleeps.append(super().delay(attempt, retry_after))
            return sleeps[-1]

    policy = RecordingPolicy(attempts=5, base_delay=0.01)
    reason = caption_all(
        provider, _requests("abcd", wav_bytes), concurrency=2, policy=policy, price=None, on_outcome=outcomes.append
    )
    assert reason == ""
    by_clip = {outcome.request.key: outcome for outcome in outcomes}
    assert {key: outcome.requests for key, outcome in by_clip.items()} == {"a": 2, "b": 5, "c": 1, "d": 1}
    assert by_clip["a"].answer.caption == "caption of a" and by_clip["d"].answer is not None
    assert by_clip["b"].error == "failed after 5 requests: HTTP 500" and by_clip["b"].answer is None
    assert by_clip["c"].error == "failed: HTTP 400: bad"
    assert 0.3 in sleeps  # Retry-After honoured (and the 0.3 s were waited: see the service tests)
    assert sorted(t for t in sleeps if t != 0.3) == [0.01, 0.02, 0.04, 0.08]  # exponential for b's 4 retries


def test_runner_keeps_to_the_concurrency_limit_and_stops_when_asked(wav_bytes):
    provider = ScriptedProvider({}, delay=0.2)
    outcomes = []
    reason = caption_all(
        provider, _requests([f"c{i}" for i in range(6)], wav_bytes), concurrency=3, policy=RetryPolicy(),
        price=None, on_outcome=outcomes.append,
    )  # fmt: skip
    assert reason == "" and len(outcomes) == 6 and provider.max_in_flight == 3
    stopping = ScriptedProvider({}, delay=0.2)
    stopped: list = []
    reason = caption_all(
        stopping, _requests([f"c{i}" for i in range(8)], wav_bytes), concurrency=2, policy=RetryPolicy(),
        price=None, on_outcome=stopped.append, should_stop=lambda: len(stopped) >= 1, poll_seconds=0.05,
    )  # fmt: skip
    assert reason == "cancelled"
    assert 1 <= len(stopped) <= 3 and sum(stopping.calls.values()) == len(stopped)  # in-flight clips finished
    assert all(outcome.answer is not None for outcome in stopped)


def test_runner_stops_the_run_on_a_refused_key(wav_bytes):
    refused = ProviderError("HTTP 401: invalid key", retryable=False, status=401, fatal=True)
    provider = ScriptedProvider({"c0": [refused]})
    outcomes = []
    reason = caption_all(
        provider, _requests([f"c{i}" for i in range(5)], wav_bytes), concurrency=1, policy=RetryPolicy(),
        price=None, on_outcome=outcomes.append,
    )  # fmt: skip
    assert reason == "failed: HTTP 401: invalid key" and len(outcomes) == 1


def test_audio_that_cannot_be_read_fails_its_clip_only(wav_bytes):
    def missing():
        raise FileNotFoundError("audio/gone.wav")

    requests = [ClipRequest(key="gone", name="gone.wav", prompt="gone", load_audio=missing), *_requests("x", wav_bytes)]
    outcomes = []
    caption_all(
        ScriptedProvider({}), requests, concurrency=1, policy=RetryPolicy(), price=None, on_outcome=outcomes.append
    )
    assert [(o.request.key, o.answer is None) for o in outcomes] == [("gone", True), ("x", False)]
    assert outcomes[0].error == "cannot read the clip's audio: FileNotFoundError: audio/gone.wav"


def test_base64_of_the_prepared_audio_round_trips(tmp_path):
    audio = prepare_audio(tone(tmp_path / "b.wav").read_bytes(), AudioSpec(), source_name="b.wav")
    assert base64.b64decode(base64.b64encode(audio.data)) == audio.data
