"""A minimal client for OpenAI-compatible chat-completions endpoints (standard library only), with a cache.

Settings come in `ScoringContext.llm` = {"api_base", "api_key", "model"}; responses are cached by
(model, sha256 of the prompt) through `ScoringContext.llm_cache` (get / put), so a rerun asks nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any


class LLMError(RuntimeError):
    """The endpoint could not be reached, refused the request, or answered something unusable."""


@dataclass
class ChatResponse:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    prompt_hash: str


class InMemoryLLMCache:
    """The cache protocol of ScoringContext.llm_cache, kept in a dict (tests, scripts, one-off runs)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], dict] = {}

    def get(self, model: str, prompt_hash: str) -> dict | None:
        return self.entries.get((model, prompt_hash))

    def put(self, model: str, prompt_hash: str, text: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.entries[(model, prompt_hash)] = {
            "text": text,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
        }


def endpoint_unavailable_reason(settings: dict | None, metric: str) -> str | None:
    if not settings or not settings.get("api_base") or not settings.get("model"):
        return f"{metric}: no OpenAI-compatible endpoint configured (set LLM_API_BASE and LLM_MODEL)"
    return None


def prompt_hash(messages: list[dict]) -> str:
    """sha256 of the exact messages sent (system and user text), the cache key with the model name."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _cached_entry(entry: Any) -> tuple[str, int, int] | None:
    """Accept what a cache may return: a dict, a plain string, or a row with response_text (LLMResponse)."""
    if entry is None:
        return None
    if isinstance(entry, str):
        return entry, 0, 0
    if isinstance(entry, dict):
        text = entry.get("text", entry.get("response_text"))
        return (
            (text, int(entry.get("prompt_tokens") or 0), int(entry.get("completion_tokens") or 0))
            if text is not None
            else None
        )
    text = getattr(entry, "response_text", None) or getattr(entry, "text", None)
    if text is None:
        return None
    return text, int(getattr(entry, "prompt_tokens", 0) or 0), int(getattr(entry, "completion_tokens", 0) or 0)


class ChatClient:
    def __init__(
        self,
        api_base: str,
        model: str,
        api_key: str | None = None,
        cache: Any = None,
        timeout: float = 120.0,
        retries: int = 2,
        temperature: float = 0.0,
    ) -> None:
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.cache = cache if cache is not None else InMemoryLLMCache()
        self.timeout = timeout
        self.retries = retries
        self.temperature = temperature
        self.http_calls = 0

    @classmethod
    def from_context(cls, settings: dict, cache: Any = None) -> ChatClient:
        return cls(settings["api_base"], settings["model"], settings.get("api_key"), cache=cache)

    def complete(self, user: str, system: str | None = None) -> ChatResponse:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        key = prompt_hash(messages)
        cached = _cached_entry(self.cache.get(self.model, key))
        if cached is not None:
            return ChatResponse(cached[0], cached[1], cached[2], cached=True, prompt_hash=key)
        body = {"model": self.model, "messages": messages, "temperature": self.temperature}
        data = self._post(body)
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            raise LLMError(
                f"{self.url}: answer without choices[0].message.content: {json.dumps(data)[:300]}"
            ) from error
        if not isinstance(text, str):
            raise LLMError(f"{self.url}: choices[0].message.content is not text: {text!r}"[:300])
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        self.cache.put(self.model, key, text, prompt_tokens, completion_tokens)
        return ChatResponse(text, prompt_tokens, completion_tokens, cached=False, prompt_hash=key)

    def _post(self, body: dict) -> dict:
        payload = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            self.http_calls += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read().decode("utf-8")
                try:
                    return json.loads(raw)
                except json.JSONDecodeError as error:
                    raise LLMError(f"{self.url}: answer is not JSON: {raw[:200]!r}") from error
            except urllib.error.HTTPError as error:
                detail = error.read().decode("utf-8", "replace")[:300]
                last_error = LLMError(f"{self.url}: HTTP {error.code}: {detail}")
                if error.code not in (429, 500, 502, 503, 504):
                    raise last_error from error
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                last_error = LLMError(f"{self.url}: cannot reach the endpoint ({error})")
            if attempt < self.retries:
                time.sleep(min(2.0**attempt, 8.0))
        raise last_error or LLMError(f"{self.url}: no answer")
