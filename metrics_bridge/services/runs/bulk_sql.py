"""Inserting many rows fast: multi-row INSERT ... ON CONFLICT statements written here, sent with `executemany`.

For tables a metric run fills by the thousand (scores, reference sets). Django's `bulk_create` builds a
model instance per row and compiles its SQL per batch; here rows are plain tuples of database-ready
values (adapt JSON and datetimes with `connection.ops` first). Many rows per statement: sqlite3
releases the GIL around every statement it steps, and while a worker scores another chunk in its
second thread, getting it back can take up to the 5 ms switch interval: once per statement, not per row.
`executemany` of statements of equal size: with DEBUG on, Django logs each `execute` with its
parameters spelled out (for SQLite, one more query per 999 parameters); an `executemany` is logged
without them. On PostgreSQL the rows travel as one array per column instead (`INSERT ... SELECT FROM
unnest(...)`): eight parameters per statement whatever the row count, where psycopg parsed a statement
of 16,000 placeholders anew each time (~70 ms per 2,000 rows). Both share the ON CONFLICT syntax.
"""

import sqlite3
from collections.abc import Sequence

from django.db import connection

#: rows per statement at most (SQLite builds take 32,766 parameters; psycopg 65,535)
MAX_ROWS_PER_STATEMENT = 2000


def rows_per_statement(columns: int) -> int:
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # Django assumes 999
    else:
        limit = connection.features.max_query_params or 65535
    return max(1, min(MAX_ROWS_PER_STATEMENT, limit // columns))


def _on_conflict(conflict: Sequence[str], update: Sequence[str]) -> str:
    quote = connection.ops.quote_name
    if update:
        action = "DO UPDATE SET " + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in update)
    else:
        action = "DO NOTHING"
    return f"ON CONFLICT ({', '.join(quote(c) for c in conflict)}) {action}"


def _values_statement(
    *, table: str, columns: Sequence[str], rows: int, conflict: Sequence[str], update: Sequence[str] = ()
) -> str:
    """INSERT of `rows` rows; a row whose `conflict` columns match a stored row updates its `update` columns,
    or is skipped when `update` is empty."""
    quote = connection.ops.quote_name
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    return (
        f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES {', '.join([placeholders] * rows)} {_on_conflict(conflict, update)}"
    )


def insert_rows(
    *,
    table: str,
    columns: Sequence[str],
    types: Sequence[str],
    rows: Sequence[tuple],
    conflict: Sequence[str],
    update: Sequence[str] = (),
) -> int:
    """Insert the rows (see _values_statement); returns how many rows were inserted or updated.

    `types` are the columns' PostgreSQL types (e.g. "text", "bigint", "jsonb", "timestamptz"); JSON
    values come as JSON text. Rows must not repeat a `conflict` identity: PostgreSQL refuses a
    statement that updates a row twice."""
    if not rows:
        return 0
    if connection.vendor == "postgresql":
        return _insert_arrays(table=table, columns=columns, types=types, rows=rows, conflict=conflict, update=update)
    per_statement = rows_per_statement(len(columns))
    full = len(rows) - len(rows) % per_statement
    changed = 0
    with connection.cursor() as cursor:
        for size, group in ((per_statement, rows[:full]), (len(rows) - full, rows[full:])):
            if not group:
                continue
            statement = _values_statement(table=table, columns=columns, rows=size, conflict=conflict, update=update)
            parameters = [
                [value for row in group[start : start + size] for value in row] for start in range(0, len(group), size)
            ]
            cursor.executemany(statement, parameters)
            changed += cursor.rowcount
    return changed


def _insert_arrays(
    *, table: str, columns: Sequence[str], types: Sequence[str], rows: Sequence[tuple], conflict, update
) -> int:
    """PostgreSQL: one statement, one array parameter per column."""
    quote = connection.ops.quote_name
    statement = (
        f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
        f"SELECT * FROM unnest({', '.join(f'%s::{kind}[]' for kind in types)}) {_on_conflict(conflict, update)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, [list(column) for column in zip(*rows, strict=True)])
        return cursor.rowcount
