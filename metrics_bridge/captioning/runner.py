"""Caption clips through a provider: retries with exponential backoff, Retry-After honoured, a concurrency limit,
and a stop (cancel, or an error every clip would hit) that lets requests in flight finish.

Threads only transcode and talk to the API. Everything else happens in the calling thread: reading each clip's
audio (`load_audio`), `on_outcome` for each finished clip (the Django side stores answers there), and
`should_stop` (a cancel flag in the database). Answers that come back while stopping are still handed over:
they are paid for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .answers import AnswerError, caption_from_answer
from .audio import AudioPrepareError, prepare_audio, trim_note
from .pricing import Price
from .providers import ProviderError


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # requests per clip at most
    base_delay: float = 1.0  # seconds before the first retry; doubled each time
    max_delay: float = 60.0
    max_retry_after: float = 300.0  # a longer Retry-After is cut to this

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after the attempt-th request failed: the server's Retry-After, else exponential."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return min(self.base_delay * 2 ** (attempt - 1), self.max_delay)


@dataclass(frozen=True)
class ClipRequest:
    key: Any  # the caller's id of the clip
    name: str  # how messages name the clip
    prompt: str
    load_audio: Callable[[], bytes]  # called in the calling thread


@dataclass
class Answer:
    caption: str  # markdown stripped, one line
    raw_text: str  # the model's text as it came
    raw_response: dict
    latency_seconds: float  # of the request that answered
    prompt_tokens: int
    completion_tokens: int
    audio_tokens: int | None
    reasoning_tokens: int | None
    cost: float | None  # None: no price for the model
    note: str  # e.g. the clip was trimmed to the model's limit
    audio_seconds: float  # sent
    finish_reason: str = ""


@dataclass
class ClipOutcome:
    request: ClipRequest
    answer: Answer | None = None
    error: str = ""
    requests: int = 0  # HTTP requests sent for the clip
    fatal: bool = False  # every other clip would fail the same way: stop the run
    raw_response: dict = field(default_factory=dict)  # of the last failed request, if the server said anything
    cost: float | None = None  # of an answer that was billed but is not a caption (cut off, a list, ...)


def caption_clip(
    provider, request: ClipRequest, audio_bytes: bytes, *, policy: RetryPolicy, price: Price | None, sleep=time.sleep
) -> ClipOutcome:
    """Ask for one clip's caption, retrying what can be retried. `sleep(seconds)` returns True to stop waiting."""
    try:
        audio = prepare_audio(audio_bytes, provider.audio_spec, source_name=request.name)
    except AudioPrepareError as error:
        return ClipOutcome(request, error=str(error))
    sent, last = 0, None
    for attempt in range(1, policy.attempts + 1):
        started = time.monotonic()
        sent += 1
        try:
            reply = provider.caption(request.prompt, audio)
        except ProviderError as error:
            last = error
            if error.fatal or not error.retryable or attempt == policy.attempts:
                break
            if sleep(policy.delay(attempt, error.retry_after)):
                return ClipOutcome(
                    request, error=f"stopped before retrying ({error})", requests=sent, raw_response=error.raw
                )
            continue
        except Exception as error:  # a library error that is neither HTTP nor transport: a bug, not retried
            return ClipOutcome(request, error=f"{type(error).__name__}: {error}"[:500], requests=sent)
        latency = time.monotonic() - started
        cost = None
        if price is not None:  # what the answer was billed, whether or not it is a caption
            cost = price.answer_cost(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                audio_tokens=reply.audio_tokens,
                audio_seconds=audio.seconds,
            )
        try:
            caption = caption_from_answer(reply.text, finish_reason=reply.finish_reason, blocked=reply.blocked)
        except AnswerError as error:
            message = str(error)
            if reply.finish_reason and "finish reason" not in message:
                message += f" (finish reason {reply.finish_reason})"
            return ClipOutcome(request, error=message, requests=sent, raw_response=reply.raw, cost=cost)
        answer = Answer(
            caption=caption,
            raw_text=reply.text or "",
            raw_response=reply.raw,
            latency_seconds=latency,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            audio_tokens=reply.audio_tokens,
            reasoning_tokens=reply.reasoning_tokens,
            cost=cost,
            note=trim_note(audio, model=provider.model),
            audio_seconds=audio.seconds,
            finish_reason=reply.finish_reason,
        )
        return ClipOutcome(request, answer=answer, requests=sent)
    retried = f" after {sent} requests" if sent > 1 else ""
    return ClipOutcome(
        request,
        error=f"failed{retried}: {last}",
        requests=sent,
        fatal=bool(last and last.fatal),
        raw_response=last.raw if last else {},
    )


def caption_all(
    provider,
    requests: Iterable[ClipRequest],
    *,
    concurrency: int,
    policy: RetryPolicy,
    price: Price | None,
    on_outcome: Callable[[ClipOutcome], None],
    should_stop: Callable[[], bool] = lambda: False,
    poll_seconds: float = 0.5,
) -> str:
    """Caption every request with at most `concurrency` clips in flight. Returns why it stopped early ('' when
    every request was handled): 'cancelled' when `should_stop()` said so, or the error that stops the run."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    stop = threading.Event()
    pending: set[Future] = set()
    iterator = iter(requests)
    reason = ""

    def fill() -> None:
        while len(pending) < concurrency and not stop.is_set():
            request = next(iterator, None)
            if request is None:
                return
            try:
                audio_bytes = request.load_audio()
            except Exception as error:  # a missing file, storage unreachable: this clip fails, the others go on
                on_outcome(ClipOutcome(request, error=f"cannot read the clip's audio: {type(error).__name__}: {error}"))
                continue
            pending.add(
                pool.submit(caption_clip, provider, request, audio_bytes, policy=policy, price=price, sleep=stop.wait)
            )

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="captioning") as pool:
        try:
            fill()
            while pending:
                done, _ = wait(pending, timeout=poll_seconds, return_when=FIRST_COMPLETED)
                for future in done:
                    pending.discard(future)
                    outcome = future.result()
                    on_outcome(outcome)
                    if outcome.fatal and not reason:
                        reason = outcome.error
                        stop.set()
                if not reason and should_stop():
                    reason = "cancelled"
                    stop.set()
                fill()
        except BaseException:  # Ctrl-C (KeyboardInterrupt) or an error storing an outcome: no new request, no retry
            stop.set()
            for future in pending:
                future.cancel()
            raise
    return reason
