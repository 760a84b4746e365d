"""Small filters the dashboards need: dict lookup, numbers that may be missing (None / NaN) shown as a dash."""

import math

from django import template

register = template.Library()


@register.filter
def lookup(mapping, key):
    return mapping.get(key) if isinstance(mapping, dict) else None


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@register.filter
def number(value, digits=3):
    return "—" if _missing(value) else f"{float(value):.{int(digits)}f}"


@register.filter
def signed(value, digits=2):
    return "—" if _missing(value) else f"{float(value):+.{int(digits)}f}"
