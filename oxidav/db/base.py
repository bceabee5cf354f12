"""The declarative base every table model derives from, with constraint naming conventions.

Naming conventions make Alembic migrations produce the same constraint names on SQLite and
PostgreSQL, so a later migration can drop or alter a constraint by name on both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Index, MetaData
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator, TypeEngine

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Base class of all oxidav tables."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def partial_index(name: str, *columns: str, where: str, unique: bool = False) -> Index:
    """The index ``name`` over the rows for which the SQL condition ``where`` holds, as the
    migrations create it on SQLite and PostgreSQL (``sqlite_where`` / ``postgresql_where``).

    The model keeps the condition in ``Index.info["where"]``, not in those dialect options:
    naming ``postgresql_where`` makes SQLAlchemy import its PostgreSQL dialect to check the
    option, in every process, also on SQLite. tests/db/test_migrations.py checks that a
    migrated database has exactly these conditions, on both."""
    return Index(name, *columns, unique=unique, info={"where": where})


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as naive UTC and always read back as an aware UTC datetime.

    SQLite has no time zones; PostgreSQL's ``timestamp without time zone`` neither. Storing naive
    UTC everywhere and attaching UTC on the way out keeps comparisons identical on both.
    """

    impl = DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return _SQLiteUTCText()  # type: ignore[no-untyped-call]  # SQLAlchemy's own
        return super().load_dialect_impl(dialect)

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return _utc_text
        return super().bind_processor(dialect)

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        return None if value is None else _in_utc(value).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None or value.tzinfo is not None:  # SQLite's text is read as UTC already
            return value
        return value.replace(tzinfo=UTC)


def _in_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive one is refused (its zone is unknown)."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTCDateTime column")
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def _utc_text(value: datetime | None) -> str | None:
    """``process_bind_param`` and ``sqlite.DATETIME``'s text (``YYYY-MM-DD HH:MM:SS.ffffff``,
    naive UTC) in one step: half the cost of the two, and a file write binds six."""
    return None if value is None else _in_utc(value).isoformat(" ", "microseconds")[:26]


def _utc_from_text(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value + "+00:00")


class _SQLiteUTCText(sqlite.DATETIME):
    """SQLite's text timestamp (written by ``sqlite.DATETIME`` as ``YYYY-MM-DD HH:MM:SS.ffffff``)
    read straight into an aware UTC datetime: one C call, where parsing it naive and then
    attaching UTC with ``replace`` costs 7x as much — every node row holds two of them, and a
    5000-file PROPFIND reads 5000 rows."""

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        return _utc_from_text


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
