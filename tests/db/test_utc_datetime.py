"""``UTCDateTime``: an aware instant goes in, the same instant comes back aware in UTC, on both
backends and through both ways of reading (the ORM and ``Prepared``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import bindparam, select, text
from sqlalchemy.dialects import sqlite

from oxidav.db import Database, core
from oxidav.db.base import UTCDateTime
from oxidav.db.models.blobs import BlobChunk
from oxidav.db.prepared import Prepared

_chunks = BlobChunk.__table__
CREATED = Prepared(select(_chunks.c.created_at).where(_chunks.c.hash == bindparam("key")))
INSTANTS = [
    datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),  # no fraction of a second
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2030, 1, 1, 3, 0, tzinfo=timezone(timedelta(hours=3))),  # another zone
]


@pytest.mark.parametrize("when", INSTANTS, ids=["micro", "whole", "1999", "plus3"])
def test_an_instant_reads_back_equal_and_in_utc(database: Database, when: datetime) -> None:
    key = "a" * 64
    with database.write() as session:
        session.add(BlobChunk(hash=key, size=1, refcount=0, created_at=when))
    with database.read() as session:
        chunk = session.get(BlobChunk, key)
        assert chunk is not None
        assert chunk.created_at == when
        assert chunk.created_at.tzinfo is UTC
        row = CREATED.run(core(session), {"key": key}).one()
    assert row == (when,)
    assert row[0].tzinfo is UTC
    assert row[0].utcoffset() == timedelta(0)


def test_sqlite_text_in_other_shapes_reads_as_utc(database: Database) -> None:
    """Text SQLite itself writes (``CURRENT_TIMESTAMP``: no fraction; ISO ``T``) is read too."""
    if database.engine.dialect.name != "sqlite":
        pytest.skip("only SQLite keeps timestamps as text")
    with database.write() as session:
        for key, stamp in (("b", "2024-05-06 07:08:09"), ("c", "2024-05-06T07:08:09.5")):
            session.execute(
                text(
                    "INSERT INTO blob_chunks (hash, size, refcount, created_at)"
                    " VALUES (:hash, 1, 0, :stamp)"
                ),
                {"hash": key * 64, "stamp": stamp},
            )
    with database.read() as session:
        found = {c.hash[0]: c.created_at for c in session.scalars(select(BlobChunk))}
    assert found == {
        "b": datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
        "c": datetime(2024, 5, 6, 7, 8, 9, 500000, tzinfo=UTC),
    }


def test_sqlite_stores_the_text_sqlalchemy_would() -> None:
    """On SQLite ``UTCDateTime`` binds in one step what ``process_bind_param`` and
    ``sqlite.DATETIME`` would produce in two: timestamps compare as text in SQL, so the
    stored shape must not change (a whole second keeps its ``.000000``)."""
    dialect = sqlite.dialect()
    bind = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    two_steps = sqlite.DATETIME().bind_processor(dialect)
    instants = [
        *INSTANTS,
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(2024, 3, 31, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
        datetime(2024, 5, 6, 7, 8, 9, 5, tzinfo=ZoneInfo("UTC")),
    ]
    for when in instants:
        assert bind(when) == two_steps(UTCDateTime().process_bind_param(when, dialect))
    assert bind(None) is None
    with pytest.raises(ValueError, match="naive"):
        bind(datetime(2024, 5, 6))
