"""One class per API, each through the provider's official client library, pointed at `base_url` when given.

- OpenAI and OpenAI-compatible servers (vLLM, Ollama-style): chat completions, one user message with a text
  part and an `input_audio` part {"data": <base64>, "format": "wav"}, `modalities` ["text"], temperature 0
  (the `openai` package);
- Gemini: `generateContent` with the prompt and the audio as inline bytes with its MIME type, temperature 0
  (the `google-genai` package);
- DashScope (Qwen-Audio): multimodal conversation, the audio as a `data:audio/wav;base64,...` URI and the
  prompt as text (the `dashscope` package); at most 30 s of audio.

Every parameter that changes an answer is set explicitly rather than left to a server's default
(`request_parameters`): temperature 0, a cap on the answer's tokens, Gemini's thinking budget, DashScope's
`result_format`. They are part of the answer cache's key (`endpoint_identity`), with the server's base URL:
two servers serving "the same" model name are two endpoints.

Token counts are every kind each provider bills: Gemini's thinking tokens (`thoughtsTokenCount`, billed at the
output price and on by default for 2.5 models) are added to the answer's tokens; OpenAI's and DashScope's
reasoning tokens are already inside their completion/output counts and are not added twice.

Every client is built with its own retries off (the runner retries, the same way for all) and with the key
passed explicitly: left empty, the libraries would fall back to OPENAI_API_KEY / GEMINI_API_KEY /
DASHSCOPE_API_KEY and could send a key meant for one server to another. For the same reason those three
variables go only to their provider's own API (`key_variable_check`): a server at another base URL must be
given a variable of its own. Errors become ProviderError, which says whether to retry (429, 408, 5xx,
timeouts, broken connections, malformed JSON), after how long the server asked (Retry-After), and whether the
whole run should stop (the key or the model was refused).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import urlparse

from .audio import AudioSpec, PreparedAudio

PROVIDERS = ("openai", "gemini", "dashscope", "openai-compatible")
#: the key variable a provider's own API is asked with when none is named (an OpenAI-compatible server has none:
#: its key is whatever variable the job names)
DEFAULT_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY",
}
#: where each provider's client sends requests when no base URL is given
OWN_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
    "dashscope": "https://dashscope.aliyuncs.com/api/v1",
}
#: the providers' own key variables and the only hosts they are sent to
KEY_HOMES = {
    "OPENAI_API_KEY": ("OpenAI's API", ("api.openai.com",)),
    "GEMINI_API_KEY": ("Gemini's API", ("generativelanguage.googleapis.com",)),
    "DASHSCOPE_API_KEY": ("DashScope's API", ("dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com")),
}
#: Qwen-Audio's limit on the audio of one request
DASHSCOPE_MAX_SECONDS = 30.0
#: the answer's own tokens at most: a caption is a sentence or two; an answer cut here is a failure, not a caption
MAX_ANSWER_TOKENS = 300
#: Gemini's finish reasons for an answer withheld by a filter (MAX_TOKENS is a cut answer, handled apart)
GEMINI_BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "MODEL_ARMOR", "LANGUAGE"}
)
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
#: the key, the account or the model was refused: every other clip would fail the same way
FATAL_STATUS = frozenset({401, 402, 403, 404})


class ProviderError(Exception):
    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        fatal: bool = False,
        raw: dict | None = None,
    ):
        super().__init__(message)
        self.retryable, self.status, self.retry_after, self.fatal = retryable, status, retry_after, fatal
        self.raw = raw or {}


@dataclass
class ProviderAnswer:
    text: str | None
    raw: dict = field(default_factory=dict)
    prompt_tokens: int = 0  # every input token billed (audio included)
    completion_tokens: int = 0  # every output token billed (thinking included)
    audio_tokens: int | None = None  # of the prompt tokens, None: not reported
    reasoning_tokens: int | None = None  # of the completion tokens, None: not reported
    finish_reason: str = ""
    blocked: str = ""  # why the provider withheld the answer (a safety filter, a refusal), '' when it did not


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def status_error(
    status: int, message: str, *, retry_after: str | None = None, raw: dict | None = None
) -> ProviderError:
    return ProviderError(
        f"HTTP {status}: {message}"[:500],
        retryable=status in RETRYABLE_STATUS or status >= 500,
        status=status,
        retry_after=parse_retry_after(retry_after),
        fatal=status in FATAL_STATUS,
        raw=raw,
    )


def transport_error(error: Exception) -> ProviderError | None:
    """Timeouts, broken connections and malformed JSON, whichever library raised them (None: not one of these)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & {"TimeoutError", "TimeoutException", "Timeout", "APITimeoutError"}:
        return ProviderError(f"timed out ({type(error).__name__})", retryable=True)
    if names & {"JSONDecodeError", "InvalidJSONError"}:
        return ProviderError(f"the answer is not valid JSON ({error})"[:300], retryable=True)
    if names & {"ConnectionError", "APIConnectionError", "TransportError", "NetworkError", "RemoteProtocolError"}:
        return ProviderError(f"cannot reach the server ({type(error).__name__}: {error})"[:300], retryable=True)
    return None


