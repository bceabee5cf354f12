"""Contents made from chunks a client sent one by one (the push protocol,
``oxidav.nextcloud.push``): ``store_chunks`` keeps verified chunks as unreferenced intents,
``assemble`` makes a manifest of a chunk list.

Invariants: a chunk is stored only under the BLAKE3 of its bytes (the caller verified it; the
store checks again on every read); a stored chunk without a manifest is an intent that gc
collects after its grace period, like an ingest's; ``assemble`` creates the manifest with no
reference (the caller's transaction takes it with ``incref``, as after an ingest) and computes
the content BLAKE3 from the chunks' bytes, never from what a client claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import blake3
from sqlalchemy import select

from oxidav.blobs import catalog
from oxidav.blobs.ingest import StoredContent, _Writer
from oxidav.blobs.inline import InlineChunks
from oxidav.blobs.manifests import ManifestBuilder
from oxidav.blobs.reader import fetch_chunk
from oxidav.blobs.store import BlobNotFoundError, BlobStore
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobChunk


class MissingChunksError(LookupError):
    """Chunks a content names that the chain does not hold (never stored, or collected)."""

    def __init__(self, missing: Sequence[str]) -> None:
        super().__init__(f"{len(missing)} chunk(s) not stored: {', '.join(missing[:3])}")
        self.missing = list(missing)


def store_chunks(db: Database, store: BlobStore, chunks: Mapping[str, bytes]) -> int:
    """Make ``chunks`` (hash -> verified bytes) durable as unreferenced intents; chunks already
    referenced are left alone. Returns how many were written."""
    if not chunks:
        return 0
    with db.write_core() as connection:
        claimed = catalog.claim_chunks(
            connection, {key: len(data) for key, data in chunks.items()}, utcnow()
        )
    writer = _Writer(store)
    try:
        for key in sorted(claimed):
            writer.submit(key, chunks[key])
        writer.finish()
    except BaseException:
        writer.close()
        raise
    return len(claimed)


def chunk_sizes(db: Database, keys: Sequence[str]) -> dict[str, int]:
    """``{hash: size}`` of the chunks among ``keys`` that have a row."""
    found: dict[str, int] = {}
    with db.read() as session:
        for start in range(0, len(keys), catalog.IN_LIST_MAX):
            part = keys[start : start + catalog.IN_LIST_MAX]
            query = select(BlobChunk.hash, BlobChunk.size).where(BlobChunk.hash.in_(part))
            found.update({row.hash: row.size for row in session.execute(query)})
    return found


def assemble(
    db: Database, store: BlobStore, inline: InlineChunks, keys: Sequence[str]
) -> StoredContent:
    """The content made of the chunks ``keys`` in order, its manifest created unreferenced.
    Raises ``MissingChunksError`` naming every chunk without a row or without bytes."""
    sizes = chunk_sizes(db, list(dict.fromkeys(keys)))
    missing = [key for key in dict.fromkeys(keys) if key not in sizes]
    if missing:
        raise MissingChunksError(missing)
    builder = ManifestBuilder()
    for key in keys:
        builder.add(bytes.fromhex(key), sizes[key])
    content = blake3.blake3()
    lost: list[str] = []
    for entry in builder.entries():
        try:
            content.update(fetch_chunk(store, entry, inline))
        except BlobNotFoundError:
            lost.append(entry.chunk_hash)
    if lost:
        raise MissingChunksError(lost)
    content_hash = content.hexdigest()
    try:
        with db.write() as session:
            catalog.create_manifest(session, builder, content_hash, utcnow())
    except catalog.BlobChainConflictError:
        raise MissingChunksError(list(dict.fromkeys(keys))) from None
    return StoredContent(builder.hash, builder.size, content_hash)


__all__ = ["MissingChunksError", "assemble", "chunk_sizes", "store_chunks"]
