"""Alembic migrations run from code: upgrade to head, and the schema-version guard.

The migration scripts live in ``oxidav/db/migrations``; no ``alembic.ini`` is needed because the
configuration is built here from the engine. ``oxidav db upgrade`` and ``oxidav serve`` both call
``upgrade``; ``serve`` first calls ``check_not_newer`` so that an old oxidav never runs against a
database that a newer oxidav has already migrated.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer oxidav than this one."""


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The revisions the database is at (empty for a database never migrated)."""
    with engine.connect() as conn:
        return tuple(MigrationContext.configure(conn).get_current_heads())


def check_not_newer(engine: Engine) -> None:
    """Raise ``SchemaTooNewError`` if the database holds a revision this code does not know."""
    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    for current in current_revisions(engine):
        if not _known(scripts, current):
            raise SchemaTooNewError(
                f"database schema is at revision {current!r}, which this oxidav does not "
                f"know (its newest is {', '.join(scripts.get_heads())}); "
                "upgrade oxidav before serving this database"
            )


def _known(scripts: ScriptDirectory, revision: str) -> bool:
    return any(script.revision == revision for script in scripts.walk_revisions())


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database to ``revision`` (default: the newest)."""
    command.upgrade(alembic_config(engine), revision)
