"""Loopback stand-ins for the three audio-model APIs, speaking each provider's wire format and checking each
request the way the real service would reject it:

- OpenAI chat completions (also OpenAI-compatible servers): POST <base>/chat/completions with
  `Authorization: Bearer <key>`, one user message whose content holds a text part and an `input_audio` part
  {"data": base64, "format": "wav"|"mp3"}, `modalities` ["text"], temperature 0;
- Gemini: POST <base>/<version>/models/<model>:generateContent with `x-goog-api-key`, contents with a text part
  and an `inlineData` part {"mimeType"/"mime_type": "audio/wav", "data": base64};
- DashScope: POST <base>/services/aigc/multimodal-generation/generation with `Authorization: Bearer <key>`,
  input.messages[0].content holding {"audio": "data:audio/wav;base64,..."} and {"text": prompt}.

A request that breaks the format gets 400 and is recorded in `bad`. `script` makes the server misbehave, one
action per request in arrival order (then "ok"): ("status", code, retry_after or None), "timeout" (answers
after `slow_seconds`), "malformed" (200 with broken JSON), "empty", "refusal", "markdown", "fenced_json" (the
caption as {"caption": ...} in a code fence), "bullets" (a list of three items), "truncated" (cut off at the token
limit: finish reason length / MAX_TOKENS), "blocked" (withheld by a safety filter: OpenAI content_filter, Gemini
SAFETY, DashScope's DataInspectionFailed 400), "prompt_blocked" (Gemini's promptFeedback.blockReason). Answers
are derived from the audio's sha256 (and `caption_suffix`), so a test can tell which clip, and which server, an
answer belongs to. Each request's generation parameters are recorded as the API received them (`parameters`);
`usage` adds fields to the usage each answer reports (e.g. Gemini's thoughtsTokenCount).
"""

import base64
import binascii
import hashlib
import io
import json
import re
import threading
import time
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?\d*/models/(?P<model>[^/:]+):generateContent$")
DASHSCOPE_PATH = "/api/v1/services/aigc/multimodal-generation/generation"


def caption_for(audio: bytes) -> str:
    return f"A dog barks while cars pass near sample {hashlib.sha256(audio).hexdigest()[:6]}"


def wav_facts(data: bytes) -> dict:
    with wave.open(io.BytesIO(data)) as reader:
        return {
            "sample_rate": reader.getframerate(),
            "channels": reader.getnchannels(),
            "sample_width": reader.getsampwidth(),
            "seconds": reader.getnframes() / reader.getframerate(),
        }


class FakeAudioAPIs:
    def __init__(self) -> None:
        self.requests: list[dict] = []  # every request: provider, path, headers, model, prompt, audio facts
        self.bad: list[str] = []
        self.script: list = []
        self.slow_seconds = 3.0
        self.answer_delay = 0.0  # seconds every answer takes (a page test watches progress)
        self.caption_suffix = ""  # tells this server's answers from another's
        self.usage: dict = {}  # fields added to every answer's usage, as the provider names them
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"apis": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def base_url(self, provider: str) -> str:
        return {"gemini": self.root, "dashscope": f"{self.root}/api/v1"}.get(provider, f"{self.root}/v1")

    def start(self) -> "FakeAudioAPIs":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_action(self):
        with self.lock:
            return self.script.pop(0) if self.script else "ok"


