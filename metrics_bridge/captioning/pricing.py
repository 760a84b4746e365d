"""The price table: what a clip costs to caption, before a run (estimate) and per answer (from its token counts).

Prices are US dollars per million tokens, as the providers publish them for their audio models (list prices
of 2025; check them before a costly run). Audio is billed as tokens per second of audio. A deployment adds
or corrects entries with a JSON file in the same shape (the CAPTIONING_PRICE_TABLE setting):

    {"openai/gpt-4o-audio-preview": {"text_input": 2.5, "audio_input": 40, "output": 10,
                                     "audio_tokens_per_second": 10}}

Models without an entry (most OpenAI-compatible servers: free to run on one's own machine) have no cost:
the estimate and the runs say "unknown" rather than guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: tokens a prompt takes, and a caption's tokens, for the estimate (the answers' usage gives the real counts)
PROMPT_TOKENS_ESTIMATE = 60
ANSWER_TOKENS_ESTIMATE = 40


@dataclass(frozen=True)
class Price:
    text_input: float  # $ per million prompt text tokens
    audio_input: float  # $ per million audio tokens
    output: float  # $ per million answer tokens
    audio_tokens_per_second: float

    def clip_estimate(self, seconds: float) -> float:
        audio_tokens = seconds * self.audio_tokens_per_second
        return (
            audio_tokens * self.audio_input
            + PROMPT_TOKENS_ESTIMATE * self.text_input
            + ANSWER_TOKENS_ESTIMATE * self.output
        ) / 1e6

    def answer_cost(
        self, *, prompt_tokens: int, completion_tokens: int, audio_tokens: int | None, audio_seconds: float
    ) -> float:
        """Cost of one answer. Prompt tokens include the audio's; when the provider does not say how many were
        audio, they are taken from the clip's length (at most all prompt tokens)."""
        if audio_tokens is None:
            audio_tokens = min(prompt_tokens, round(audio_seconds * self.audio_tokens_per_second))
        text_tokens = max(prompt_tokens - audio_tokens, 0)
        return (audio_tokens * self.audio_input + text_tokens * self.text_input + completion_tokens * self.output) / 1e6


PRICE_TABLE: dict[str, Price] = {
    "openai/gpt-4o-audio-preview": Price(text_input=2.5, audio_input=40.0, output=10.0, audio_tokens_per_second=10),
    "openai/gpt-4o-mini-audio-preview": Price(
        text_input=0.15, audio_input=10.0, output=0.6, audio_tokens_per_second=10
    ),
    "gemini/gemini-2.5-flash": Price(text_input=0.3, audio_input=1.0, output=2.5, audio_tokens_per_second=32),
    "gemini/gemini-2.5-flash-lite": Price(text_input=0.1, audio_input=0.3, output=0.4, audio_tokens_per_second=32),
    "gemini/gemini-2.5-pro": Price(text_input=1.25, audio_input=1.25, output=10.0, audio_tokens_per_second=32),
    "gemini/gemini-2.0-flash": Price(text_input=0.1, audio_input=0.7, output=0.4, audio_tokens_per_second=32),
}


class PriceTableError(ValueError):
    """The price table file is unusable; the message names the file and the entry."""


def price_table_load(path: str | Path | None) -> dict[str, Price]:
    """The built-in table with the entries of the JSON file at `path` (none: the built-in table alone)."""
    table = dict(PRICE_TABLE)
    if not path:
        return table
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PriceTableError(f"{path}: cannot read the price table ({error})") from None
    if not isinstance(data, dict):
        raise PriceTableError(f'{path}: expected a JSON object {{"provider/model": {{...}}}}')
    fields = ("text_input", "audio_input", "output", "audio_tokens_per_second")
    for key, entry in data.items():
        if "/" not in key or not isinstance(entry, dict):
            raise PriceTableError(f'{path}: entry "{key}" must be "provider/model": {{{", ".join(fields)}}}')
        try:
            values = {field: float(entry[field]) for field in fields}
        except (KeyError, TypeError, ValueError):
            raise PriceTableError(f'{path}: entry "{key}" needs numbers for {", ".join(fields)}') from None
        if any(value < 0 for value in values.values()):
            raise PriceTableError(f'{path}: entry "{key}" has a negative price')
        table[key] = Price(**values)
    return table


def price_for(table: dict[str, Price], *, provider: str, model: str) -> Price | None:
    return table.get(f"{provider}/{model}")


def run_estimate(price: Price | None, clip_seconds: list[float], *, max_seconds: float | None) -> float | None:
    """Estimated cost of captioning clips of these lengths (None: no price for the model)."""
    if price is None:
        return None
    return sum(price.clip_estimate(min(seconds, max_seconds) if max_seconds else seconds) for seconds in clip_seconds)
