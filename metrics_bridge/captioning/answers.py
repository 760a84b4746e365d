"""From a model's answer to a caption: markdown stripped, one line; empty answers and refusals are failures.

Models asked for "a caption" still answer with headings, bold text, bullet lists or a "Caption:" label;
AudioCapBench strips markdown before scoring, since n-gram metrics would count `**` and `#` as words.
"""

from __future__ import annotations

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


def caption_from_answer(raw_text: str | None) -> str:
    """The caption in a model's answer; AnswerError for an empty answer or a refusal."""
    if raw_text is None or not raw_text.strip():
        raise AnswerError("the model's answer is empty")
    caption = strip_markdown(raw_text)
    if not caption:
        raise AnswerError(f"the model's answer has no text once markdown is removed: {raw_text[:200]!r}")
    reason = refusal_reason(caption)
    if reason:
        raise AnswerError(reason)
    return caption