class KeyScopeError(ValueError):
    """The key variable would go to a server it is not meant for; the message names the variable and the URL."""


def effective_base_url(provider: str, base_url: str | None) -> str:
    """The base URL requests go to (the provider's own when none is given), without a trailing slash and with
    the scheme and host lower-cased: the same server written two ways is one endpoint."""
    url = (base_url or "").strip() or OWN_BASE_URLS.get(provider, "")
    parsed = urlparse(url)
    netloc = parsed.netloc.lower()
    return parsed._replace(scheme=parsed.scheme.lower(), netloc=netloc).geturl().rstrip("/")


def key_variable_check(*, provider: str, base_url: str | None, variable: str | None) -> str:
    """The variable whose key the job's requests carry: the one named, else the provider's own for its own API.
    Refuses (KeyScopeError) a server at another base URL without a variable named for it, and a provider's own
    variable (OPENAI_API_KEY, ...) for any host but that provider's: a key goes only to the server it is for."""
    url = effective_base_url(provider, base_url)
    host = (urlparse(url).hostname or "").lower()
    variable = (variable or "").strip()
    if not variable:
        default = DEFAULT_KEY_VARIABLES.get(provider)
        if default is None or host not in KEY_HOMES[default][1]:
            raise KeyScopeError(
                f"--api-key-env: name the environment variable holding the key of {url or 'the server'} "
                "(a server at its own base URL gets a key variable of its own; the providers' default variables "
                "are sent only to their own APIs)"
            )
        return default
    home = KEY_HOMES.get(variable)
    if home is not None and host not in home[1]:
        where, hosts = home
        raise KeyScopeError(
            f"--api-key-env {variable}: that variable holds the key of {where} ({', '.join(hosts)}) and is sent "
            f"nowhere else; put the key of {url} in a variable of its own and name that one"
        )
    return variable


def gemini_thinking_budget(model: str) -> int | None:
    """The thinking budget sent to Gemini: 0 (off) for 2.5 Flash models, 128 (the least allowed) for 2.5 Pro, which
    cannot turn it off; None (not sent) for models without a budget setting. Thinking tokens are billed at the
    output price, so they are counted in every case."""
    name = model.lower()
    if "2.5-pro" in name:
        return 128
    if "2.5" in name:
        return 0
    return None


def request_parameters(provider: str, model: str) -> dict:
    """Every generation parameter sent with a request, as the API names it (all of them change answers)."""
    if provider == "openai":  # max_completion_tokens: the name OpenAI's reasoning models accept too
        return {"temperature": 0, "max_completion_tokens": MAX_ANSWER_TOKENS, "modalities": ["text"]}
    if provider == "openai-compatible":  # max_tokens: the name vLLM, Ollama and llama.cpp servers all read
        return {"temperature": 0, "max_tokens": MAX_ANSWER_TOKENS, "modalities": ["text"]}
    if provider == "gemini":
        budget = gemini_thinking_budget(model)
        # Gemini counts thinking tokens within max_output_tokens: the caption keeps its own MAX_ANSWER_TOKENS
        parameters = {"temperature": 0, "max_output_tokens": MAX_ANSWER_TOKENS + (budget or 0)}
        if budget is not None:
            parameters["thinking_budget"] = budget
        return parameters
    # DashScope: result_format "message" (choices[].message, as its multimodal API documents)
    return {"temperature": 0, "max_tokens": MAX_ANSWER_TOKENS, "result_format": "message"}


def audio_spec_for(provider: str) -> AudioSpec:
    """What is sent of a clip: OpenAI's audio models take WAV at 24 kHz; servers of open models (Qwen2-Audio on
    vLLM) resample to 16 kHz; Gemini reduces audio to 16 kbps mono itself (sending more costs upload time only);
    Qwen-Audio takes at most 30 s."""
    if provider == "openai":
        return AudioSpec("wav", 24_000, 1, None)
    if provider == "dashscope":
        return AudioSpec("wav", 16_000, 1, DASHSCOPE_MAX_SECONDS)
    return AudioSpec("wav", 16_000, 1, None)


