"""``PreparedRead``: one pre-built SELECT run straight on a pooled driver connection.

The hot read of a GET or HEAD is one statement (the node at a path). Through a ``Session`` it
costs a session, a connection wrapper, a ``BEGIN``, the execution context, a rollback and a
close — ~10x the statement itself on SQLite. A single statement needs none of it: it reads one
consistent snapshot on its own (SQLite runs it in autocommit, as oxidav's connections have the
driver's transaction handling switched off; on PostgreSQL the driver opens a transaction that
the pool's reset-on-return rolls back). So ``PreparedRead`` compiles its statement once per
dialect, runs it on ``engine.raw_connection()`` (the same pool, pre-ping included) and applies
the columns' result processors (SQLite's text timestamps and integer booleans,
``UTCDateTime``'s time zone), so a row equals what SQLAlchemy would return.

Only for statements whose parameters are plain driver values (``int``, ``str``: no bind
processing) and whose result columns are typed table columns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Select
from sqlalchemy.exc import DBAPIError


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    positions: tuple[str, ...] | None  # parameter names in order (positional dialects)
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]  # (column index, processor)


class PreparedRead:
    """A SELECT compiled once per dialect, run on a raw pooled connection."""

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _for(self, engine: Engine) -> _Compiled:
        name = engine.dialect.name
        found = self._compiled.get(name)
        if found is not None:
            return found
        dialect = engine.dialect
        compiled = self.statement.compile(dialect=dialect)
        positions = tuple(compiled.positiontup or ()) if dialect.positional else None
        processors = tuple(
            (index, process)
            for index, column in enumerate(self.statement.selected_columns)
            if (process := column.type.dialect_impl(dialect).result_processor(dialect, None))
            is not None
        )
        made = _Compiled(compiled.string, positions, processors)
        with self._lock:
            self._compiled[name] = made
        return made

    def rows(self, engine: Engine, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Every row, processed as SQLAlchemy would. Driver errors are wrapped in
        SQLAlchemy's ``DBAPIError`` subclasses, as through a session."""
        compiled = self._for(engine)
        args: Any = (
            [params[name] for name in compiled.positions]
            if compiled.positions is not None
            else dict(params)
        )
        connection = engine.raw_connection()
        try:
            cursor = connection.cursor()
            try:
                cursor.execute(compiled.sql, args)
                raw = cursor.fetchall()
            finally:
                cursor.close()
        except engine.dialect.loaded_dbapi.Error as exc:
            if engine.dialect.is_disconnect(exc, None, None):
                connection.invalidate(exc)
            raise DBAPIError.instance(
                compiled.sql, args, exc, engine.dialect.loaded_dbapi.Error
            ) from exc
        finally:
            connection.close()
        if not compiled.processors:
            return [tuple(row) for row in raw]
        rows = []
        for row in raw:
            values = list(row)
            for index, process in compiled.processors:
                values[index] = process(values[index])
            rows.append(tuple(values))
        return rows

    def first(self, engine: Engine, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        found = self.rows(engine, params)
        return found[0] if found else None


__all__ = ["PreparedRead"]
