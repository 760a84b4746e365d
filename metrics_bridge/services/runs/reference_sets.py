"""Reference sets are stored once and named by a hash of their texts and scoring context."""

import hashlib
import json
from functools import lru_cache

from metrics_bridge.models import ReferenceSet
from metrics_bridge.services.runs.bulk_sql import insert_rows


@lru_cache(maxsize=200_000)  # planning and reports ask for the same (texts, context) many times
def reference_set_key(*, texts: tuple[str, ...], context: str) -> str:
    payload = json.dumps([context, list(texts)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def reference_sets_ensure(*, entries: dict[str, tuple[tuple[str, ...], str]]) -> None:
    """Create the missing ReferenceSet rows; `entries` maps key -> (texts, context). A run plans thousands."""
    insert_rows(
        table=ReferenceSet._meta.db_table,
        columns=("key", "texts", "context"),
        types=("text", "jsonb", "text"),
        rows=[(key, json.dumps(list(texts)), context) for key, (texts, context) in entries.items()],
        conflict=("key",),
    )
