"""A server start on a database at the newest revision does not import Alembic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import text

from oxidav.db import Database
from oxidav.db.migrate import MIGRATIONS_DIR, at_head, current_revisions, script_head, upgrade


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
