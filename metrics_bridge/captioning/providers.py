"""One class per API, each through the provider's official client library, pointed at `base_url` when given.

- OpenAI and OpenAI-compatible servers (vLLM, Ollama-style): chat completions, one user message with a text
  part and an `input_audio` part {"data": <base64>, "format": "wav"}, `modalities` ["text"], temperature 0
  (the `openai` package);
- Gemini: `generateContent` with the prompt and the audio as inline bytes with its MIME type, temperature 0
  (the `google-genai` package);
- DashScope (Qwen-Audio): multimodal conversation, the audio as a `data:audio/wav;base64,...` URI and the
  prompt as text (the `dashscope` package); at most 30 s of audio.

Every client is built with its own retries off (the runner retries, the same way for all) and with the key
passed explicitly: left empty, the libraries would fall back to OPENAI_API_KEY / GEMINI_API_KEY /
DASHSCOPE_API_KEY and could send a key meant for one server to another. Errors become ProviderError, which
says whether to retry (429, 408, 5xx, timeouts, broken connections, malformed JSON), after how long the
server asked (Retry-After), and whether the whole run should stop (the key or the model was refused).
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from .audio import AudioSpec, PreparedAudio

PROVIDERS = ("openai", "gemini", "dashscope", "openai-compatible")
DEFAULT_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY",
}
#: Qwen-Audio's limit on the audio of one request
DASHSCOPE_MAX_SECONDS = 30.0
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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    audio_tokens: int | None = None
    finish_reason: str = ""


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


class OpenAIChatProvider:
    """OpenAI chat completions with input_audio (also any OpenAI-compatible server)."""

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str | None, timeout: float):
        from openai import OpenAI

        self.name, self.model = name, model
        # OpenAI's audio models take WAV at 24 kHz; servers of open models (Qwen2-Audio on vLLM) resample to 16 kHz.
        self.audio_spec = AudioSpec("wav", 24_000 if name == "openai" else 16_000, 1, None)
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
                modalities=["text"],
                temperature=0,
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
        return ProviderAnswer(
            text=choice.message.content,
            raw=raw,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            audio_tokens=getattr(details, "audio_tokens", None),
            finish_reason=choice.finish_reason or "",
        )


class GeminiProvider:
    """Gemini generateContent with the audio as inline bytes."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None, timeout: float):
        from google import genai
        from google.genai import types

        self.name, self.model = "gemini", model
        # Gemini reduces audio to 16 kbps mono itself: sending more costs upload time only.
        self.audio_spec = AudioSpec("wav", 16_000, 1, None)
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
        try:
            response = self.client.models.generate_content(
                model=self.model, contents=contents, config=types.GenerateContentConfig(temperature=0)
            )
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
        finish = ""
        if response.candidates:
            reason = response.candidates[0].finish_reason
            finish = str(getattr(reason, "value", reason) or "")
        return ProviderAnswer(
            text=response.text,
            raw=raw,
            prompt_tokens=(usage.prompt_token_count or 0) if usage else 0,
            completion_tokens=(usage.candidates_token_count or 0) if usage else 0,
            audio_tokens=audio_tokens,
            finish_reason=finish,
        )


class DashScopeProvider:
    """DashScope multimodal conversation (Qwen-Audio) with the audio as a data URI."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None, timeout: float):
        self.name, self.model = "dashscope", model
        self.api_key, self.base_url, self.timeout = api_key, base_url, timeout
        self.audio_spec = AudioSpec("wav", 16_000, 1, DASHSCOPE_MAX_SECONDS)

    def caption(self, prompt: str, audio: PreparedAudio) -> ProviderAnswer:
        from dashscope import MultiModalConversation

        uri = f"data:{audio.mime_type};base64," + base64.b64encode(audio.data).decode()
        messages = [{"role": "user", "content": [{"audio": uri}, {"text": prompt}]}]
        extra = {"base_address": self.base_url} if self.base_url else {}
        try:
            response = MultiModalConversation.call(
                model=self.model, api_key=self.api_key, messages=messages, request_timeout=self.timeout, **extra
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
        audio_tokens = usage.get("audio_tokens")
        return ProviderAnswer(
            text=text,
            raw=raw,
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
            audio_tokens=int(audio_tokens) if audio_tokens is not None else None,
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
