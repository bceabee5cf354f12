"""Chunks kept in the database: the one chunk of a small content that a PUT stores.

A 4 KiB PUT through the blob store costs a claim transaction (the intent that keeps gc away
from a file being written), a new file and two fsyncs (the file, then its folder) before the
transaction that makes it visible: on this machine's disk that was a third of the request,
and SQLite's own measurements put a blob of a few KiB at about a third faster in a row than
in a file of its own (https://www.sqlite.org/fasterthanfs.html). A content that is one chunk
of at most ``blob_inline_max`` bytes (16 KiB by default) is therefore kept in the row of its
chunk (``blob_chunks.data``):

* **Writing** (``Ingest.run(publish=False)``, the PUT path): the chunk is neither claimed nor
  written to the store. The ``PendingContent`` carries its bytes, and its ``incref``, inside
  the caller's transaction, upserts the chunk row with them (``chunk_rows.add_content_chunk``):
  chunk and node row commit in one transaction, or neither does. The rule of
  docs/architecture.md#blobs — a content is never visible before the bytes it names are as durable
  as it is — holds by construction: the bytes are in the same commit as the row that names them. A
  crash loses both or neither, never the bytes alone; the previous version stays. That is the
  durability of every other row oxidav commits (calendar objects and vCards are stored the same
  way), on PostgreSQL a synced WAL record and on SQLite a WAL frame synced at the next checkpoint
  (at the commit with ``sqlite_synchronous = "full"``).
* **Named by its chunk**: such a content has no manifest row. Its manifest would be one entry
  naming its one chunk, so the chunk's hash — which is also the content's BLAKE3 — names the
  content, and the chunk row counts its references (``blob_chunks.content_refs``, included
  in ``refcount``; NULL on a chunk that never was a content). A manifest row and its entry
  row cost a small PUT two statements and five database pages of its commit; without them a
  4 KiB PUT ran 1.14 to 1.17 times as fast (bench/RESULTS.md). ``incref`` / ``decref`` /
  ``stat`` / ``open`` / ``concat`` take either kind of name: a manifest row first, else a
  chunk row with ``content_refs``. The two kinds cannot meet: a manifest's name is the
  BLAKE3 of ``MANIFEST_MAGIC`` and its entries, and a content whose bytes begin with
  ``MANIFEST_MAGIC`` keeps a manifest row (as before). Like an orphaned manifest, such a
  content without references may gain one again until gc collects it, as long as its bytes
  are certain to exist (in its row, or in a blob that a manifest still uses).
* An existing row of the same chunk is reused: a referenced one keeps what it has (its blob
  or its bytes); an unreferenced one — garbage, or another ingest's intent — gets the bytes,
  so this content never depends on a blob that gc may be deleting.
* **Reading**: a chunk of at most ``INLINE_LIMIT`` bytes is looked up in its row first
  (``InlineChunks``), whatever ``blob_inline_max`` is now; a row without bytes sends the
  reader to the store. The bytes are checked like a stored chunk's (length and BLAKE3).
* gc deletes such rows like any other (the store's delete of a blob that is not there does
  nothing); ``blobs fsck`` checks their bytes instead of the store; ``blobs migrate`` has
  nothing to copy for them.
* Not with ``encryption_keys``: rows are not encrypted, so every chunk then goes to the
  (encrypting) store.
"""

from __future__ import annotations

from sqlalchemy import Table, bindparam, select

from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.store import check_chunk
from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk
from oxidav.db.prepared import PreparedRead
from oxidav.settings import INLINE_LIMIT

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]
_DATA = PreparedRead(select(_chunks.c.data).where(_chunks.c.hash == bindparam("key")))


class InlineChunks:
    """The bytes of chunks kept in their rows, for the reader: one indexed read per chunk of
    at most ``INLINE_LIMIT`` bytes, none for a larger one."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, entry: ManifestEntry) -> bytes | None:
        """The checked bytes of the chunk of ``entry`` if its row holds them, else None (the
        chunk is in the store). Raises ``BlobIntegrityError`` if they do not match."""
        if entry.size > INLINE_LIMIT:
            return None
        row = _DATA.first(self.db, {"key": entry.chunk_hash})
        if row is None or row[0] is None:
            return None
        return check_chunk(entry.chunk_hash, entry.size, bytes(row[0]))


__all__ = ["INLINE_LIMIT", "InlineChunks"]
