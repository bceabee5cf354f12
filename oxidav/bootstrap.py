"""Preparing a data dir: folders, database schema, first user.

``prepare`` is what ``oxidav serve`` runs before it listens: on an empty data dir it creates the
folder, the SQLite database and the blob folder, migrates, and creates ``admin``; on an existing
one it refuses a schema newer than this code and migrates an older one.
"""

from __future__ import annotations

from oxidav.authz.accounts import ensure_first_user
from oxidav.db import Database
from oxidav.db.migrate import check_not_newer, upgrade
from oxidav.settings import Settings


def prepare_storage(settings: Settings, db: Database) -> None:
    """Create the data dir and migrate the database (refusing a newer schema)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.resolved_blob_store.startswith("file://"):
        (settings.data_dir / "blobs").mkdir(exist_ok=True)
    check_not_newer(db.engine)
    upgrade(db.engine)


def prepare(settings: Settings, db: Database) -> str | None:
    """Prepare storage; return the new admin password if a first user was created."""
    prepare_storage(settings, db)
    return ensure_first_user(db, settings.admin_password)
