"""Reading THumBS cells the way raters type them.

Tolerant of form (numbers as text, spaces, a decimal comma, `Yes`/`no `/`N`/`y`), strict on meaning:
every parser returns the value or raises CellError with the rule the value breaks.
"""

import math
import re
from decimal import Decimal, InvalidOperation

# U+2212 (minus sign) and dashes come in when text is pasted from a word processor.
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-"})
_NUMBER_TEXT = re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)$")
_YES = {"yes", "y", "true"}
_NO = {"no", "n", "false"}
ONE_DECIMAL = Decimal("0.1")


class CellError(ValueError):
    """The rule a cell value breaks, e.g. "precision must be a whole number 1–5"."""


def is_blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def shown(value) -> str:
    """A cell value as a person would recognise it in an error message."""
    if is_blank(value):
        return "(blank)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def number_read(value) -> Decimal | None:
    """The number in a cell (int, float or text like " 4 ", "-0,5"); None if it holds no number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        # repr gives the shortest text that reads back as the same float: -0.1 stays -0.1.
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().translate(_MINUS_SIGNS)
        if not _NUMBER_TEXT.match(text):
            return None
        try:
            return Decimal(text.replace(",", "."))
        except InvalidOperation:
            return None
    return None


def whole_score_read(value, *, field: str) -> int:
    """Precision or recall: a whole number 1–5 (4, "4", " 4 ", 4.0)."""
    rule = f"{field} must be a whole number 1–5"
    number = number_read(value)
    if number is None or number != number.to_integral_value() or not 1 <= number <= 5:
        raise CellError(rule)
    return int(number)


def penalty_read(value, *, field: str) -> Decimal:
    """Fluency, conciseness or irrelevance: blank means no penalty (0); else -2..0 with at most one decimal."""
    if is_blank(value):
        return Decimal("0.0")
    number = number_read(value)
    if number is None or not -2 <= number <= 0:
        raise CellError(f"{field} must be a number from -2 to 0 (blank means 0)")
    if number != number.quantize(ONE_DECIMAL):
        raise CellError(f"{field} must have at most one decimal (e.g. -0.1, -0.5, -1)")
    # 0, -0 and -0.0 are all "no penalty"; store a plain 0.0 so no negative zero reaches exports.
    return number.quantize(ONE_DECIMAL) if number != 0 else Decimal("0.0")


def yes_no_read(value) -> bool:
    """The synthesized answer: yes/no in any case, with spaces, or y/n."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _YES:
            return True
        if word in _NO:
            return False
    raise CellError("synthesized must be yes or no")


def text_read(value) -> str:
    """A text cell (record ID, comment) as text: numbers typed there become their usual text."""
    if is_blank(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()
