"""Preparing a data dir: folders, database schema, first user.

``prepare`` is what ``oxidav serve`` runs before it listens: on an empty data dir it creates the
folder, the SQLite database and the blob folder, migrates, and creates ``admin`` (its password
is returned for showing only when oxidav generated it); on an existing
one it refuses a schema newer than this code and migrates an older one.
"""

from __future__ import annotations

import logging

from oxidav.authz.accounts import ensure_first_user
from oxidav.db import Database
from oxidav.db.migrate import check_not_newer, upgrade
from oxidav.settings import Settings

log = logging.getLogger("oxidav.bootstrap")


def prepare_storage(settings: Settings, db: Database) -> None:
    """Create the data dir and migrate the database (refusing a newer schema)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.resolved_blob_store.startswith("file://"):
        (settings.data_dir / "blobs").mkdir(exist_ok=True)
    check_not_newer(db.engine)
    upgrade(db.engine)


def prepare(settings: Settings, db: Database) -> str | None:
    """Prepare storage; create ``admin`` on a database without users. Return its password
    when oxidav generated it (the caller shows it once); a password the operator set
    (``admin_password``) is never returned, so never printed."""
    prepare_storage(settings, db)
    created = ensure_first_user(db, settings.admin_password)
    if created is not None and settings.admin_password:
        log.info("created user 'admin' with the password of the admin_password setting")
        return None
    return created
