"""``Database.write_core``: on SQLite each thread keeps its write ``Connection`` across
transactions; concurrent read-modify-write transactions still all land (both backends); a
failed transaction leaves nothing and the next one works; a connection broken under a
transaction is replaced; an ended thread's and a disposed database's connections are closed."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from oxidav.db import Database
from tests.support.threads import in_new_thread, run_in_threads

THREADS = 8
ROUNDS = 15


@pytest.fixture
def counter(database: Database) -> Database:
    with database.write_core() as connection:
        connection.execute(text("CREATE TABLE counter_w (id INTEGER PRIMARY KEY, n INTEGER)"))
        connection.execute(text("INSERT INTO counter_w (id, n) VALUES (1, 0)"))
    return database


def _count(database: Database) -> int:
    with database.read() as session:
        return int(session.execute(text("SELECT n FROM counter_w WHERE id = 1")).scalar_one())


def _bump(database: Database) -> None:
    with database.write_core() as connection:
        lock = "" if database.is_sqlite else " FOR UPDATE"
        n = connection.execute(text(f"SELECT n FROM counter_w WHERE id = 1{lock}")).scalar_one()
        connection.execute(text("UPDATE counter_w SET n = :n WHERE id = 1"), {"n": n + 1})


def _used(database: Database) -> Connection:
    with database.write_core() as connection:
        connection.execute(text("SELECT 1"))
        return connection


def test_concurrent_read_modify_write_transactions_all_land(counter: Database) -> None:
    def worker() -> None:
        for _ in range(ROUNDS):
            _bump(counter)

    assert run_in_threads(worker, THREADS) == []
    assert _count(counter) == THREADS * ROUNDS


def test_a_failed_transaction_leaves_nothing_and_the_next_one_works(counter: Database) -> None:
    with pytest.raises(RuntimeError), counter.write_core() as connection:
        connection.execute(text("UPDATE counter_w SET n = 100 WHERE id = 1"))
        raise RuntimeError("the request failed")
    assert _count(counter) == 0
    _bump(counter)
    assert _count(counter) == 1


def test_sqlite_keeps_one_write_connection_per_thread(counter: Database) -> None:
    if not counter.is_sqlite:
        pytest.skip("PostgreSQL writes borrow pooled connections")
    mine = _used(counter)
    assert _used(counter) is mine and not mine.in_transaction()
    other = in_new_thread(lambda: _used(counter))
    assert other is not mine
    # The ended thread's connection is closed when another thread opens one.
    third = in_new_thread(lambda: _used(counter))
    assert other.closed and not third.closed and not mine.closed
    counter.dispose()
    assert mine.closed and third.closed
    _bump(counter)  # after dispose a write opens a new connection
    assert _used(counter) is not mine and _count(counter) == 1


def test_sqlite_replaces_a_write_connection_that_broke(counter: Database) -> None:
    if not counter.is_sqlite:
        pytest.skip("PostgreSQL writes borrow pooled connections")
    broken = _used(counter)
    # The rollback fails on the closed connection; SQLAlchemy raises that failure.
    with pytest.raises((RuntimeError, DBAPIError)), counter.write_core() as connection:
        connection.execute(text("UPDATE counter_w SET n = 100 WHERE id = 1"))
        connection.connection.dbapi_connection.close()  # type: ignore[union-attr]
        raise RuntimeError("the request failed")
    assert _used(counter) is not broken
    _bump(counter)
    assert _count(counter) == 1


def test_postgresql_returns_the_write_connection(counter: Database) -> None:
    if counter.is_sqlite:
        pytest.skip("SQLite threads keep their own write connection")
    pool = counter.engine.pool
    for _ in range(3):
        _bump(counter)
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
