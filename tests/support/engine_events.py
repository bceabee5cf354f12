"""Recording what a SQLAlchemy engine does while a block runs: the statements it sends, the
commits it makes. One listener added on entry and removed on exit, whatever the block raises.
``recorded_reads`` also sees the reads of ``oxidav.db.prepared.PreparedRead``, which run on a
driver connection that SQLAlchemy's events do not see."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event

from oxidav.db import Database
from oxidav.db.prepared import PreparedRead


@contextmanager
def engine_events(
    engine: Engine, name: str, pick: Callable[..., Any | None]
) -> Iterator[list[Any]]:
    """What ``pick`` returns for each ``name`` event of ``engine`` while the block runs
    (``None``: not recorded)."""
    seen: list[Any] = []

    def record(*args: Any) -> None:
        value = pick(*args)
        if value is not None:
            seen.append(value)

    event.listen(engine, name, record)
    try:
        yield seen
    finally:
        event.remove(engine, name, record)


def recorded_statements(
    engine: Engine, pick: Callable[[str], str | None] = lambda statement: statement
) -> Any:
    """The SQL of each statement sent (``before_cursor_execute``), through ``pick``."""
    return engine_events(engine, "before_cursor_execute", lambda *args: pick(args[2]))


def recorded_commits(engine: Engine) -> Any:
    """One entry (the connection) per commit."""
    return engine_events(engine, "commit", lambda conn: conn)


def recorded_selects(engine: Engine) -> Any:
    """The SQL of each SELECT (or WITH ... SELECT) sent while the block runs."""
    return recorded_statements(
        engine,
        lambda statement: (
            statement if statement.lstrip().upper().startswith(("SELECT", "WITH")) else None
        ),
    )


@contextmanager
def recorded_reads(db: Database) -> Iterator[list[str]]:
    """The SQL of each SELECT ``db`` sends while the block runs, through a session or as a
    ``PreparedRead`` (its ``rows``, patched for the block: one thread only)."""
    prepared_rows = PreparedRead.rows

    def counted(read: PreparedRead, on: Database, params: Any) -> list[tuple[Any, ...]]:
        if on is db:
            seen.append(str(read.statement))
        return prepared_rows(read, on, params)

    with recorded_selects(db.engine) as seen:
        PreparedRead.rows = counted  # type: ignore[method-assign]
        try:
            yield seen
        finally:
            PreparedRead.rows = prepared_rows  # type: ignore[method-assign]
