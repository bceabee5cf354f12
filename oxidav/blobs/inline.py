"""Chunks kept in the database: the one chunk of a small content that a PUT stores.

A content that is one chunk of at most ``blob_inline_max`` bytes (16 KiB by default) lives in
the row of its chunk (``blob_chunks.data``) instead of a blob of its own, and has no manifest:
the chunk's hash (also the content's BLAKE3) names it, and ``blob_chunks.content_refs``
counts its references (NULL on a chunk that never was a content).

Invariants:

* **Durable as it is visible**: the bytes are upserted in the caller's transaction
  (``chunk_rows.add_content_chunk``), so they commit with the node row that names them, or
  neither does (docs/architecture.md#blobs).
* ``incref`` / ``decref`` / ``stat`` / ``open`` / ``concat`` take either kind of name: a
  manifest row first, else a chunk row with ``content_refs``. The two never meet: a manifest's
  name hashes ``MANIFEST_MAGIC`` and its entries, and a content whose bytes begin with
  ``MANIFEST_MAGIC`` keeps a manifest row.
* An existing row of the same chunk is reused; an unreferenced one (garbage, or another
  ingest's intent) gets the bytes, so the content never depends on a blob gc may be deleting.
* Reads look a chunk of at most ``INLINE_LIMIT`` bytes up in its row first, whatever
  ``blob_inline_max`` is now, and check it like a stored chunk (length and BLAKE3).
* gc deletes such rows like any other; ``blobs fsck`` checks their bytes; ``blobs migrate``
  has nothing to copy. Not with ``encryption_keys``: rows are not encrypted.
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
