"""Migrations run on SQLite and PostgreSQL, match the models, and guard against newer schemas."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

import oxidav.db.models  # noqa: F401
from oxidav.db import Base, Database
from oxidav.db.migrate import SchemaTooNewError, check_not_newer, current_revisions, upgrade


def test_migrated_schema_matches_models(database: Database) -> None:
    with database.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


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
