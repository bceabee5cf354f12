"""Database snapshots for backups, and putting them back.

SQLite: ``sqlite3``'s online backup API copies the whole file in one step under one read
transaction, so the copy is one committed state while the server keeps writing (WAL).
PostgreSQL: a REPEATABLE READ transaction exports its snapshot, the chunk list is read in it,
and ``pg_dump --snapshot`` dumps exactly that state (custom format); ``pg_restore`` loads it into
an empty database. The password of a PostgreSQL URL travels in ``PGPASSWORD``, never in argv.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import NullPool

from oxidav.backup.manifest import BackupError

#: The chunks whose bytes live in the blob store (not in their rows), with their sizes.
STORED_CHUNKS = "SELECT hash, size FROM blob_chunks WHERE data IS NULL AND refcount > 0"
REVISION = "SELECT version_num FROM alembic_version"


def kind_of(url: str) -> str:
    backend = make_url(url).get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise BackupError(f"database_url: backups support SQLite and PostgreSQL, not {backend}")
    return backend


def sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:":
        raise BackupError(f"database_url {url!r} names no SQLite file")
    return Path(database)


def sqlite_snapshot(source: Path, target: Path) -> tuple[str, list[tuple[str, int]]]:
    """Copy the SQLite database ``source`` to ``target``; its revision and stored chunks."""
    if not source.is_file():
        raise BackupError(f"database_url: no SQLite database at {source}")
    src = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)  # pages=-1: one step, one read transaction
    finally:
        src.close()
        dst.close()
    return sqlite_contents(target)


def sqlite_contents(path: Path) -> tuple[str, list[tuple[str, int]]]:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        revision = str(conn.execute(REVISION).fetchone()[0])
        chunks = [(str(h), int(s)) for h, s in conn.execute(STORED_CHUNKS)]
    finally:
        conn.close()
    return revision, chunks


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """A libpq URL without the password, and the environment that carries it."""
    parsed: URL = make_url(url)
    env = dict(os.environ)
    if parsed.password:
        env["PGPASSWORD"] = str(parsed.password)
    plain = parsed.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(f"{name} is not installed (Debian: apt-get install postgresql-client)")
    return path


def pg_snapshot(url: str, target: Path) -> tuple[str, list[tuple[str, int]]]:
    """``pg_dump`` the database ``url`` to ``target`` from one exported snapshot; its revision
    and stored chunks as of that snapshot."""
    pg_dump = _tool("pg_dump")
    libpq_url, env = _libpq(url)
    engine = create_engine(url, isolation_level="REPEATABLE READ", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            snapshot = str(conn.execute(text("SELECT pg_export_snapshot()")).scalar_one())
            revision = str(conn.execute(text(REVISION)).scalar_one())
            rows = conn.execute(text(STORED_CHUNKS)).all()
            chunks = [(str(h), int(s)) for h, s in rows]
            command = [pg_dump, "--format=custom", f"--snapshot={snapshot}", "--no-owner"]
            done = subprocess.run(
                [*command, f"--file={target}", libpq_url], env=env, capture_output=True
            )
            conn.rollback()
    finally:
        engine.dispose()
    if done.returncode != 0:
        raise BackupError(f"pg_dump failed: {done.stderr.decode(errors='replace').strip()}")
    return revision, chunks


def sqlite_restore(source: Path, target: Path) -> None:
    src = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def pg_restore(source: Path, url: str) -> None:
    """Load the dump into the (empty) database ``url``."""
    tool = _tool("pg_restore")
    libpq_url, env = _libpq(url)
    done = subprocess.run(
        [tool, "--no-owner", "--no-privileges", "--exit-on-error", f"--dbname={libpq_url}", source],
        env=env,
        capture_output=True,
    )
    if done.returncode != 0:
        raise BackupError(f"pg_restore failed: {done.stderr.decode(errors='replace').strip()}")
