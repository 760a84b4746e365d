"""Reads whose SQL is compiled once per process: for the few statements that every request of a crowd runs.

Django compiles a queryset to SQL each time it is evaluated. For a read that joins three or four models that is
most of its CPU: in a py-spy profile of the web workers serving 300 crowd participants, the read of the session's
user with its participation was a quarter of all their CPU, nearly all of it spent compiling, and the read of the
participant's item another eighth. A CompiledRead builds its queryset once, with marker values in place of the
request's own, keeps the SQL, and from then on runs that SQL with each request's values. Rows become model
instances the way QuerySet's own iterator (django.db.models.query.ModelIterable) makes them, select_related
relations included, so callers get the same objects as from the queryset.

A read of values() gives dicts as ValuesIterable makes them (`row`, `rows`), or with `tuples` the driver's own rows
when every column is an integer or a text (as the drivers give those, Django's converters change nothing: a read of
a thousand rows skips their calls and the dicts). A select_for_update read keeps its SQL text (FOR UPDATE included)
and runs it inside the caller's transaction: it is refused outside one, as the queryset refuses it. No
prefetch_related and no values_list() (refused when compiling).

Markers are found among the SQL's parameters as the backend adapted them, and each request's values are adapted the
same way before they are bound: a datetime compared with a DateTimeField is a str on SQLite (naive, in UTC) and stays
a datetime on PostgreSQL, so a datetime marker is looked for, and a datetime value bound, as
`connection.ops.adapt_datetimefield_value` makes it. Other values (int keys, str tokens) are bound as given.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ValuesIterable, get_related_populators
from django.db.transaction import TransactionManagementError


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple
    # marker name -> (position among the SQL's parameters, the int subclass the backend wrapped it in or None)
    slots: dict[str, tuple[tuple[int, type | None], ...]]
    compiler: Any  # the SQLCompiler that made the SQL: it converts rows (dates, JSON) as for the queryset
    converters: dict  # its converters of each column, found once (they depend only on the column and backend)
    width: int  # the selected columns; ordering columns the SELECT needed beyond them are cut off
    locks: bool  # SELECT ... FOR UPDATE: only inside a transaction
    names: tuple[str, ...] | None  # a values() read: the keys of its dicts (None for a read of instances)
    plain: bool = False  # every selected column an integer or a text: the driver's values are the Python values
    model: type[Model] | None = None
    fields_start: int = 0
    fields_end: int = 0
    attnames: tuple[str, ...] = ()
    related_populators: tuple = ()
    annotation_columns: tuple[tuple[str, int], ...] = ()


class CompiledRead:
    """`build(**values)` makes the queryset; `markers` gives each value a stand-in found nowhere else in its SQL.

    A marker must be of the type the real values have (an int for a key, a str for a token, an aware datetime for a
    time), within the column's range (integer lookups drop or widen a value outside it: 32-bit keys want markers
    above -2**31, a PositiveIntegerField a positive one), and unlike any constant the queryset itself contains:
    compiling fails loudly otherwise, never silently binds a wrong slot.
    """

    def __init__(self, build: Callable[..., QuerySet], **markers: int | str | datetime):
        self._build = build
        self._markers = markers
        self._compiled: dict[tuple[str, str], _Compiled] = {}

    def first(self, *, using: str = "default", **values) -> Model | None:
        """The first row's instance (the queryset's order; None when there is none), in one query.

        For reads of one row (a unique key, or a queryset sliced `[:1]`): no LIMIT is added, so an unsliced read of
        many rows would fetch them all and, unordered, return any one."""
        compiled = self._compiled_for(using)
        if compiled.names is not None:
            raise TypeError("a values() read gives dicts: use row() or rows()")
        row = self._fetch(compiled, using, values, many=False)
        if row is None:
            return None
        return self._instance(compiled, row, using)

    def row(self, *, using: str = "default", **values) -> dict | None:
        """The first row of a values() read as its dict (None when there is none), in one query."""
        compiled = self._values_compiled(using)
        row = self._fetch(compiled, using, values, many=False)
        return None if row is None else dict(zip(compiled.names, row, strict=True))

    def rows(self, *, using: str = "default", **values) -> list[dict]:
        """Every row of a values() read as its dict, in the queryset's order, in one query."""
        compiled = self._values_compiled(using)
        return [dict(zip(compiled.names, row, strict=True)) for row in self._fetch(compiled, using, values, many=True)]

    def tuples(self, *, using: str = "default", **values) -> list[tuple]:
        """Every row of a values() read as a tuple in the values' order, as the driver gives it, in one query.

        Only for reads of integer and text columns (refused otherwise): Django's converters of those only repeat
        `int(value)`, and skipping them and the dicts is most of the Python time of a read of many rows."""
        compiled = self._values_compiled(using)
        if not compiled.plain:
            raise TypeError("tuples() reads integer and text columns only: use rows() for converted values")
        return self._fetch(compiled, using, values, many=True, convert=False)

    def _values_compiled(self, using: str) -> _Compiled:
        compiled = self._compiled_for(using)
        if compiled.names is None:
            raise TypeError("a read of instances gives models: use first()")
        return compiled

    def _fetch(self, compiled: _Compiled, using: str, values: dict, *, many: bool, convert: bool = True):
        """The converted row (None when there is none), or with `many` the list of them (`convert=False`: the
        driver's rows as they came, cut to the selected columns)."""
        if set(values) != set(compiled.slots):
            raise TypeError(f"values for {sorted(compiled.slots)} expected, got {sorted(values)}")
        missing = sorted(name for name, value in values.items() if value is None)
        if missing:  # the ORM writes IS NULL for None; the compiled `= %s` would match nothing
            raise ValueError(f"no value for {missing}: a compiled read compares with `=`, never with NULL")
        connection = connections[using]
        if compiled.locks and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        for name, positions in compiled.slots.items():
            value = _adapted(connection, values[name])
            for position, wrapper in positions:
                params[position] = value if wrapper is None else wrapper(value)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            if many:
                rows = [row[: compiled.width] for row in cursor.fetchall()]
            else:
                row = cursor.fetchone()
                rows = [] if row is None else [row[: compiled.width]]
        if convert and compiled.converters and rows:
            rows = [tuple(row) for row in compiled.compiler.apply_converters(rows, compiled.converters)]
        if many:
            return rows
        return rows[0] if rows else None

    def _compiled_for(self, using: str) -> _Compiled:
        key = (using, connections[using].vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._compile(using)
        return compiled

    def _compile(self, using: str) -> _Compiled:
        queryset = self._build(**self._markers)
        values_read = queryset._fields is not None
        if queryset._prefetch_related_lookups or (values_read and queryset._iterable_class is not ValuesIterable):
            raise ValueError("a CompiledRead reads instances or values() dicts (no prefetch_related, values_list)")
        compiler = queryset.query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet as error:  # a marker outside its column's range: the lookup was dropped
            raise ValueError(f"a marker of {sorted(self._markers)} matches no row by itself: {error!r}") from error
        columns = [column[0] for column in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(columns):
            raise ValueError("a CompiledRead reads no composite primary keys")
        connection = connections[using]
        slots = {
            name: self._positions(params, name, _adapted(connection, marker)) for name, marker in self._markers.items()
        }
        common = {
            "sql": sql,
            "params": tuple(params),
            "slots": slots,
            "compiler": compiler,
            "converters": compiler.get_converters(columns),
            "width": compiler.col_count,
            "locks": bool(queryset.query.select_for_update),
        }
        if values_read:
            query = queryset.query
            names = (
                list(query.selected)
                if query.selected
                else [*query.extra_select, *query.values_select, *query.annotation_select]
            )
            plain = all(_is_plain(column.output_field) for column in columns)
            return _Compiled(**common, names=tuple(names), plain=plain)
        klass_info = compiler.klass_info
        select_fields = klass_info["select_fields"]
        fields_start, fields_end = select_fields[0], select_fields[-1] + 1
        return _Compiled(
            **common,
            names=None,
            model=klass_info["model"],
            fields_start=fields_start,
            fields_end=fields_end,
            attnames=tuple(column[0].target.attname for column in compiler.select[fields_start:fields_end]),
            related_populators=tuple(get_related_populators(klass_info, compiler.select, using)),
            annotation_columns=tuple((compiler.annotation_col_map or {}).items()),
        )

    @staticmethod
    def _positions(params, name: str, marker) -> tuple[tuple[int, type | None], ...]:
        """Where the marker is among the parameters, each with the int subclass it was wrapped in there, if any:
        psycopg's Int4 for an int in a CASE or a Value() on PostgreSQL, which the real value is then wrapped in too
        (the statement must keep its parameter types). bool is no such wrapper: True is not a key."""
        positions = []
        for index, value in enumerate(params):
            if type(value) is type(marker) and value == marker:
                positions.append((index, None))
            elif type(marker) is int and isinstance(value, int) and not isinstance(value, bool) and value == marker:
                positions.append((index, type(value)))
        if not positions:
            raise ValueError(f"the marker of {name!r} ({marker!r}) is not among the compiled SQL's parameters")
        return tuple(positions)

    @staticmethod
    def _instance(compiled: _Compiled, row, using: str) -> Model:
        """As ModelIterable makes each object: the model, then its select_related relations, then annotations."""
        instance = compiled.model.from_db(using, compiled.attnames, row[compiled.fields_start : compiled.fields_end])
        for populator in compiled.related_populators:
            populator.populate(row, instance)
        for attribute, position in compiled.annotation_columns:
            setattr(instance, attribute, row[position])
        return instance


# Columns whose values both drivers (psycopg, sqlite3) give as the Python value Django would make of them.
_PLAIN_TYPES = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "SmallAutoField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
        "CharField",
        "TextField",
    }
)


def _is_plain(field) -> bool:
    """An integer or text column, a foreign key judged by the key it points at."""
    while field.is_relation:
        field = field.target_field
    return field.get_internal_type() in _PLAIN_TYPES


def _adapted(connection, value):
    """`value` as the backend binds it to a DateTimeField (a datetime); any other value as it is.

    Only datetimes: every datetime marker here stands for a DateTimeField's value (a DateField's would be adapted
    otherwise, and is not used)."""
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    return value
