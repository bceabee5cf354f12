"""``oxidav restore SRC``: a backup back into a new installation.

The target is the installation the settings describe (``--data-dir``, ``database_url``,
``blob_store``); its database must not exist yet (an SQLite file) or be empty (PostgreSQL), so a
restore never overwrites live data and no server can be using it. Order: the manifest and chunk
list are checked, every chunk is verified against its name while it is copied into the target
store, and the database comes last — a restore interrupted before it can simply be run again.
Finally the schema is migrated if the backup is older, the copied process-presence rows are
dropped, and unreferenced chunk rows whose bytes were not backed up are removed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect, text

from oxidav.backup import database
from oxidav.backup.chunks import copy_chunks
from oxidav.backup.manifest import BLOBS_FOLDER, BackupError, Manifest, read_manifest
from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.urls import store_from_url
from oxidav.db import Database
from oxidav.db.migrate import check_not_newer, upgrade
from oxidav.progress import Meter, StopFlag
from oxidav.settings import Settings


@dataclass(frozen=True)
class RestoreReport:
    manifest: Manifest
    settings: Settings

    def __str__(self) -> str:
        m = self.manifest
        return (
            f"restored the backup of {m.created} into {self.settings.data_dir}: "
            f"{m.chunk_count} stored chunk(s), {m.chunk_bytes} bytes"
        )


def restore_backup(settings: Settings, folder: Path, meter: Meter, stop: StopFlag) -> RestoreReport:
    """Restore the backup in ``folder`` into the (new) installation ``settings`` describe."""
    folder = folder.absolute()
    manifest, chunks = read_manifest(folder)
    url = settings.resolved_database_url
    kind = database.kind_of(url)
    if kind != manifest.database_kind:
        raise BackupError(
            f"database_url: the backup holds a {manifest.database_kind} database; restore it "
            f"into a {manifest.database_kind} database_url, not {kind}"
        )
    if manifest.encrypted and not settings.encryption_keys:
        raise BackupError(
            "encryption_keys: the backup's chunks are encrypted; "
            "set the keys they were written with"
        )
    _refuse_used_target(settings, kind)
    old_umask = os.umask(0o077)
    try:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        keys = settings.encryption_key_bytes() if manifest.encrypted else []
        source = LocalBlobStore(folder / BLOBS_FOLDER)
        target = store_from_url(settings.resolved_blob_store)
        copying = meter.phase(
            "chunks", total=len(chunks), total_bytes=manifest.chunk_bytes, unit="chunks"
        )
        try:
            copy_chunks(chunks, source, target, keys, copying.advance, stop.check, True)
        finally:
            source.close()
            target.close()
        copying.done()
        stop.check()
        step = meter.phase("database", unit="files")
        dump = folder / manifest.database_file
        if kind == "sqlite":
            path = database.sqlite_path(url)
            tmp = path.with_name(path.name + ".restoring")
            tmp.unlink(missing_ok=True)
            database.sqlite_restore(dump, tmp)
            tmp.replace(path)
        else:
            database.pg_restore(dump, url)
        step.advance(1, dump.stat().st_size)
        step.done()
        _settle(settings)
    finally:
        os.umask(old_umask)
    return RestoreReport(manifest, settings)


def _refuse_used_target(settings: Settings, kind: str) -> None:
    url = settings.resolved_database_url
    if kind == "sqlite":
        path = database.sqlite_path(url)
        if path.exists():
            raise BackupError(
                f"data_dir: {path} already exists; restore into a new data dir "
                "(or a new database_url), never over an installation"
            )
        return
    db = Database.from_url(url, settings.sqlite_synchronous)
    try:
        tables = inspect(db.engine).get_table_names()
    finally:
        db.dispose()
    if tables:
        raise BackupError(
            "database_url: the target database is not empty; restore into a new, empty database"
        )


def _settle(settings: Settings) -> None:
    """Migrate an older schema, and drop what belonged to the backed-up installation's
    processes and unfinished ingests."""
    db = Database.from_url(settings.resolved_database_url, settings.sqlite_synchronous)
    try:
        check_not_newer(db.engine)
        upgrade(db.engine)
        with db.engine.begin() as conn:
            if inspect(conn).has_table("process_presence"):
                conn.execute(text("DELETE FROM process_presence"))
            conn.execute(text("DELETE FROM blob_chunks WHERE data IS NULL AND refcount = 0"))
    finally:
        db.dispose()
