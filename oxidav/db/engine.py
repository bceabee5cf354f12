"""Engines and sessions for SQLite (embedded default) and PostgreSQL (several processes).

``Database`` is the one handle the rest of oxidav holds: ``read()`` for a plain session and
``write()`` for a session whose transaction takes the write lock up front. On SQLite that is
``BEGIN IMMEDIATE`` — two writers that both start with a deferred ``BEGIN`` and later upgrade to
a write lock would otherwise fail with "database is locked" instead of waiting their turn. On
PostgreSQL both are ordinary transactions; row locks do the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

SQLITE_BUSY_TIMEOUT_MS = 30_000
_IMMEDIATE = "oxidav_begin_immediate"


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # pysqlite's own transaction handling is switched off (isolation_level=None) so that the
        # "begin" hook below decides how each transaction starts.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str | URL, *, pool_size: int = 10) -> Engine:
    """Create an engine for ``url`` with oxidav's connection settings.

    SQLite gets WAL, foreign keys, a busy timeout and explicit transaction control; a memory
    database is refused because every connection would see a different, empty database.
    PostgreSQL gets a bounded pool with pre-ping, so a restarted database server is survived.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise ValueError("oxidav needs a file-backed SQLite database, not :memory:")
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            poolclass=NullPool if parsed.query.get("nullpool") else None,
        )
        _configure_sqlite(engine)
        return engine
    return create_engine(parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


class Database:
    """The engine plus two session factories: one for reads, one for writes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        write_bind = engine.execution_options(**{_IMMEDIATE: True}) if self.is_sqlite else engine
        self._read = sessionmaker(bind=engine, expire_on_commit=False)
        self._write = sessionmaker(bind=write_bind, expire_on_commit=False)

    @classmethod
    def from_url(cls, url: str | URL) -> Database:
        return cls(make_engine(url))

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; rolled back and closed on exit."""
        with self._read() as session:
            try:
                yield session
            finally:
                session.rollback()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits on a clean exit and rolls back on an exception."""
        with self._write() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
