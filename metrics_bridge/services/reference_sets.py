"""Reference sets are stored once and named by a hash of their texts and scoring context."""
import hashlib
import json
from functools import lru_cache

from metrics_bridge.models import ReferenceSet


@lru_cache(maxsize=200_000)  # planning and reports ask for the same (texts, context) many times
def reference_set_key(*, texts: tuple[str, ...], context: str) -> str:
    payload = json.dumps([context, list(texts)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def reference_sets_ensure(*, entries: dict[str, tuple[tuple[str, ...], str]]) -> None:
    """Create the missing ReferenceSet rows; `entries` maps key -> (texts, context)."""
    existing = set(ReferenceSet.objects.filter(key__in=list(entries)).values_list("key", flat=True))
    ReferenceSet.objects.bulk_create(
        [
            ReferenceSet(key=key, texts=list(texts), context=context)
            for key, (texts, context) in entries.items()
            if key not in existing
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
