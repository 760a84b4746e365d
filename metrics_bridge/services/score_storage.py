"""Writing metric scores in bulk: one prepared INSERT ... ON CONFLICT statement for all rows of a chunk.

A chunk of the classic suite stores up to a few thousand scores. Building a model instance per
score and letting `bulk_create(update_conflicts=True)` compile multi-row SQL costs far more than
scoring them (profiled: ~25 ms per 100 rows), so scores travel as plain `ScoreRow` tuples and go to
the driver's `executemany` with one statement (sqlite3 runs it in C; psycopg 3 pipelines it). The
statement is the same upsert bulk_create would write -- PostgreSQL and SQLite share the syntax: a
score already stored for (metric, version, caption, reference set) gets the new value, details and
run, and keeps its `created_at`. Values pass through Django's own adapters (JSON, datetimes).
"""

from typing import NamedTuple

from django.db import connection
from django.utils import timezone

from metrics_bridge.models import MetricScore


class ScoreRow(NamedTuple):
    """One score to store; `value` None means "not applicable" (an X-ACE factor absent from both graphs)."""

    metric: str
    version: str
    caption_id: int
    reference_set_id: int
    value: float | None
    details: dict


_UNIQUE = ("metric", "version", "caption_id", "reference_set_id")
_UPDATED = ("value", "details", "run_id")
_COLUMNS = (*_UNIQUE, "value", "details", "run_id", "created_at")


def _upsert_statement() -> str:
    quote = connection.ops.quote_name
    placeholders = ", ".join(["%s"] * len(_COLUMNS))
    return (
        f"INSERT INTO {quote(MetricScore._meta.db_table)} ({', '.join(quote(c) for c in _COLUMNS)}) "
        f"VALUES ({placeholders}) ON CONFLICT ({', '.join(quote(c) for c in _UNIQUE)}) DO UPDATE SET "
        + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in _UPDATED)
    )


def metric_scores_upsert(*, rows: list[ScoreRow], run_id: int | None) -> int:
    """Insert or update the scores (call it inside the transaction that owns them); returns the row count."""
    if not rows:
        return 0
    operations = connection.ops
    created_at = operations.adapt_datetimefield_value(timezone.now())
    no_details = operations.adapt_json_value({}, None)  # most scores have none: adapt it once
    parameters = [
        (
            row.metric,
            row.version,
            row.caption_id,
            row.reference_set_id,
            row.value,
            operations.adapt_json_value(row.details, None) if row.details else no_details,
            run_id,
            created_at,
        )
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_upsert_statement(), parameters)
    return len(parameters)
