"""What makes a SECRET_KEY unfit for production (the settings refuse to start with one when DEBUG is off)."""

PLACEHOLDERS = {"change-me", "changeme", "secret", "secret-key", "development-only-secret-key-do-not-use-in-production"}
MINIMUM_LENGTH = 50
MINIMUM_DISTINCT_CHARACTERS = 5


def secret_key_problem(key: str) -> str | None:
    """Why `key` must not sign production sessions, or None when it is fit (Django's W009 rules plus placeholders)."""
    if not key:
        return "is not set"
    if key.lower() in PLACEHOLDERS or key.startswith("django-insecure-"):
        return f"is the placeholder {key[:20]!r}"
    if len(key) < MINIMUM_LENGTH:
        return f"is {len(key)} characters long; at least {MINIMUM_LENGTH} are needed"
    if len(set(key)) < MINIMUM_DISTINCT_CHARACTERS:
        return f"has fewer than {MINIMUM_DISTINCT_CHARACTERS} different characters"
    return None
