"""Preparing a data dir: folders, database schema, first user.

``prepare`` is what ``oxidav serve`` runs before it listens: on an empty data dir it creates the
folder, the SQLite database and the blob folder, migrates, and creates ``admin`` (its password
is returned for showing only when oxidav generated it); on an existing one it refuses a schema
newer than this code and migrates an older one. What a new installation creates is private to
the server's user (``oxidav.startup.make_private``). A database that cannot be opened or
reached is a one-line ``StartupError``.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from oxidav.authz.authn.accounts import ensure_first_user
from oxidav.db import Database
from oxidav.db.migrate import check_not_newer, upgrade, upgrade_in_child
from oxidav.settings import Settings
from oxidav.startup import PRIVATE_DIR, database_error, make_private, sqlite_path

log = logging.getLogger("oxidav.bootstrap")


def prepare_storage(settings: Settings, db: Database, *, migrate_in_child: bool = False) -> None:
    """Create the data dir and migrate the database (refusing a newer schema); with
    ``migrate_in_child``, Alembic runs in a child process (``upgrade_in_child``)."""
    database = sqlite_path(settings)
    new = not settings.data_dir.exists() or (database is not None and not database.exists())
    settings.data_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if settings.resolved_blob_store.startswith("file://"):
        (settings.data_dir / "blobs").mkdir(mode=PRIVATE_DIR, exist_ok=True)
    try:
        with db.engine.connect():
            pass
    except (OperationalError, ArgumentError, NoSuchModuleError) as exc:
        raise database_error(settings, exc) from None
    if migrate_in_child:
        upgrade_in_child(db.engine)
    else:
        check_not_newer(db.engine)
        upgrade(db.engine)
    if new:
        make_private(settings)


def prepare(settings: Settings, db: Database) -> str | None:
    """Prepare storage; create ``admin`` on a database without users. Return its password
    when oxidav generated it (the caller shows it once); a password the operator set
    (``admin_password``) is never returned, so never printed. The server's preparation: it
    migrates in a child process, so Alembic is not kept in the server (``oxidav.db.migrate``)."""
    prepare_storage(settings, db, migrate_in_child=True)
    created = ensure_first_user(db, settings.admin_password)
    if created is not None and settings.admin_password:
        log.info("created user 'admin' with the password of the admin_password setting")
        return None
    return created
