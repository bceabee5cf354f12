"""A server start on a database at the newest revision does not import Alembic, and one that
migrates does it in a child process, so Alembic is not kept in the server."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from oxidav.db import Database
from oxidav.db.migrate import (
    MIGRATIONS_DIR,
    MigrationFailedError,
    SchemaTooNewError,
    at_head,
    current_revisions,
    script_head,
    upgrade,
    upgrade_in_child,
)
from tests.support.postgres import pg_admin_execute, pg_reachable, pg_url


def test_script_head_is_alembics_head() -> None:
    assert script_head() == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def test_at_head_only_at_the_newest_revision(database: Database) -> None:
    assert at_head(database.engine)
    for older in ("0001", "ffff_from_the_future"):
        with database.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": older})
        assert not at_head(database.engine)
        assert current_revisions(database.engine) == (older,)


def test_a_new_database_is_not_at_head(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        assert not at_head(db.engine)
        upgrade(db.engine)
        assert at_head(db.engine)
    finally:
        db.dispose()


def test_starting_on_a_migrated_database_leaves_alembic_unimported(db_url: str) -> None:
    program = (
        "import sys\n"
        "from oxidav.db import Database\n"
        "from oxidav.db.migrate import check_not_newer, upgrade\n"
        "import oxidav.app, oxidav.server\n"
        f"db = Database.from_url({db_url!r})\n"
        "check_not_newer(db.engine)\n"
        "upgrade(db.engine)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'mako'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


@contextmanager
def _new_database(backend: str, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database, never migrated."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'new.db'}"
        return
    if not pg_reachable():
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    name = f"oxidav_test_{uuid.uuid4().hex[:10]}_new"
    pg_admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_url(name)
    finally:
        pg_admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("pg", marks=pytest.mark.pg)])
def test_the_server_migrates_in_a_child_and_keeps_no_alembic(backend: str, tmp_path: Path) -> None:
    """A server's first start migrates a new database in a child process: the schema is at
    the newest revision afterwards, Alembic was never imported in the server, and the
    server's own pooled connection (opened before the child) still works."""
    with _new_database(backend, tmp_path) as url:
        program = (
            "import sys\n"
            "from sqlalchemy import text\n"
            "from oxidav.bootstrap import prepare\n"
            "from oxidav.db import Database\n"
            "from oxidav.db.migrate import at_head\n"
            "from oxidav.settings import load_settings\n"
            "import oxidav.app, oxidav.server\n"
            f"settings = load_settings(env={{'OXIDAV_DATA_DIR': {str(tmp_path / 'data')!r}, "
            f"'OXIDAV_DATABASE_URL': {url!r}, 'OXIDAV_ADMIN_PASSWORD': 'a long secret'}})\n"
            "db = Database.from_url(settings.resolved_database_url)\n"
            "with db.engine.connect() as conn:\n"
            "    conn.execute(text('SELECT 1'))\n"
            "prepare(settings, db)\n"
            "with db.engine.connect() as conn:\n"
            "    users = conn.execute(text('SELECT username FROM users')).scalars().all()\n"
            "print(at_head(db.engine), users, "
            "sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'mako'}))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "True ['admin'] []"


def test_a_failed_migration_in_the_child_is_one_error_in_the_server(tmp_path: Path) -> None:
    """The child's failure reaches the server as ``MigrationFailedError`` (the child printed
    its traceback), and a newer schema as ``SchemaTooNewError`` with the child's message."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'broken.db'}")
    try:
        with db.engine.begin() as conn:  # a version table naming nothing, beside no tables
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32))"))
            conn.execute(text("INSERT INTO alembic_version VALUES ('0001'), ('0002')"))
            conn.execute(text("CREATE TABLE users (id INTEGER PRIMARY KEY)"))
        with pytest.raises(MigrationFailedError, match="exit status 1"):
            upgrade_in_child(db.engine)
        with db.engine.begin() as conn:
            conn.execute(text("DELETE FROM alembic_version"))
            conn.execute(text("INSERT INTO alembic_version VALUES ('ffff_from_the_future')"))
        with pytest.raises(SchemaTooNewError, match="'ffff_from_the_future'"):
            upgrade_in_child(db.engine)
    finally:
        db.dispose()
