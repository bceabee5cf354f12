"""Tables of the blobs room: chunks, manifests and the ordered chunk list of each manifest.

Reference counting, two levels:

* ``blob_manifests.refcount`` counts the references held by the rest of oxidav (file versions,
  trash entries, copies); callers change it with ``BlobChain.incref`` / ``decref`` in their own
  transaction.
* ``blob_chunks.refcount`` counts every use of the chunk: the entries of
  ``blob_manifest_chunks`` that name it (a chunk used twice by one manifest counts twice) plus
  its ``content_refs``. Entries change it when a manifest row is created (ingest, concat) or
  collected (gc).
* ``blob_chunks.content_refs`` counts the references the rest of oxidav holds on the chunk *as
  a content*: a small content that is one chunk kept in its row is named by that chunk's hash,
  with no manifest row (``oxidav.blobs.inline``), and ``incref`` / ``decref`` of that name
  change both counts. NULL: the chunk has never been a content of its own (its hash names no
  content); 0: a content without references, collected like an orphaned manifest.

``orphaned_at`` is set whenever a row is (or becomes) unreferenced, and cleared when it gains a
reference; gc removes rows, and the chunk bytes, that stayed unreferenced for a grace period.
Its indexes hold the unreferenced rows only (partial, ``orphaned_at IS NOT NULL``): gc asks for
nothing else, and a write that creates or references content then changes no index page there.
A chunk row with refcount 0 may also be the *intent* an unfinished ingest recorded before it
wrote the bytes, which is what keeps gc from deleting a chunk file that is being written.

A small chunk may keep its bytes in its own row (``blob_chunks.data``) instead of the blob store:
the one chunk of a small content written by a PUT (``oxidav.blobs.inline``). Such a row is
created, or given its bytes, in the transaction that also creates its manifest and the node
that refers to it, so the bytes are exactly as durable as the rows that make them visible.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, partial_index, utcnow

HASH_LEN = 64


def _orphans_index(name: str) -> Index:
    """The index of ``orphaned_at`` over the unreferenced rows (those that have one)."""
    return partial_index(name, "orphaned_at", where="orphaned_at IS NOT NULL")


class BlobChunk(Base):
    """One stored chunk; its bytes live in the blob store under ``hash``, or in ``data``."""

    __tablename__ = "blob_chunks"

    hash: Mapped[str] = mapped_column(String(HASH_LEN), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    refcount: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    orphaned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: The chunk's bytes, for a small chunk kept in the database (``oxidav.blobs.inline``).
    data: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    #: References on the chunk as a whole content (included in ``refcount``).
    content_refs: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    __table_args__ = (_orphans_index("ix_blob_chunks_orphaned_at"),)


class BlobManifest(Base):
    """One content version: an ordered list of chunks, named by the BLAKE3 of that list."""

    __tablename__ = "blob_manifests"

    hash: Mapped[str] = mapped_column(String(HASH_LEN), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    content_hash: Mapped[str] = mapped_column(String(HASH_LEN))
    chunk_count: Mapped[int] = mapped_column(Integer)
    refcount: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    orphaned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    __table_args__ = (_orphans_index("ix_blob_manifests_orphaned_at"),)


class BlobManifestChunk(Base):
    """Entry of a manifest's chunk list: the chunk that holds bytes ``[start, start + size)``.

    Chunks are never empty, so ``start`` orders the list and a seek is one index lookup.
    """

    __tablename__ = "blob_manifest_chunks"

    manifest_hash: Mapped[str] = mapped_column(
        String(HASH_LEN),
        ForeignKey("blob_manifests.hash", ondelete="CASCADE"),
        primary_key=True,
    )
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    chunk_hash: Mapped[str] = mapped_column(String(HASH_LEN), ForeignKey("blob_chunks.hash"))

    __table_args__ = (Index("ix_blob_manifest_chunks_chunk_hash", "chunk_hash"),)


__all__ = ["BlobChunk", "BlobManifest", "BlobManifestChunk"]
