"""Strict readers for configuration taken from the environment.

A malformed value stops start-up with a message naming the variable, instead of
silently falling back to a default that hides a typo in production.
"""

import os
from urllib.parse import urlparse


class ConfigurationError(Exception):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{name}={raw!r} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        raise ConfigurationError(f"{name}={raw!r} has an empty item (comma-separated, no blanks)")
    return items


def env_url(name: str, *, schemes: set[str]) -> str:
    """Return the URL in NAME ('' when unset) after checking its scheme and host."""
    raw = env_str(name)
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise ConfigurationError(f"{name}={raw!r} must start with one of: {allowed}")
    if parsed.scheme not in {"sqlite", "file"} and not parsed.hostname:
        raise ConfigurationError(f"{name}={raw!r} has no host")
    return raw
