"""``Prepared`` / ``PreparedRead``: pre-built Core statements run on a driver cursor.

``Prepared`` runs on the driver cursor of a transaction's connection.

``Connection.execute`` costs even a cached statement an execution context, parameter
processing, event dispatch and a ``CursorResult``. ``Prepared`` compiles its
statement once per dialect (and, for an INSERT or UPDATE, per set of parameter names, as
SQLAlchemy's own cache does), then sends it with the driver cursor of the caller's connection,
inside the caller's transaction (the ``BEGIN`` SQLAlchemy issued stays in charge; nothing here
commits). Parameters go through the bind processors of their types (``UTCDateTime``'s naive
UTC, SQLite's text timestamps) and result rows through the result processors of the returned
columns, so values in and out equal what ``Connection.execute`` would send and return.
``before_cursor_execute`` / ``after_cursor_execute`` listeners still see every statement;
driver errors are raised as SQLAlchemy's ``DBAPIError`` subclasses (``IntegrityError`` …).

Only for statements without expanding parameters and, for an INSERT or UPDATE, without
Python-side column defaults to compute (every such column is given): anything else is run by
``Connection.execute`` unchanged.

``PreparedReadsByCount`` keeps one ``PreparedRead`` per length of an IN list of names or ids
(the locks rooted at a URL's ancestors, named calendar objects, what a PROPFIND page's nodes
carry besides their rows). Lists longer than ``EXACT_UP_TO`` are padded with their last value
to the next power of two (an IN list means the same with a value repeated), and read ``MOST``
values at a time, so at most a handful of statements are ever compiled for them.

``PreparedRead`` is the same for a single SELECT outside any transaction: the hot read of a GET
or HEAD (the node at a path) and the lock check of a large PUT, without a session, a
``BEGIN``, a rollback and a close. One statement reads one consistent snapshot on
its own (SQLite runs it in autocommit, as oxidav's connections have the driver's transaction
handling switched off; on PostgreSQL the driver opens a transaction that the pool's
reset-on-return rolls back), so it runs on the driver connection ``Database.single_read``
lends (on SQLite the thread's own, on PostgreSQL a pooled one); listeners do not see it.
``PreparedRead.pages`` reads a listing by name a keyset page at a time (the members of a first
sync, an addressbook-query's candidates), so memory holds a page, not the collection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import BindParameter, Connection, String, bindparam
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

if TYPE_CHECKING:
    from oxidav.db.engine import Database

Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class _Compiled:
    compiled: SQLCompiler
    sql: str
    positions: tuple[str, ...] | None  # parameter names in order (positional dialects)
    binds: tuple[tuple[str, Processor], ...]  # (parameter name, bind processor)
    results: tuple[tuple[int, Processor], ...]  # (column index, result processor)


class Result:
    """The rows (processed) and the row count of one run."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def all(self) -> list[tuple[Any, ...]]:
        return self.rows

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def one(self) -> tuple[Any, ...]:
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]


class _Fallback(Exception):
    """The statement needs SQLAlchemy's full execution (see the module docstring)."""


class Prepared:
    """A Core statement compiled once per dialect (and parameter names), run on the driver
    cursor of the caller's connection."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: dict[tuple[str, frozenset[str]], _Compiled | None] = {}
        self._lock = threading.Lock()

    def _for(self, dialect: Dialect, names: frozenset[str]) -> _Compiled | None:
        key = (dialect.name, names)
        try:
            return self._compiled[key]
        except KeyError:
            pass
        try:
            made: _Compiled | None = self._compile(dialect, names)
        except _Fallback:
            made = None
        with self._lock:
            self._compiled[key] = made
        return made

    def _compile(self, dialect: Dialect, names: frozenset[str]) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect, column_keys=sorted(names))
        assert isinstance(compiled, SQLCompiler)
        if (
            compiled.insert_prefetch
            or compiled.update_prefetch
            or compiled.literal_execute_params
            or compiled.post_compile_params
        ):
            raise _Fallback
        positions = tuple(compiled.positiontup or ()) if dialect.positional else None
        escaped = compiled.escaped_bind_names
        binds = tuple(
            (escaped.get(name, name), process)
            for bind, name in compiled.bind_names.items()
            if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        )
        columns = getattr(self.statement, "exported_columns", ())
        results = tuple(
            (index, process)
            for index, column in enumerate(columns)
            if (process := column.type.dialect_impl(dialect).result_processor(dialect, None))
            is not None
        )
        return _Compiled(compiled, compiled.string, positions, binds, results)

    def run(self, connection: Connection, params: Mapping[str, Any]) -> Result:
        """Run the statement with ``params`` in ``connection``'s current transaction."""
        prepared = self._for(connection.dialect, frozenset(params))
        if prepared is None:
            result = connection.execute(cast(Executable, self.statement), dict(params))
            rows = [tuple(row) for row in result] if result.returns_rows else []
            return Result(rows, result.rowcount)
        return _execute(prepared, connection.dialect, connection.connection, params, connection)


