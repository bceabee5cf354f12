"""``upsert(dialect_name, table)``: the ``INSERT … ON CONFLICT`` of the database in use.

SQLite and PostgreSQL both spell an upsert ``INSERT … ON CONFLICT``, each through its own
dialect's ``insert()``. The dialect is imported on first use: a server on SQLite never loads
SQLAlchemy's PostgreSQL dialect, which would otherwise sit in every worker's memory
(docs/deployment.md, "Memory").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PostgreSQLInsert
    from sqlalchemy.dialects.sqlite import Insert as SQLiteInsert


def upsert(dialect_name: str, table: Any) -> SQLiteInsert | PostgreSQLInsert:
    """An INSERT into ``table`` (a ``Table`` or a mapped class) that takes
    ``on_conflict_do_update`` / ``on_conflict_do_nothing``, for the dialect ``dialect_name``
    (``"sqlite"`` or ``"postgresql"``)."""
    if dialect_name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    if dialect_name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise ValueError(f"no upsert for the {dialect_name!r} dialect")
