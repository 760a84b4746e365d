"""From a model's answer to a caption: markdown stripped, one line; what is not a caption is a failure.

Models asked for "a caption" still answer with headings, bold text or a "Caption:" label; AudioCapBench strips
markdown before scoring, since n-gram metrics would count `**` and `#` as words. Some answer in JSON
({"caption": "..."}, often in a code fence): the caption field is unwrapped, never stored with its braces and
key. What cannot be one caption is refused with its reason, never stored as a caption: an empty answer, a
refusal, a list of several items (joining its bullets would make a run-on "caption" no one wrote), an answer
cut off at the token limit, and an answer a safety filter withheld.
"""

from __future__ import annotations

import json
import re


class AnswerError(ValueError):
    """The answer cannot be a caption (empty, or the model refused); the message says which and quotes it."""


_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n?|```")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.MULTILINE)
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_BLOCKQUOTE = re.compile(r"^\s*>\s?", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.MULTILINE)
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|\*|~~)(?=\S)(.+?)(?<=\S)\1|(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\3(?!\w)")
_INLINE_CODE = re.compile(r"`([^`]*)`")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_LABEL = re.compile(r"^\s*(?:audio\s+)?caption\s*:\s*", re.IGNORECASE)
_QUOTES = ('"', "'", "“", "”", "‘", "’")
_FENCED = re.compile(r"^```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)\n?\s*```$", re.DOTALL)
#: JSON keys models put a caption under, in the order they are looked for
CAPTION_KEYS = ("caption", "audio_caption", "description", "text", "answer")
#: finish reasons of an answer cut off at the token limit (OpenAI/DashScope, Gemini)
TRUNCATED = frozenset({"length", "max_tokens"})

# Openings of a refusal, in the wording models use (checked on the stripped, lower-cased answer).
_REFUSAL = re.compile(
    r"^(?:i'?m sorry|i am sorry|sorry, (?:but )?i|i apologi[sz]e|unfortunately,? i|i can(?:'|no)t|i cannot|"
    r"i'?m (?:not able|unable)|i am (?:not able|unable)|as an ai\b|i do not have the ability|i don'?t have the ability)"
)


def strip_markdown(text: str) -> str:
    """Markdown syntax removed and the answer joined into one line of plain text."""
    text = _FENCE.sub("", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _RULE.sub("", text)
    if _HEADING_LINE.sub("", text).strip():  # a title above the caption is not part of it
        text = _HEADING_LINE.sub("", text)
    text = _HEADING.sub("", text)
    text = _BLOCKQUOTE.sub("", text)
    text = _BULLET.sub("", text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    for _ in range(2):  # nested emphasis (***bold italic***)
        text = _EMPHASIS.sub(lambda match: match.group(2) or match.group(4), text)
    text = " ".join(text.split())
    text = _LABEL.sub("", text)
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text


def refusal_reason(text: str) -> str | None:
    """Why the answer is a refusal rather than a caption, or None."""
    if _REFUSAL.match(text.strip().lower()):
        return f"the model declined to caption the clip: {text[:200]!r}"
    return None


def unwrap_json(text: str) -> str:
    """The caption of an answer given as JSON (bare or in a code fence): a JSON string, or a caption field of an
    object; other answers unchanged. AnswerError for JSON that holds no caption."""
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    inner = fenced.group(1).strip() if fenced else stripped
    if not inner.startswith(("{", "[", '"')):
        return text
    try:
        data = json.loads(inner)
    except ValueError:
        if inner.startswith("{") and inner.rstrip().endswith("}"):
            raise AnswerError(f"the answer looks like JSON but cannot be read: {text[:200]!r}") from None
        return text
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        fields = {str(key).lower(): value for key, value in data.items()}
        for key in CAPTION_KEYS:
            if isinstance(fields.get(key), str) and fields[key].strip():
                return fields[key]
        raise AnswerError(f"the answer is JSON without a caption field ({', '.join(CAPTION_KEYS)}): {text[:200]!r}")
    raise AnswerError(f"the answer is JSON, not a caption: {text[:200]!r}")


def list_items(text: str) -> int:
    """How many list items (bulleted or numbered lines) the answer has."""
    return len(_BULLET.findall(text))


def caption_from_answer(raw_text: str | None, *, finish_reason: str = "", blocked: str = "") -> str:
    """The caption in a model's answer; AnswerError, with the reason, for what is not one: withheld (`blocked`,
    the provider's reason), cut off at the token limit (`finish_reason`), empty, a refusal, JSON without a
    caption, a list of several items."""
    if blocked:
        raise AnswerError(blocked)
    finish = f" (finish reason {finish_reason})" if finish_reason else ""
    if finish_reason.lower() in TRUNCATED:
        raise AnswerError(f"the answer was cut off at the token limit{finish}: {(raw_text or '')[:200]!r}")
    if raw_text is None or not raw_text.strip():
        raise AnswerError("the model's answer is empty")
    text = unwrap_json(raw_text)
    items = list_items(text)
    if items > 1:
        raise AnswerError(f"the answer is a list of {items} items, not one caption: {raw_text[:200]!r}")
    caption = strip_markdown(text)
    if not caption:
        raise AnswerError(f"the model's answer has no text once markdown is removed: {raw_text[:200]!r}")
    reason = refusal_reason(caption)
    if reason:
        raise AnswerError(reason)
    return caption
