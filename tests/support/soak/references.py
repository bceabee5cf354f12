"""Content references against their holders: every content's refcount equals the references
actually held on it, so nothing the soak's kills interrupted leaked one (or dropped one).

Holders are the file nodes (live and trashed; ``nodes.manifest_hash``) and the chunks of
pending Nextcloud uploads (``nc_upload_chunks.manifest_hash``). A content is a manifest row
(``blob_manifests.refcount``) or a chunk kept as a content of its own
(``blob_chunks.content_refs``, ``oxidav.blobs.inline``). ``blobs fsck`` checks the level below
(chunk refcounts against manifest entries and content references).
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select

from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.db.models.nextcloud import UploadChunk
from oxidav.db.models.tree import Node


def reference_mismatches(db: Database) -> list[str]:
    """One line per content whose count differs from its holders, or holder without content."""
    held: Counter[str] = Counter()
    with db.read() as session:
        for table in (Node, UploadChunk):
            column = table.manifest_hash
            for name, n in session.execute(
                select(column, func.count()).where(column.is_not(None)).group_by(column)
            ):
                held[str(name)] += int(n)
        counted: dict[str, int] = {
            str(h): int(r)
            for h, r in session.execute(select(BlobManifest.hash, BlobManifest.refcount))
        }
        for h, r in session.execute(
            select(BlobChunk.hash, BlobChunk.content_refs).where(
                BlobChunk.content_refs.is_not(None)
            )
        ):
            counted[str(h)] = counted.get(str(h), 0) + int(r or 0)
    problems = [
        f"content {h} counts {counted.get(h, 0)} reference(s) but {held[h]} are held"
        for h in sorted(set(counted) | set(held))
        if counted.get(h, 0) != held[h]
    ]
    problems.extend(f"content {h} is held but does not exist" for h in held if h not in counted)
    return problems
