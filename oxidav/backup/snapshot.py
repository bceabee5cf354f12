"""``oxidav backup DEST``: a consistent copy of a running installation (see the package doc).

Order: the database snapshot first, then every chunk it stores outside its rows, then the chunk
list, then ``backup.json``. An interrupted backup leaves no ``backup.json``; running the command
again on the same folder takes a new snapshot and keeps the chunks already copied.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from oxidav.backup import database
from oxidav.backup.chunks import copy_chunks
from oxidav.backup.manifest import (
    BLOBS_FOLDER,
    MANIFEST_FILE,
    PG_DUMP_FILE,
    SQLITE_FILE,
    BackupError,
    Manifest,
    write_chunk_list,
    write_manifest,
)
from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.urls import store_from_url
from oxidav.progress import Meter, StopFlag
from oxidav.settings import Settings
from oxidav.version import __version__


@dataclass(frozen=True)
class BackupReport:
    folder: Path
    manifest: Manifest

    def __str__(self) -> str:
        m = self.manifest
        keys = " (encrypted: keep your encryption_keys, they are not in the backup)"
        return (
            f"backup written to {self.folder}: {m.database_kind} database at schema "
            f"{m.schema_revision}, {m.chunk_count} stored chunk(s), {m.chunk_bytes} bytes"
            + (keys if m.encrypted else "")
        )


def create_backup(settings: Settings, folder: Path, meter: Meter, stop: StopFlag) -> BackupReport:
    """Write a backup of the installation ``settings`` describes into ``folder``."""
    folder = folder.absolute()
    if (folder / MANIFEST_FILE).exists():
        raise BackupError(f"{folder} already holds a finished backup; choose a new folder")
    if folder.exists() and any(folder.iterdir()) and not (folder / BLOBS_FOLDER).is_dir():
        raise BackupError(f"{folder} is not empty; choose an empty or new folder")
    old_umask = os.umask(0o077)  # the backup holds password hashes and every file
    try:
        return _write_backup(settings, folder, meter, stop)
    finally:
        os.umask(old_umask)


def _write_backup(settings: Settings, folder: Path, meter: Meter, stop: StopFlag) -> BackupReport:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    url = settings.resolved_database_url
    kind = database.kind_of(url)
    step = meter.phase("database snapshot", unit="files")
    if kind == "sqlite":
        db_file = SQLITE_FILE
        tmp = folder / (SQLITE_FILE + ".tmp")
        tmp.unlink(missing_ok=True)
        revision, chunks = database.sqlite_snapshot(database.sqlite_path(url), tmp)
        tmp.replace(folder / SQLITE_FILE)
    else:
        db_file = PG_DUMP_FILE
        revision, chunks = database.pg_snapshot(url, folder / PG_DUMP_FILE)
    step.advance(1, (folder / db_file).stat().st_size)
    step.done()
    stop.check()

    keys = settings.encryption_key_bytes()
    source = store_from_url(settings.resolved_blob_store)
    target = LocalBlobStore(folder / BLOBS_FOLDER)
    copying = meter.phase(
        "chunks", total=len(chunks), total_bytes=sum(s for _, s in chunks), unit="chunks"
    )
    try:
        copy_chunks(chunks, source, target, keys, copying.advance, stop.check, skip_present=True)
    finally:
        source.close()
        target.close()
    copying.done()
    count, nbytes, digest = write_chunk_list(folder, chunks)
    manifest = Manifest(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        oxidav_version=__version__,
        database_kind=kind,
        database_file=db_file,
        schema_revision=revision,
        encrypted=bool(keys),
        chunk_count=count,
        chunk_bytes=nbytes,
        chunk_list_sha256=digest,
    )
    write_manifest(folder, manifest)
    return BackupReport(folder, manifest)
