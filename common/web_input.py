"""Query parameters and path ids are checked before they reach the ORM: a 400 naming the parameter, never a 5xx.

Without these checks an integer filter beyond the database's range (`?campaign=99999999999999999999`)
made SQLite raise OverflowError (HTTP 500), a NUL character in a text filter makes PostgreSQL refuse
the query, a word where an id belongs made Django raise ValueError, and a value outside a field's
choices silently matched nothing. Every way input comes in goes through one of these:

- `query_value(model, lookup, param, raw)`: a query parameter filtered on `lookup` (an ORM path such as
  "campaign_id" or "clip__dataset__name") is checked against the model field the lookup ends on:
  whole numbers within that field's range on this database, one of the field's choices, a date the
  field can parse, no NUL character. `annotation.api_helpers.filter_by_params` (every API list filter)
  and `query_id` (the pages) call it; a failure is a `QueryParameterError` naming the parameter.
- `IdConverter` (`<id:name>` in urls.py, registered in config/urls.py) and `ID_REGEX` (the API router's
  pattern for row ids, config/api_urls.py): a path id is 1 to 18 digits, so it is always below the
  largest id any database stores (2^63 - 1) and never a word; anything else matches no route (404).
"""

import re

from django.core.exceptions import BadRequest, ValidationError
from django.db import connections, models

#: Row ids in URLs: 1-18 digits (10^18 - 1 < 2^63 - 1, the largest BigAutoField on SQLite and PostgreSQL).
ID_REGEX = "[0-9]{1,18}"
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


class QueryParameterError(ValueError):
    """A query parameter that cannot be used: `str(error)` says why, `param` names it."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


class IdConverter:
    """`<id:campaign_id>`: a row id in a page URL (Django's `<int:>` would pass any number of digits on)."""

    regex = ID_REGEX

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(int(value))


def lookup_field(model: type[models.Model], lookup: str) -> models.Field:
    """The field an ORM lookup path ends on; a relation stands for the field it points to (usually the id)."""
    field = None
    for part in lookup.split("__"):
        # "campaign_id" (the column) names the relation too
        field = model._meta.pk if part == "pk" else model._meta.get_field(part)
        if field.is_relation:
            model = field.related_model
    while field.is_relation:
        field = field.target_field
    return field


def query_value(model: type[models.Model], lookup: str, param: str, raw: str, *, using: str = "default"):
    """`raw` as a value the ORM can compare with the field `lookup` reaches, or QueryParameterError."""
    if "\x00" in raw:
        raise QueryParameterError(param, "contains a NUL character")
    field = lookup_field(model, lookup)
    if isinstance(field, models.IntegerField):  # ids (auto fields and relations) and counts
        text = raw.strip()
        if not _WHOLE_NUMBER.fullmatch(text):
            raise QueryParameterError(param, f"{raw[:40]!r} is not a whole number")
        value = int(text)
        low, high = connections[using].ops.integer_field_range(field.get_internal_type())
        if (low is not None and value < low) or (high is not None and value > high):
            raise QueryParameterError(param, f"{text[:40]} is out of range ({low} to {high})")
        return value
    if field.choices:
        allowed = [str(value) for value, _ in field.flatchoices]
        if raw not in allowed:
            raise QueryParameterError(param, f"{raw[:40]!r} is not one of: {', '.join(allowed)}")
        return raw
    try:
        return field.to_python(raw)
    except ValidationError as error:
        raise QueryParameterError(param, f"{raw[:40]!r}: {' '.join(error.messages)}") from None


def query_id(request, param: str, model: type[models.Model]) -> int | None:
    """The row id in `?param=` of a page request (None when absent or blank); a bad one is a 400 naming `param`."""
    raw = request.GET.get(param, "").strip()
    if not raw:
        return None
    try:
        return query_value(model, "pk", param, raw)
    except QueryParameterError as error:
        raise BadRequest(f"The {param} parameter {error}.") from None
