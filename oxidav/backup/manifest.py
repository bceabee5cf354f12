"""``backup.json`` and ``chunks.txt``: what a backup holds, and the check that it is whole.

``chunks.txt`` lists one stored chunk per line (``hash size``), sorted; ``backup.json`` names the
database file, its kind and schema revision, whether chunks are encrypted, and the count, bytes
and SHA-256 of the chunk list. ``read_manifest`` refuses a folder whose list does not match.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

FORMAT = "oxidav-backup"
VERSION = 1
MANIFEST_FILE = "backup.json"
CHUNK_LIST_FILE = "chunks.txt"
BLOBS_FOLDER = "blobs"
SQLITE_FILE = "oxidav.db"
PG_DUMP_FILE = "database.pgdump"


class BackupError(Exception):
    """A backup cannot be made or restored; the message says why and what to do."""


@dataclass(frozen=True)
class Manifest:
    """The contents of ``backup.json``."""

    created: str
    oxidav_version: str
    database_kind: str  # "sqlite" or "postgresql"
    database_file: str
    schema_revision: str
    encrypted: bool
    chunk_count: int
    chunk_bytes: int
    chunk_list_sha256: str
    format: str = FORMAT
    version: int = VERSION


def write_chunk_list(folder: Path, chunks: Iterable[tuple[str, int]]) -> tuple[int, int, str]:
    """Write ``chunks.txt`` (sorted); return its count, bytes and SHA-256."""
    lines = sorted(f"{key} {size}\n" for key, size in chunks)
    body = "".join(lines).encode("ascii")
    _write_synced(folder / CHUNK_LIST_FILE, body)
    total = sum(int(line.split()[1]) for line in lines)
    return len(lines), total, hashlib.sha256(body).hexdigest()


def write_manifest(folder: Path, manifest: Manifest) -> None:
    body = json.dumps(asdict(manifest), indent=2, sort_keys=True).encode() + b"\n"
    _write_synced(folder / MANIFEST_FILE, body)


def read_manifest(folder: Path) -> tuple[Manifest, list[tuple[str, int]]]:
    """The manifest and chunk list of the backup in ``folder``; ``BackupError`` unless whole."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise BackupError(
            f"{folder} is not a finished oxidav backup (no {MANIFEST_FILE}; an interrupted "
            "backup is not restorable — run `oxidav backup` again)"
        )
    try:
        raw = json.loads(path.read_text("utf-8"))
        manifest = Manifest(**raw)
    except (ValueError, TypeError) as exc:
        raise BackupError(f"{path} is not an oxidav backup manifest ({exc})") from exc
    if manifest.format != FORMAT or manifest.version != VERSION:
        raise BackupError(f"{path}: unsupported backup format {manifest.format} {manifest.version}")
    body = (folder / CHUNK_LIST_FILE).read_bytes()
    if hashlib.sha256(body).hexdigest() != manifest.chunk_list_sha256:
        raise BackupError(f"{folder / CHUNK_LIST_FILE} does not match {MANIFEST_FILE}")
    chunks = []
    for line in body.decode("ascii").splitlines():
        key, size = line.split()
        chunks.append((key, int(size)))
    if len(chunks) != manifest.chunk_count:
        raise BackupError(f"{folder / CHUNK_LIST_FILE} lists a different number of chunks")
    return manifest, chunks


def _write_synced(path: Path, body: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
