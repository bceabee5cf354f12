"""``Prepared``: statements run on the driver cursor of the caller's transaction send and return
what ``Connection.execute`` would, raise SQLAlchemy's errors and stay visible to listeners."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from oxidav.db import Database, core
from oxidav.db.models.blobs import BlobChunk
from oxidav.db.prepared import Prepared, PreparedReadsByCount
from tests.support.engine_events import recorded_statements

_chunks = BlobChunk.__table__
_COLUMNS = (_chunks.c.hash, _chunks.c.size, _chunks.c.refcount, _chunks.c.created_at)
INSERT = Prepared(insert(_chunks).returning(*_COLUMNS))
SELECT = Prepared(select(*_COLUMNS).where(_chunks.c.hash == bindparam("key")))
TOUCH = Prepared(
    update(_chunks)
    .where(_chunks.c.hash == bindparam("key"), _chunks.c.refcount == 0)
    .values(orphaned_at=bindparam("now", type_=_chunks.c.orphaned_at.type), refcount=1)
)
WHEN = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _row(key: str, when: datetime = WHEN) -> dict[str, object]:
    return {"hash": key, "size": 5, "refcount": 0, "created_at": when, "orphaned_at": when}


def test_rows_equal_those_of_connection_execute(database: Database) -> None:
    with database.write() as session:
        returned = INSERT.run(core(session), _row("a" * 64)).one()
    assert returned == ("a" * 64, 5, 0, WHEN)  # the aware timestamp, as SQLAlchemy returns it
    with database.read() as session:
        expected = tuple(core(session).execute(SELECT.statement, {"key": "a" * 64}).one())
        assert SELECT.run(core(session), {"key": "a" * 64}).rows == [expected]
        assert SELECT.run(core(session), {"key": "b" * 64}).first() is None
    assert expected == returned


def test_parameters_are_bound_as_sqlalchemy_binds_them(database: Database) -> None:
    """A timestamp in another zone is stored as naive UTC (``UTCDateTime``), so the ORM reads
    back the same instant; the WHERE's literal and the row count are the statement's."""
    other_zone = WHEN.astimezone(timezone(timedelta(hours=3)))
    with database.write() as session:
        INSERT.run(core(session), _row("c" * 64))
        assert TOUCH.run(core(session), {"key": "c" * 64, "now": other_zone}).rowcount == 1
        assert TOUCH.run(core(session), {"key": "c" * 64, "now": other_zone}).rowcount == 0
    with database.read() as session:
        chunk = session.get(BlobChunk, "c" * 64)
        assert chunk is not None
        assert (chunk.refcount, chunk.orphaned_at) == (1, WHEN)
        assert chunk.orphaned_at is not None and chunk.orphaned_at.tzinfo is UTC


def test_runs_in_the_callers_transaction(database: Database) -> None:
    with pytest.raises(RuntimeError), database.write() as session:
        INSERT.run(core(session), _row("d" * 64))
        raise RuntimeError("rolled back")
    with database.read() as session:
        assert session.get(BlobChunk, "d" * 64) is None


def test_driver_errors_are_sqlalchemy_errors(database: Database) -> None:
    with database.write() as session:
        INSERT.run(core(session), _row("e" * 64))
    with pytest.raises(IntegrityError), database.write() as session:
        INSERT.run(core(session), _row("e" * 64))


def test_listeners_see_each_statement(database: Database) -> None:
    with recorded_statements(database.engine) as seen, database.write() as session:
        INSERT.run(core(session), _row("f" * 64))
        SELECT.run(core(session), {"key": "f" * 64})
    sent = [s.split()[0] for s in seen if "blob_chunks" in s]
    assert sent == ["INSERT", "SELECT"]


def test_a_column_default_to_compute_runs_through_sqlalchemy(database: Database) -> None:
    """Without ``created_at`` the INSERT needs its Python default (``utcnow``): it still works."""
    before = datetime.now(UTC)
    row = {"hash": "9" * 64, "size": 1, "refcount": 0}
    with database.write() as session:
        created = INSERT.run(core(session), row).one()[3]
    assert created >= before - timedelta(seconds=1)


_BY_KEYS = PreparedReadsByCount(
    "key", lambda keys: select(_chunks.c.hash).where(_chunks.c.hash.in_(keys))
)


@pytest.mark.parametrize("asked", [0, 1, 32, 33, 100, 512, 513, 1200])
def test_reads_by_count_answer_exactly_the_listed_values(database: Database, asked: int) -> None:
    """Long lists are padded to a power of two and read 512 at a time: the rows are still
    exactly those of the listed values, once each, and few statements are compiled."""
    stored = [f"{i:064x}" for i in range(0, 2000, 2)]
    with database.write() as session:
        for key in stored:
            INSERT.run(core(session), _row(key))
    listed = [f"{i:064x}" for i in range(asked)]  # every other one is stored
    rows = _BY_KEYS.rows(database, listed)
    assert sorted(row[0] for row in rows) == [key for key in listed if key in set(stored)]
    assert all(count <= 32 or count & (count - 1) == 0 for count in _BY_KEYS._made)