class PreparedRead(Prepared):
    """A SELECT run on its own, outside any transaction (module docstring)."""

    def rows(self, db: Database, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Every row, processed as SQLAlchemy would. Driver errors are wrapped in
        SQLAlchemy's ``DBAPIError`` subclasses, as through a session."""
        engine = db.engine
        prepared = self._for(engine.dialect, frozenset(params))
        if prepared is None:
            with engine.connect() as connection:
                return self.run(connection, params).rows
        with db.single_read() as raw:
            return _execute(prepared, engine.dialect, raw, params, None).rows

    def first(self, db: Database, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        found = self.rows(db, params)
        return found[0] if found else None

    def pages(
        self, db: Database, params: Mapping[str, Any], size: int
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Keyset pages of a statement that takes ``:after``, keeps rows whose first column
        (a name) sorts after it, orders by that column and returns at most ``size`` rows: the
        first page after ``""``, each next one after the last row of the one before. Each page
        is its own read (its own snapshot)."""
        values = {**params, "after": ""}
        while True:
            rows = self.rows(db, values)
            if rows:
                yield rows
            if len(rows) < size:
                return
            values["after"] = rows[-1][0]


class PreparedReadsByCount:
    """One ``PreparedRead`` per length of an IN list, built on first use: ``build`` makes the
    statement from the list's bind parameters (``:{name}0``, ``:{name}1`` …, of ``type_``:
    strings unless told), and ``params`` spreads the values over them. Lengths above
    ``EXACT_UP_TO`` are rounded up to a power of two, at most ``MOST`` (module docstring)."""

    EXACT_UP_TO = 32
    MOST = 512

    def __init__(
        self,
        name: str,
        build: Callable[[list[BindParameter[Any]]], ClauseElement],
        type_: TypeEngine[Any] | None = None,
    ) -> None:
        self._name = name
        self._build = build
        self._type = type_ if type_ is not None else String()
        self._made: dict[int, PreparedRead] = {}
        #: The bind parameters' names by count (``params`` spreads a page's ids over them).
        self._names: dict[int, list[str]] = {}
        self._lock = threading.Lock()

    def for_count(self, count: int) -> PreparedRead:
        found = self._made.get(count)
        if found is None:
            listed = [bindparam(f"{self._name}{i}", type_=self._type) for i in range(count)]
            with self._lock:
                found = self._made.setdefault(count, PreparedRead(self._build(listed)))
        return found

    def params(self, values: Sequence[Any], **others: Any) -> dict[str, Any]:
        """The parameters of ``for_count(len(values))``: ``values`` and ``others``."""
        names = self._names.get(len(values))
        if names is None:
            names = self._names.setdefault(
                len(values), [f"{self._name}{i}" for i in range(len(values))]
            )
        spread: dict[str, Any] = dict(zip(names, values, strict=True))
        spread.update(others)
        return spread

    def rows(self, db: Database, values: Sequence[Any], **others: Any) -> list[tuple[Any, ...]]:
        """The rows of the statement for ``values`` (and ``others``), as ``PreparedRead``,
        ``MOST`` values per read (each read is its own snapshot); none, and no read, for no
        values (an empty IN list matches nothing)."""
        found: list[tuple[Any, ...]] = []
        for start in range(0, len(values), self.MOST):
            part = _padded(values[start : start + self.MOST], self.EXACT_UP_TO)
            found.extend(self.for_count(len(part)).rows(db, self.params(part, **others)))
        return found


def _padded(values: Sequence[Any], exact_up_to: int) -> Sequence[Any]:
    """``values``, or, above ``exact_up_to`` of them, padded with the last one to a power of
    two."""
    if len(values) <= exact_up_to:
        return values
    size = 1 << (len(values) - 1).bit_length()
    return [*values, *([values[-1]] * (size - len(values)))]


def _execute(
    prepared: _Compiled,
    dialect: Dialect,
    raw: Any,
    params: Mapping[str, Any],
    connection: Connection | None,
) -> Result:
    """Send ``prepared`` with ``params`` on the driver connection ``raw``; the cursor-execute
    listeners of ``connection`` (when given) see it."""
    values = prepared.compiled.construct_params(dict(params))
    for name, process in prepared.binds:
        values[name] = process(values[name])
    args: Any = (
        [values[name] for name in prepared.positions] if prepared.positions is not None else values
    )
    sql = prepared.sql
    dispatch = connection.dispatch if connection is not None else None
    cursor = raw.cursor()
    try:
        if dispatch is not None and dispatch.before_cursor_execute:
            for listener in dispatch.before_cursor_execute:
                listener(connection, cursor, sql, args, None, False)
        try:
            cursor.execute(sql, args)
            fetched = cursor.fetchall() if cursor.description is not None else []
            rowcount = cursor.rowcount
        except dialect.loaded_dbapi.Error as exc:
            raise DBAPIError.instance(sql, args, exc, dialect.loaded_dbapi.Error) from exc
        if dispatch is not None and dispatch.after_cursor_execute:
            for listener in dispatch.after_cursor_execute:
                listener(connection, cursor, sql, args, None, False)
    finally:
        cursor.close()
    if not prepared.results:
        return Result([tuple(row) for row in fetched], rowcount)
    rows = []
    for row in fetched:
        out = list(row)
        for index, process in prepared.results:
            out[index] = process(out[index])
        rows.append(tuple(out))
    return Result(rows, rowcount)


__all__ = ["Prepared", "PreparedRead", "PreparedReadsByCount", "Result"]
