"""Migrations run on SQLite and PostgreSQL, match the models, and guard against newer schemas."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

import oxidav.db.models  # noqa: F401
from oxidav.db import Base, Database
from oxidav.db.migrate import SchemaTooNewError, check_not_newer, current_revisions, upgrade


def _declared_for(dialect: str) -> Any:
    """Alembic's ``include_object``: a model index declared only for other dialects
    (``Index.ddl_if``) is not expected in this database."""

    def include(obj: Any, _name: str, kind: str, _reflected: bool, _compare_to: Any) -> bool:
        condition = getattr(obj, "_ddl_if", None) if kind == "index" else None
        return condition is None or condition.dialect in (None, dialect)

    return include


def test_migrated_schema_matches_models(database: Database) -> None:
    with database.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_object": _declared_for(conn.dialect.name)}
        )
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def _condition(text_or_clause: object) -> str:
    """A partial index's condition as compared here: without outer parentheses, blanks
    collapsed, upper case (PostgreSQL reflects ``(x IS NULL)``, SQLite the text it was given)."""
    condition = " ".join(str(text_or_clause).split()).upper()
    while condition.startswith("(") and condition.endswith(")"):
        condition = condition[1:-1].strip()
    return condition


def test_partial_indexes_have_the_models_conditions(database: Database) -> None:
    """Every index a model declares partial (``partial_index``) has that condition in the
    migrated database, and no other index is partial."""
    dialect = database.engine.dialect.name
    declared = _declared_for(dialect)
    expected = {
        index.name: _condition(index.info["where"]) if "where" in index.info else None
        for table in Base.metadata.tables.values()
        for index in table.indexes
        if declared(index, index.name, "index", False, None)
    }
    assert sum(condition is not None for condition in expected.values()) >= 9
    reflected: dict[str, str | None] = {}
    inspector = inspect(database.engine)
    for table_name in inspector.get_table_names():
        for index in inspector.get_indexes(table_name):
            where = index.get("dialect_options", {}).get(f"{dialect}_where")
            reflected[str(index["name"])] = None if where is None else _condition(where)
    assert {name: reflected.get(name, "missing") for name in expected} == expected


def test_the_card_index_is_covering_on_sqlite_only(database: Database) -> None:
    names = {index["name"] for index in inspect(database.engine).get_indexes("card_index")}
    on_sqlite = database.engine.dialect.name == "sqlite"
    assert ("ix_card_index_book_prop_value" in names) == on_sqlite
    assert ("ix_card_index_book_prop" in names) != on_sqlite


def test_every_model_table_exists(database: Database) -> None:
    tables = set(inspect(database.engine).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_upgrade_is_idempotent(database: Database) -> None:
    before = current_revisions(database.engine)
    assert before
    upgrade(database.engine)
    assert current_revisions(database.engine) == before


def test_newer_schema_is_refused(database: Database) -> None:
    with database.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE alembic_version SET version_num = 'ffff_from_the_future' "
                "WHERE version_num = (SELECT MIN(version_num) FROM alembic_version)"
            )
        )
    with pytest.raises(SchemaTooNewError, match="ffff_from_the_future"):
        check_not_newer(database.engine)


def test_sqlite_connection_settings(tmp_path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'x.db'}")
    with db.read() as session:
        assert session.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert session.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert session.execute(text("PRAGMA busy_timeout")).scalar() == 30000
    db.dispose()


def test_memory_sqlite_is_refused() -> None:
    with pytest.raises(ValueError, match="memory"):
        Database.from_url("sqlite://")


def test_migrations_form_one_line() -> None:
    from alembic.script import ScriptDirectory

    from oxidav.db.migrate import MIGRATIONS_DIR

    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    assert len(scripts.get_heads()) == 1
    assert len(scripts.get_bases()) == 1
