"""Statements compiled once by SQLAlchemy and executed by the driver itself (plain reads).

SQLAlchemy's execution of a statement costs several times what the driver spends on it
(bench/history.md): a connection object and its events per checkout, the compiled cache
looked up, an execution context, a result wrapper. For the few statements that answer polls
the plain reads (db/reads.py) skip that and keep what SQLAlchemy is good at: each statement
is compiled once, by the engine's own dialect, into the SQL the driver sends; its bind values
are prepared, and its result values converted (UTC timestamps, enums, JSON documents,
decimal strings), by the very processors the dialect gives the column types. Rows come back
as named tuples, read by column name like SQLAlchemy's rows.

Both drivers' parameter styles are handled: psycopg's named ``%(name)s`` (an expanding
``IN`` is sent as ``= ANY(array)``: one parameter) and sqlite3's positional ``?`` (an
expanding ``IN`` gets one ``?`` per value when executed).
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ColumnElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

from tenantplane.db.reads import Parameters, ReadRow

# Statements are module constants; ad-hoc ones (tests, the console) are compiled again when
# they fall out of this many.
_PREPARED_LIMIT = 256
# How SQLAlchemy leaves an "expanding" IN list to be rendered at execution time.
_EXPANDING_IN = " IN (__[POSTCOMPILE_{name}])"
_RENDERED_LATER = re.compile(r"__\[POSTCOMPILE_")

Processor = Callable[[Any], Any]
RowMaker = Callable[[Sequence[Any]], ReadRow]


@dataclass
class Prepared:
    """One statement as its driver sends it, with its bind and result conversions."""

    statement: Executable
    sql: str
    compiled: SQLCompiler
    binds: dict[str, tuple[Processor | None, bool]]
    # Positional drivers (sqlite3): the parameters' names in the order of their ``?``.
    order: tuple[str, ...] | None = None
    # Built from the first result's description (the processors may depend on the column's
    # server type, as SQLAlchemy's do).
    rows: RowMaker | None = field(default=None)
    # Positional drivers: the SQL for each length of the expanding lists, as executed.
    _expanded: dict[tuple[int, ...], str] = field(default_factory=dict)

    def parameters(self, values: Parameters) -> dict[str, Any]:
        bound = dict(self.compiled.construct_params(dict(values)))
        for name, (processor, expanding) in self.binds.items():
            if processor is None or name not in bound:
                continue
            value = bound[name]
            bound[name] = [processor(item) for item in value] if expanding else processor(value)
        return bound

    def positional(self, values: Parameters) -> tuple[str, list[Any]]:
        """The SQL and its parameters for a positional driver, each list expanded."""
        assert self.order is not None
        bound = self.parameters(values)
        sent: list[Any] = []
        lengths: list[int] = []
        for name in self.order:
            if self.binds.get(name, (None, False))[1]:
                items = list(bound[name])
                lengths.append(len(items))
                sent.extend(items)
            else:
                sent.append(bound[name])
        return self._sql_for(tuple(lengths)), sent

    def _sql_for(self, lengths: tuple[int, ...]) -> str:
        sql = self._expanded.get(lengths)
        if sql is None:
            sql = self.sql
            expanding = [name for name in self.order or () if self.binds[name][1]]
            for name, length in zip(expanding, lengths, strict=True):
                # SQLite takes an empty list (``IN ()`` is false).
                placeholders = ", ".join("?" * length)
                sql = sql.replace(_EXPANDING_IN.format(name=name), f" IN ({placeholders})")
            self._expanded[lengths] = sql
        return sql

    def row_maker(
        self, names: Sequence[str], type_codes: Sequence[Any], dialect: Dialect
    ) -> RowMaker:
        """How to build this statement's rows (from its first result's description)."""
        if self.rows is None:
            self.rows = _row_maker(self.statement, names, type_codes, dialect)
        return self.rows


def _row_maker(
    statement: Executable, names: Sequence[str], type_codes: Sequence[Any], dialect: Dialect
) -> RowMaker:
    # A named tuple per statement, of the names the server sent (so: typed loosely).
    row_type: Any = namedtuple("Row", names, rename=True)  # type: ignore[misc]
    processors: list[Processor | None] = [None] * len(names)
    selected = _selected(statement)
    if len(selected) == len(names):
        for index, (column, type_code) in enumerate(zip(selected, type_codes, strict=True)):
            implementation = column.type.dialect_impl(dialect)
            processors[index] = implementation.result_processor(dialect, type_code)
    as_row = cast(RowMaker, row_type._make)
    if not any(processors):
        return as_row

    def make(values: Sequence[Any]) -> ReadRow:
        converted = [
            value if convert is None else convert(value)
            for value, convert in zip(values, processors, strict=True)
        ]
        return as_row(converted)

    return make


def _selected(statement: Executable) -> Sequence[ColumnElement[Any]]:
    """The typed columns of a SELECT (a ``text()`` statement has none: values as sent)."""
    selected = getattr(statement, "selected_columns", None)
    return list(selected) if selected is not None else []


def _prepare(statement: Executable, dialect: Dialect) -> Prepared:
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    assert isinstance(compiled, SQLCompiler)
    sql = compiled.string
    binds: dict[str, tuple[Processor | None, bool]] = {}
    order = tuple(compiled.positiontup or ()) if compiled.positional else None
    for name, bind in compiled.binds.items():
        if bind.expanding:
            rendered = _EXPANDING_IN.format(name=name)
            if rendered not in sql:
                raise ValueError(f"{name!r}: only 'column IN (list)' is read as a list")
            if order is None:
                # One parameter, an array: the statement's SQL stays the same for any length.
                sql = sql.replace(rendered, f" = ANY(%({name})s)")
        binds[name] = (bind.type.dialect_impl(dialect).bind_processor(dialect), bind.expanding)
    left = sql
    if order is not None:
        for name, (_, expanding) in binds.items():
            if expanding:
                left = left.replace(_EXPANDING_IN.format(name=name), "")
    if _RENDERED_LATER.search(left):
        raise ValueError("a statement rendered at execution time cannot be a plain read")
    return Prepared(statement, sql, compiled, binds, order)


class PreparedStatements:
    """The statements of one dialect, each prepared on its first use."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._prepared: dict[int, Prepared] = {}

    def of(self, statement: Executable) -> Prepared:
        prepared = self._prepared.get(id(statement))
        if prepared is None or prepared.statement is not statement:
            if len(self._prepared) >= _PREPARED_LIMIT:
                self._prepared.pop(next(iter(self._prepared)))
            prepared = self._prepared[id(statement)] = _prepare(statement, self.dialect)
        return prepared