def endpoint_identity(*, provider: str, model: str, base_url: str | None) -> dict:
    """What an answer depends on besides the prompt and the audio: the provider, the server, the model, every
    generation parameter and what is sent of the audio. The answer cache is keyed by its sha256."""
    return {
        "provider": provider,
        "base_url": effective_base_url(provider, base_url),
        "model": model,
        "parameters": request_parameters(provider, model),
        "audio": audio_spec_for(provider).label(),
    }


def endpoint_sha256(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class OpenAIChatProvider:
    """OpenAI chat completions with input_audio (also any OpenAI-compatible server)."""

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str | None, timeout: float):
        from openai import OpenAI

        self.name, self.model = name, model
        self.audio_spec = audio_spec_for(name)
        self.parameters = request_parameters(name, model)
        self.client = OpenAI(api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout)

    def caption(self, prompt: str, audio: PreparedAudio) -> ProviderAnswer:
        import openai

        content = [
            {"type": "text", "text": prompt},
            {
                "type": "input_audio",
                "input_audio": {"data": base64.b64encode(audio.data).decode(), "format": audio.format},
            },
        ]
        try:
            response = self.client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=[{"role": "user", "content": content}],
                **self.parameters,
            )
            completion = response.parse()
            raw = json.loads(response.http_response.text)
        except openai.APIStatusError as error:
            body = error.body if isinstance(error.body, dict) else {"body": str(error.body)[:500]}
            retry_after = error.response.headers.get("retry-after")
            message = str(body.get("message") or error.message)  # the server's own words, not the client's prefix
            raise status_error(error.status_code, message, retry_after=retry_after, raw=body) from None
        except Exception as error:
            converted = transport_error(error)
            if converted is None:
                raise
            raise converted from error
        if not completion.choices:
            raise ProviderError("the answer has no choices", retryable=True, raw=raw)
        choice = completion.choices[0]
        usage = completion.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        output_details = getattr(usage, "completion_tokens_details", None) if usage else None
        refusal = getattr(choice.message, "refusal", None)
        blocked = ""
        if refusal:
            blocked = f"the model refused: {refusal[:200]!r}"
        elif choice.finish_reason == "content_filter":
            blocked = "the provider's content filter withheld the answer (finish reason content_filter)"
        return ProviderAnswer(
            text=choice.message.content,
            raw=raw,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            # reasoning tokens are billed as output and already counted in completion_tokens
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            audio_tokens=getattr(details, "audio_tokens", None),
            reasoning_tokens=getattr(output_details, "reasoning_tokens", None),
            finish_reason=choice.finish_reason or "",
            blocked=blocked,
        )


