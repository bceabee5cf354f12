"""Write transactions of one process: queued (SQLite) or row-locked (PostgreSQL), never lost."""

from __future__ import annotations

import threading

from sqlalchemy import text

from oxidav.db import Database, core
from tests.support.threads import run_in_threads

THREADS = 8
ROUNDS = 15


def _make_counter(database: Database) -> None:
    with database.write() as session:
        session.execute(text("CREATE TABLE counter_t (id INTEGER PRIMARY KEY, n INTEGER)"))
        session.execute(text("INSERT INTO counter_t (id, n) VALUES (1, 0)"))


def test_concurrent_read_modify_write_transactions_all_land(database: Database) -> None:
    _make_counter(database)

    def worker() -> None:
        for _ in range(ROUNDS):
            with database.write() as session:
                n = session.execute(
                    text("SELECT n FROM counter_t WHERE id = 1 FOR UPDATE")
                    if not database.is_sqlite
                    else text("SELECT n FROM counter_t WHERE id = 1")
                ).scalar_one()
                session.execute(text("UPDATE counter_t SET n = :n WHERE id = 1"), {"n": n + 1})

    assert run_in_threads(worker, THREADS) == []
    with database.read() as session:
        assert session.execute(text("SELECT n FROM counter_t")).scalar_one() == THREADS * ROUNDS


def test_a_queued_writer_sees_the_previous_commit(database: Database) -> None:
    _make_counter(database)
    holding, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def first() -> None:
        with database.write() as session:
            session.execute(text("UPDATE counter_t SET n = 41 WHERE id = 1"))
            holding.set()
            release.wait(10)

    def second() -> None:
        holding.wait(10)
        with database.write() as session:
            lock = "" if database.is_sqlite else " FOR UPDATE"
            seen.append(session.execute(text(f"SELECT n FROM counter_t{lock}")).scalar_one())

    one, two = threading.Thread(target=first), threading.Thread(target=second)
    one.start()
    two.start()
    holding.wait(10)
    release.set()
    one.join()
    two.join()
    assert seen == [41]


def test_core_flushes_pending_orm_changes_first(database: Database) -> None:
    from oxidav.db.models.users import User

    with database.write() as session:
        session.add(User(username="core-flush", password_hash="x"))
        found = core(session).execute(
            text("SELECT COUNT(*) FROM users WHERE username = 'core-flush'")
        )
        assert found.scalar_one() == 1
