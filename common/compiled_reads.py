"""Reads whose SQL is compiled once per process: for the few statements that every request of a crowd runs.

Django compiles a queryset to SQL each time it is evaluated. For a read that joins three or four models that is
most of its CPU: in a py-spy profile of the web workers serving 300 crowd participants, the read of the session's
user with its participation was a quarter of all their CPU, nearly all of it spent compiling, and the read of the
participant's item another eighth. A CompiledRead builds its queryset once, with marker values in place of the
request's own, keeps the SQL, and from then on runs that SQL with each request's values. Rows become model
instances the way QuerySet's own iterator (django.db.models.query.ModelIterable) makes them, select_related
relations included, so callers get the same objects as from the queryset.

Only for plain reads: no select_for_update, no values(), no prefetch_related (they are refused when compiling).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple
    slots: dict[str, tuple[int, ...]]  # marker name -> positions of its value among the SQL's parameters
    compiler: Any  # the SQLCompiler that made the SQL: it converts rows (dates, JSON) as for the queryset
    converters: dict  # its converters of each column, found once (they depend only on the column and backend)
    width: int  # the selected columns; ordering columns the SELECT needed beyond them are cut off
    model: type[Model]
    fields_start: int
    fields_end: int
    attnames: tuple[str, ...]
    related_populators: tuple
    annotation_columns: tuple[tuple[str, int], ...]


class CompiledRead:
    """`build(**values)` makes the queryset; `markers` gives each value a stand-in found nowhere else in its SQL.

    A marker must be of the type the real values have (an int for a key, a str for a token), within the column's
    range (PostgreSQL's integer lookups drop a value outside it: 32-bit keys want markers above -2**31), and unlike
    any constant the queryset itself contains: compiling fails loudly otherwise, never silently binds a wrong slot.
    """

    def __init__(self, build: Callable[..., QuerySet], **markers: int | str):
        self._build = build
        self._markers = markers
        self._compiled: dict[tuple[str, str], _Compiled] = {}

    def first(self, *, using: str = "default", **values) -> Model | None:
        """The first row's instance (the queryset's order; None when there is none), in one query."""
        compiled = self._compiled_for(using)
        if set(values) != set(compiled.slots):
            raise TypeError(f"values for {sorted(compiled.slots)} expected, got {sorted(values)}")
        params = list(compiled.params)
        for name, positions in compiled.slots.items():
            for position in positions:
                params[position] = values[name]
        with connections[using].cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        row = row[: compiled.width]
        if compiled.converters:
            (row,) = compiled.compiler.apply_converters([row], compiled.converters)
        return self._instance(compiled, row, using)

    def _compiled_for(self, using: str) -> _Compiled:
        key = (using, connections[using].vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._compile(using)
        return compiled

    def _compile(self, using: str) -> _Compiled:
        queryset = self._build(**self._markers)
        if queryset._prefetch_related_lookups or queryset.query.select_for_update or queryset._fields is not None:
            raise ValueError("a CompiledRead is for plain reads (no prefetch_related, select_for_update, values)")
        compiler = queryset.query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet as error:  # a marker outside its column's range: the lookup was dropped
            raise ValueError(f"a marker of {sorted(self._markers)} matches no row by itself: {error!r}") from error
        columns = [column[0] for column in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(columns):
            raise ValueError("a CompiledRead reads no composite primary keys")
        slots = {name: self._positions(params, name, marker) for name, marker in self._markers.items()}
        klass_info = compiler.klass_info
        select_fields = klass_info["select_fields"]
        fields_start, fields_end = select_fields[0], select_fields[-1] + 1
        return _Compiled(
            sql=sql,
            params=tuple(params),
            slots=slots,
            compiler=compiler,
            converters=compiler.get_converters(columns),
            width=compiler.col_count,
            model=klass_info["model"],
            fields_start=fields_start,
            fields_end=fields_end,
            attnames=tuple(column[0].target.attname for column in compiler.select[fields_start:fields_end]),
            related_populators=tuple(get_related_populators(klass_info, compiler.select, using)),
            annotation_columns=tuple((compiler.annotation_col_map or {}).items()),
        )

    @staticmethod
    def _positions(params, name: str, marker) -> tuple[int, ...]:
        positions = tuple(
            index for index, value in enumerate(params) if type(value) is type(marker) and value == marker
        )
        if not positions:
            raise ValueError(f"the marker of {name!r} ({marker!r}) is not among the compiled SQL's parameters")
        return positions

    @staticmethod
    def _instance(compiled: _Compiled, row, using: str) -> Model:
        """As ModelIterable makes each object: the model, then its select_related relations, then annotations."""
        instance = compiled.model.from_db(using, compiled.attnames, row[compiled.fields_start : compiled.fields_end])
        for populator in compiled.related_populators:
            populator.populate(row, instance)
        for attribute, position in compiled.annotation_columns:
            setattr(instance, attribute, row[position])
        return instance
