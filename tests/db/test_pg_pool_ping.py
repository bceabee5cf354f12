"""PostgreSQL's pool pings a connection before lending it only when it sat idle
(``PING_AFTER_IDLE_SECONDS``): back-to-back requests skip the round trip, and a connection the
server dropped while it was idle is replaced before anyone uses it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import NullPool, create_engine, text

from oxidav.db import Database
from oxidav.db import engine as engine_module


@pytest.fixture
def pg(database: Database) -> Iterator[Database]:
    if database.is_sqlite:
        pytest.skip("SQLite has no server to ping")
    yield database


def _count_pings(database: Database, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    dialect = database.engine.dialect
    real = dialect.do_ping
    pings: list[int] = []

    def counted(dbapi_connection: Any) -> bool:
        pings.append(1)
        return bool(real(dbapi_connection))

    monkeypatch.setattr(dialect, "do_ping", counted)
    return pings


def _backend_pid(database: Database) -> int:
    with database.single_read() as raw:
        return int(raw.driver_connection.get_backend_pid())


def _terminate(database: Database, pid: int) -> None:
    admin = create_engine(database.engine.url, poolclass=NullPool)
    try:
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        admin.dispose()


def test_a_connection_lent_again_at_once_is_not_pinged(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(pg, monkeypatch)
    # "At once" is "within the window": a window of an hour keeps a loaded machine's pauses
    # between two statements (or a connection an earlier test left idle) out of the test.
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 3600.0)
    first = _backend_pid(pg)
    assert _backend_pid(pg) == first
    with pg.read() as session:
        assert session.execute(text("SELECT 1")).scalar_one() == 1
    assert pings == []


def test_a_connection_idle_past_the_window_is_pinged(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(pg, monkeypatch)
    _backend_pid(pg)
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    _backend_pid(pg)
    assert pings == [1]


def test_a_connection_the_server_dropped_while_idle_is_replaced_before_use(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    dropped = _backend_pid(pg)
    _terminate(pg, dropped)
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    # The ping finds the connection dead; the pool lends a new one and the read succeeds.
    assert _backend_pid(pg) != dropped
    with pg.write() as session:
        assert session.execute(text("SELECT 1")).scalar_one() == 1