class _Handler(BaseHTTPRequestHandler):
    apis: FakeAudioAPIs
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 (http.server API)
        apis = self.apis
        with apis.lock:
            apis.in_flight += 1
            apis.max_in_flight = max(apis.max_in_flight, apis.in_flight)
        try:
            self._handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (a timeout test)
        finally:
            with apis.lock:
                apis.in_flight -= 1

    def _send(self, status: int, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _reject(self, message: str):
        self.apis.bad.append(f"{self.path}: {message}")
        return self._send(400, {"error": {"message": message}})

    def _handle(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            return self._reject("body is not JSON")
        gemini = GEMINI_PATH.match(self.path)
        if self.path.endswith("/v1/chat/completions"):
            provider, parsed = "openai", self._openai(body)
        elif gemini:
            provider, parsed = "gemini", self._gemini(body, gemini.group("model"))
        elif self.path == DASHSCOPE_PATH:
            provider, parsed = "dashscope", self._dashscope(body)
        else:
            return self._send(404, {"error": {"message": f"unknown path {self.path}"}})
        if isinstance(parsed, str):
            return self._reject(parsed)
        audio = parsed["audio"]
        try:
            facts = wav_facts(audio)
        except (wave.Error, EOFError) as error:
            return self._reject(f"audio is not a WAV file ({error})")
        record = {
            "provider": provider,
            "path": self.path,
            "headers": {key.lower(): value for key, value in self.headers.items()},
            "time": time.monotonic(),
            "audio_sha256": hashlib.sha256(audio).hexdigest(),
            **{key: value for key, value in parsed.items() if key != "audio"},
            **facts,
        }
        with self.apis.lock:
            self.apis.requests.append(record)
        action = self.apis.next_action()
        caption = caption_for(audio) + self.apis.caption_suffix
        finish = None
        time.sleep(self.apis.answer_delay)
        if action == "timeout":
            time.sleep(self.apis.slow_seconds)
        elif isinstance(action, tuple) and action[0] == "status":
            _, code, retry_after = action
            headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
            return self._send(code, _error_body(provider, code), headers)
        elif action == "malformed":
            return self._send(200, b'{"choices": [ {"message": oops')
        elif action == "empty":
            caption = ""
        elif action == "refusal":
            caption = "I'm sorry, but I can't help with identifying sounds in this recording."
        elif action == "echo":  # an error message that repeats what the request carried (keys included)
            sent = self.headers.get("Authorization") or self.headers.get("x-goog-api-key") or ""
            message = f"invalid request with credentials {sent}"
            if provider == "dashscope":
                return self._send(400, {"code": "InvalidParameter", "message": message, "request_id": "r-3"})
            return self._send(400, {"error": {"message": message}})
        elif action == "markdown":
            caption = f"**Caption:** {caption}"
        elif action == "fenced_json":
            caption = "```json\n" + json.dumps({"caption": caption}) + "\n```"
        elif action == "bullets":
            caption = "- A dog barks\n- Cars pass by\n- Wind blows"
        elif action == "truncated":
            caption, finish = caption[:20], {"gemini": "MAX_TOKENS"}.get(provider, "length")
        elif action == "blocked":
            if provider == "dashscope":
                body = {"code": "DataInspectionFailed", "message": "Input data may contain inappropriate content."}
                return self._send(400, {**body, "request_id": "r-4"})
            caption, finish = None, {"gemini": "SAFETY"}.get(provider, "content_filter")
        elif action == "prompt_blocked":
            return self._send(200, {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "modelVersion": "m"})
        answer = _answer(provider, caption, parsed.get("model", ""), finish=finish)
        usage_key = {"gemini": "usageMetadata"}.get(provider, "usage")
        answer[usage_key] = {**answer[usage_key], **self.apis.usage}
        return self._send(200, answer)

    # --- request checks: a string is the reason the real API would reject the request ---------------------

    def _openai(self, body: dict):
        if not (self.headers.get("Authorization") or "").startswith("Bearer "):
            return "missing Authorization: Bearer <key>"
        if body.get("modalities") != ["text"] or body.get("temperature") != 0:
            return "modalities must be ['text'] and temperature 0"
        messages = body.get("messages") or []
        if len(messages) != 1 or messages[0].get("role") != "user" or not isinstance(messages[0].get("content"), list):
            return "one user message with a list of content parts"
        parts = messages[0]["content"]
        texts = [part.get("text") for part in parts if part.get("type") == "text"]
        audios = [part.get("input_audio") or {} for part in parts if part.get("type") == "input_audio"]
        if len(texts) != 1 or len(audios) != 1:
            return "content must hold one text part and one input_audio part"
        if audios[0].get("format") not in ("wav", "mp3"):
            return f"input_audio.format must be wav or mp3, not {audios[0].get('format')!r}"
        try:
            audio = base64.b64decode(audios[0].get("data") or "", validate=True)
        except (binascii.Error, ValueError):
            return "input_audio.data is not base64"
        parameters = {key: value for key, value in body.items() if key not in ("messages", "model")}
        return {
            "model": body.get("model"),
            "prompt": texts[0],
            "audio": audio,
            "format": audios[0]["format"],
            "parameters": parameters,
        }

    def _gemini(self, body: dict, model: str):
        if not self.headers.get("x-goog-api-key"):
            return "missing x-goog-api-key"
        contents = body.get("contents") or []
        if len(contents) != 1:
            return "one content"
        parts = contents[0].get("parts") or []
        texts = [part["text"] for part in parts if "text" in part]
        inline = [part.get("inlineData") or part.get("inline_data") for part in parts]
        inline = [data for data in inline if data]
        if len(texts) != 1 or len(inline) != 1:
            return "parts must hold the prompt text and one inlineData part"
        mime = inline[0].get("mimeType") or inline[0].get("mime_type")
        if mime not in ("audio/wav", "audio/mpeg", "audio/flac"):
            return f"inlineData needs an audio MIME type, not {mime!r}"
        if (body.get("generationConfig") or {}).get("temperature") != 0:
            return "generationConfig.temperature must be 0"
        try:  # proto3 JSON: bytes in standard or URL-safe base64 (the SDK sends URL-safe)
            data = (inline[0].get("data") or "").replace("-", "+").replace("_", "/")
            audio = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return "inlineData.data is not base64"
        parameters = body.get("generationConfig") or {}
        return {"model": model, "prompt": texts[0], "audio": audio, "mime_type": mime, "parameters": parameters}

    def _dashscope(self, body: dict):
        if not (self.headers.get("Authorization") or "").startswith("Bearer "):
            return "missing Authorization: Bearer <key>"
        messages = (body.get("input") or {}).get("messages") or []
        if len(messages) != 1 or messages[0].get("role") != "user":
            return "input.messages must hold one user message"
        content = messages[0].get("content") or []
        audios = [part["audio"] for part in content if "audio" in part]
        texts = [part["text"] for part in content if "text" in part]
        if len(audios) != 1 or len(texts) != 1:
            return "content must hold one audio and one text entry"
        match = re.match(r"^data:(audio/[a-z0-9.+-]+);base64,(.*)$", audios[0], flags=re.S)
        if not match:
            return "audio must be a data:audio/...;base64, URI"
        try:
            audio = base64.b64decode(match.group(2), validate=True)
        except (binascii.Error, ValueError):
            return "the data URI is not base64"
        parameters = body.get("parameters") or {}
        return {
            "model": body.get("model"),
            "prompt": texts[0],
            "audio": audio,
            "mime_type": match.group(1),
            "parameters": parameters,
        }


def _error_body(provider: str, code: int) -> dict:
    if provider == "dashscope":
        return {
            "code": "Throttling.RateQuota" if code == 429 else "InternalError",
            "message": f"error {code}",
            "request_id": "r-1",
        }
    if provider == "gemini":
        return {"error": {"code": code, "message": f"error {code}", "status": "RESOURCE_EXHAUSTED"}}
    return {"error": {"message": f"error {code}", "type": "server_error"}}


def _answer(provider: str, caption: str | None, model: str, finish: str | None = None) -> dict:
    if provider == "gemini":
        candidate = {"finishReason": finish or "STOP"}
        if caption is not None:
            candidate["content"] = {"role": "model", "parts": [{"text": caption}]}
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": 100,
                "candidatesTokenCount": 12,
                "totalTokenCount": 112,
                "promptTokensDetails": [
                    {"modality": "AUDIO", "tokenCount": 80},
                    {"modality": "TEXT", "tokenCount": 20},
                ],
            },
            "modelVersion": model,
        }
    if provider == "dashscope":
        return {
            "output": {
                "choices": [
                    {
                        "finish_reason": finish or "stop",
                        "message": {"role": "assistant", "content": [{"text": caption}]},
                    }
                ]
            },
            "usage": {"input_tokens": 100, "output_tokens": 12, "audio_tokens": 80},
            "request_id": "r-2",
        }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": finish or "stop", "message": {"role": "assistant", "content": caption}}
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 12,
            "total_tokens": 112,
            "prompt_tokens_details": {"audio_tokens": 80},
        },
    }
