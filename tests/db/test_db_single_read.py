"""``Database.single_read`` and ``PreparedRead``: on SQLite each thread reads on a connection of
its own, kept open, that sees every commit made elsewhere and holds no snapshot between reads;
the connections of ended threads and of a disposed database are closed. On PostgreSQL the read
borrows a pooled connection and gives it back."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import bindparam, insert, select, text

from oxidav.db import Database, core
from oxidav.db.engine import READER_CACHE_KIB
from oxidav.db.models.users import User
from oxidav.db.prepared import PreparedRead
from tests.support.threads import in_new_thread

_users = User.__table__
NAMES = PreparedRead(select(_users.c.username).where(_users.c.username == bindparam("name")))


def _add(database: Database, name: str) -> None:
    with database.write() as session:
        core(session).execute(insert(_users).values(username=name, password_hash="x"))


def _lent(database: Database) -> Any:
    with database.single_read() as connection:
        return connection


def _closed(connection: Any) -> bool:
    try:
        connection.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_a_read_sees_what_others_committed(database: Database) -> None:
    assert NAMES.rows(database, {"name": "dora"}) == []
    _add(database, "dora")
    assert NAMES.rows(database, {"name": "dora"}) == [("dora",)]
    # Between two reads the thread's connection holds no snapshot: a write on another
    # connection, then the read sees it.
    with database.write() as session:
        session.execute(text("UPDATE users SET username = 'dora2' WHERE username = 'dora'"))
    assert NAMES.rows(database, {"name": "dora"}) == []
    assert NAMES.first(database, {"name": "dora2"}) == ("dora2",)


def test_sqlite_keeps_one_connection_per_thread(database: Database) -> None:
    if not database.is_sqlite:
        pytest.skip("PostgreSQL reads borrow pooled connections")
    mine = _lent(database)
    assert _lent(database) is mine
    other = in_new_thread(lambda: _lent(database))
    assert other is not mine
    # The ended thread's connection is closed when another thread opens one.
    third = in_new_thread(lambda: _lent(database))
    assert _closed(other) and not _closed(third) and not _closed(mine)
    # It reads in autocommit and was configured by the engine's connect hook.
    assert mine.in_transaction is False
    assert mine.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert mine.execute("PRAGMA cache_size").fetchone() == (-READER_CACHE_KIB,)
    database.dispose()
    assert _closed(mine) and _closed(third)
    # After dispose a read opens a new connection.
    assert NAMES.rows(database, {"name": "nobody"}) == []
    assert _lent(database) is not mine


def test_postgresql_returns_the_borrowed_connection(database: Database) -> None:
    if database.is_sqlite:
        pytest.skip("SQLite threads keep their own connection")
    pool = database.engine.pool
    NAMES.rows(database, {"name": "x"})
    checked_out = pool.checkedout()  # type: ignore[attr-defined]
    for _ in range(5):
        NAMES.rows(database, {"name": "x"})
    assert pool.checkedout() == checked_out == 0  # type: ignore[attr-defined]


def test_postgresql_reads_outside_a_transaction_and_lends_the_connection_back_unchanged(
    database: Database,
) -> None:
    if database.is_sqlite:
        pytest.skip("SQLite threads keep their own read connection")
    from psycopg2 import extensions

    with database.single_read() as raw:
        driver = raw.driver_connection
        cursor = raw.cursor()
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]
        cursor.close()
        # The statement was its own transaction: none is open after it (no BEGIN was sent
        # before it, and no ROLLBACK is needed when the pool takes the connection back).
        assert driver.get_transaction_status() == extensions.TRANSACTION_STATUS_IDLE
    assert driver.autocommit is False  # back in the pool as every other user expects it

    # A failing read leaves no aborted transaction behind either.
    with pytest.raises(Exception, match="no_such_table"), database.single_read() as raw:
        driver = raw.driver_connection
        cursor = raw.cursor()
        cursor.execute("SELECT * FROM no_such_table")
    assert driver.get_transaction_status() == extensions.TRANSACTION_STATUS_IDLE
    assert driver.autocommit is False
    _add(database, "erin")
    assert NAMES.rows(database, {"name": "erin"}) == [("erin",)]
