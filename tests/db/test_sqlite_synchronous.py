"""``sqlite_synchronous``: every SQLite connection oxidav opens syncs its WAL as the setting
says (``PRAGMA synchronous``: 1 is NORMAL, 2 is FULL), whichever way the database is used; and
every one checkpoints at ``SQLITE_WAL_AUTOCHECKPOINT_PAGES``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from oxidav.db import Database, make_engine
from oxidav.db.engine import SQLITE_WAL_AUTOCHECKPOINT_PAGES
from oxidav.services import Services
from oxidav.settings import load_settings

PRAGMA = {"normal": 1, "full": 2}


def _synchronous_everywhere(db: Database, pragma: str = "synchronous") -> set[int]:
    """The pragma on each kind of connection: session read and write, a single read, a Core
    write (the last two are per-thread connections on SQLite)."""
    seen: set[int] = set()
    with db.read() as session:
        seen.add(session.execute(text(f"PRAGMA {pragma}")).scalar_one())
    with db.write() as session:
        seen.add(session.execute(text(f"PRAGMA {pragma}")).scalar_one())
    with db.single_read() as raw:
        seen.add(raw.execute(f"PRAGMA {pragma}").fetchone()[0])
    with db.write_core() as connection:
        seen.add(connection.execute(text(f"PRAGMA {pragma}")).scalar_one())
    return seen


@pytest.mark.parametrize("value", ["normal", "full"])
def test_every_connection_syncs_as_configured(tmp_path: Path, value: str) -> None:
    settings = load_settings({"data_dir": tmp_path}, env={"OXIDAV_SQLITE_SYNCHRONOUS": value})
    assert settings.sqlite_synchronous == value
    services = Services.open(settings)
    try:
        assert _synchronous_everywhere(services.db) == {PRAGMA[value]}
    finally:
        services.db.engine.dispose()


def test_the_default_is_normal(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'd.db'}")
    assert _synchronous_everywhere(db) == {PRAGMA["normal"]}
    db.engine.dispose()


def test_every_connection_checkpoints_at_the_same_wal_size(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'd.db'}")
    assert _synchronous_everywhere(db, "wal_autocheckpoint") == {SQLITE_WAL_AUTOCHECKPOINT_PAGES}
    db.engine.dispose()


def test_an_unknown_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        make_engine(f"sqlite:///{tmp_path / 'd.db'}", sqlite_synchronous="off")