class GeminiProvider:
    """Gemini generateContent with the audio as inline bytes."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None, timeout: float):
        from google import genai
        from google.genai import types

        self.name, self.model = "gemini", model
        self.audio_spec = audio_spec_for("gemini")
        self.parameters = request_parameters("gemini", model)
        options = types.HttpOptions(base_url=base_url or None, timeout=int(timeout * 1000))
        self.client = genai.Client(api_key=api_key, vertexai=False, http_options=options)

    def caption(self, prompt: str, audio: PreparedAudio) -> ProviderAnswer:
        from google.genai import errors, types

        contents = [
            types.Content(
                role="user",
                parts=[
                    types.Part.from_text(text=prompt),
                    types.Part.from_bytes(data=audio.data, mime_type=audio.mime_type),
                ],
            )
        ]
        parameters = dict(self.parameters)
        budget = parameters.pop("thinking_budget", None)
        thinking = types.ThinkingConfig(thinking_budget=budget) if budget is not None else None
        config = types.GenerateContentConfig(**parameters, thinking_config=thinking)
        try:
            response = self.client.models.generate_content(model=self.model, contents=contents, config=config)
        except errors.APIError as error:
            headers = getattr(getattr(error, "response", None), "headers", None) or {}
            raw = error.details if isinstance(error.details, dict) else {}
            message = error.message or str(error)
            raise status_error(error.code or 0, message, retry_after=headers.get("retry-after"), raw=raw) from None
        except Exception as error:
            converted = transport_error(error)
            if converted is None:
                raise
            raise converted from error
        raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"})
        usage = response.usage_metadata
        audio_tokens = None
        for detail in (usage.prompt_tokens_details or []) if usage else []:
            if str(getattr(detail.modality, "value", detail.modality)).upper() == "AUDIO":
                audio_tokens = detail.token_count or 0
        finish, blocked = "", ""
        if response.candidates:
            reason = response.candidates[0].finish_reason
            finish = str(getattr(reason, "value", reason) or "")
            if finish in GEMINI_BLOCKED:
                blocked = f"Gemini withheld the answer (finish reason {finish})"
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            reason = str(getattr(feedback.block_reason, "value", feedback.block_reason))
            message = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
            blocked = f"Gemini blocked the request (block reason {reason}{message})"
        thoughts = (usage.thoughts_token_count or 0) if usage else 0
        return ProviderAnswer(
            text=response.text,
            raw=raw,
            # tool-use prompt tokens are billed as input (none are expected: no tools are offered)
            prompt_tokens=((usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)) if usage else 0,
            # thinking tokens are billed at the output price but reported apart from the answer's
            completion_tokens=((usage.candidates_token_count or 0) + thoughts) if usage else 0,
            audio_tokens=audio_tokens,
            reasoning_tokens=thoughts if usage and usage.thoughts_token_count is not None else None,
            finish_reason=finish,
            blocked=blocked,
        )


class DashScopeProvider:
    """DashScope multimodal conversation (Qwen-Audio) with the audio as a data URI."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None, timeout: float):
        self.name, self.model = "dashscope", model
        self.api_key, self.base_url, self.timeout = api_key, base_url, timeout
        self.audio_spec = audio_spec_for("dashscope")
        self.parameters = request_parameters("dashscope", model)

    def caption(self, prompt: str, audio: PreparedAudio) -> ProviderAnswer:
        from dashscope import MultiModalConversation

        uri = f"data:{audio.mime_type};base64," + base64.b64encode(audio.data).decode()
        messages = [{"role": "user", "content": [{"audio": uri}, {"text": prompt}]}]
        extra = {"base_address": self.base_url} if self.base_url else {}
        try:
            response = MultiModalConversation.call(
                model=self.model,
                api_key=self.api_key,
                messages=messages,
                request_timeout=self.timeout,
                **self.parameters,
                **extra,
            )
        except Exception as error:
            converted = transport_error(error)
            if converted is None:
                raise
            raise converted from error
        output = _plain(response.output)
        usage = _plain(response.usage) or {}
        raw = {"status_code": response.status_code, "request_id": response.request_id, "output": output, "usage": usage}
        if response.status_code != 200:
            headers = {key.lower(): value for key, value in (getattr(response, "headers", None) or {}).items()}
            message = f"{response.code or ''} {response.message or ''}".strip() or "no message"
            raise status_error(int(response.status_code), message, retry_after=headers.get("retry-after"), raw=raw)
        try:
            choice = output["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(
                "the answer has no output.choices[0].message.content", retryable=True, raw=raw
            ) from None
        if isinstance(content, list):
            text = "".join(part.get("text") or "" for part in content if isinstance(part, dict))
        else:
            text = content if isinstance(content, str) else None
        input_details = usage.get("input_tokens_details") or {}
        output_details = usage.get("output_tokens_details") or {}
        audio_tokens = usage.get("audio_tokens", input_details.get("audio_tokens"))
        reasoning_tokens = output_details.get("reasoning_tokens")
        return ProviderAnswer(
            text=text,
            raw=raw,
            prompt_tokens=int(usage.get("input_tokens") or 0),
            # reasoning tokens (thinking Qwen models) are part of output_tokens, billed once
            completion_tokens=int(usage.get("output_tokens") or 0),
            audio_tokens=int(audio_tokens) if audio_tokens is not None else None,
            reasoning_tokens=int(reasoning_tokens) if reasoning_tokens is not None else None,
            finish_reason=str(choice.get("finish_reason") or ""),
        )


def _plain(value):
    """DashScope's response parts are dict subclasses with attribute access: plain JSON data for storage."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


def provider_for(*, provider: str, model: str, api_key: str, base_url: str | None = None, timeout: float = 120.0):
    """The client of `provider` for `model`. `api_key` must not be empty (see the module docstring)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (one of {', '.join(PROVIDERS)})")
    if not model.strip():
        raise ValueError("the model name must not be empty")
    if not api_key:
        raise ValueError("no API key given")
    if provider in ("openai", "openai-compatible"):
        return OpenAIChatProvider(name=provider, model=model, api_key=api_key, base_url=base_url, timeout=timeout)
    if provider == "gemini":
        return GeminiProvider(model=model, api_key=api_key, base_url=base_url, timeout=timeout)
    return DashScopeProvider(model=model, api_key=api_key, base_url=base_url, timeout=timeout)
