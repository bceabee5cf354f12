"""Chunk rows that hold their bytes, and contents named by their one chunk (``oxidav.blobs.
inline``): the statements ``catalog`` runs on them, built once.

* ``add_inline_chunk``: a manifest's chunk gains a use and, when its row was unreferenced,
  the bytes (the one chunk of a content that keeps a manifest row);
* ``add_content_chunk``: a one-chunk content becomes a content named by that chunk, with
  references counted in ``content_refs`` and ``refcount``;
* ``content_chunk`` / ``change_content_refs``: the lookup and the reference change of such a
  content, which ``catalog`` falls back to when a name has no manifest row.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Table,
    bindparam,
    case,
    func,
    null,
    or_,
    select,
    update,
)

from oxidav.db import Transaction, UTCDateTime, core
from oxidav.db.models.blobs import BlobChunk
from oxidav.db.prepared import Prepared
from oxidav.db.upsert import upsert

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]


def _inline_statement(dialect_name: str, as_content: bool) -> Any:
    """A chunk kept in its row gains ``refcount`` references — ``as_content``: as a content
    named by the chunk, counted in ``content_refs`` too: a new row holds the bytes; an
    unreferenced existing one (garbage, or another ingest's intent) is given them, so the
    content does not rely on its blob; a referenced one keeps what it has."""
    stmt = upsert(dialect_name, _chunks)
    changes = {
        "refcount": _chunks.c.refcount + stmt.excluded.refcount,
        "orphaned_at": None,
        "data": case((_chunks.c.refcount == 0, stmt.excluded.data), else_=_chunks.c.data),
    }
    if as_content:
        changes["content_refs"] = (
            func.coalesce(_chunks.c.content_refs, 0) + stmt.excluded.content_refs
        )
    return stmt.on_conflict_do_update(index_elements=[_chunks.c.hash], set_=changes)


@functools.cache
def _add_inline(dialect_name: str) -> Prepared:
    return Prepared(_inline_statement(dialect_name, as_content=False))


@functools.cache
def _add_content(dialect_name: str) -> Prepared:
    return Prepared(_inline_statement(dialect_name, as_content=True))


#: The size and references of the content named by a chunk (a row that is or was one).
_CONTENT_CHUNK = select(_chunks.c.size, _chunks.c.content_refs).where(
    _chunks.c.hash == bindparam("key"), _chunks.c.content_refs.is_not(None)
)
_CHANGE = bindparam("n", type_=BigInteger())
_NEW_CONTENT_REFS = _chunks.c.content_refs + _CHANGE
_NEW_REFCOUNT = _chunks.c.refcount + _CHANGE
#: ``n`` (positive or negative) references on a content named by its chunk. Like an orphaned
#: manifest, one without references may gain one again before gc collects it — only while
#: its bytes are certain to exist: in its row, or in a blob that a manifest still uses (an
#: unreferenced chunk's blob may be gone: ``catalog.claim_chunks``).
_CHANGE_CONTENT_REFS = Prepared(
    update(_chunks)
    .where(
        _chunks.c.hash == bindparam("key"),
        _chunks.c.content_refs.is_not(None),
        _NEW_CONTENT_REFS >= 0,
        or_(_CHANGE < 0, _chunks.c.refcount > 0, _chunks.c.data.is_not(None)),
    )
    .values(
        content_refs=_NEW_CONTENT_REFS,
        refcount=_NEW_REFCOUNT,
        orphaned_at=case((_NEW_REFCOUNT == 0, bindparam("now", type_=UTCDateTime())), else_=null()),
    )
)


def add_inline_chunk(conn: Connection, row: dict[str, Any]) -> None:
    """Upsert the chunk row ``row`` (hash, size, refcount, created_at, orphaned_at, data) as
    one use by a manifest entry (``_inline_statement``)."""
    _add_inline(conn.dialect.name).run(conn, row)


def add_content_chunk(
    session: Transaction, chunk_hash: str, data: bytes, references: int, now: datetime
) -> None:
    """Make the one-chunk content ``data`` (its chunk hash, which is also its content hash,
    ``chunk_hash``) a content named by that hash, with ``references`` more references: the
    chunk row is created holding the bytes, or an existing one counts them (and, when it was
    unreferenced, takes the bytes). No manifest row: this content's manifest would be one
    entry naming this chunk."""
    if references <= 0:
        raise ValueError("a content is created with at least one reference")
    conn = core(session)
    row = {
        "hash": chunk_hash,
        "size": len(data),
        "refcount": references,
        "content_refs": references,
        "created_at": now,
        "orphaned_at": None,
        "data": data,
    }
    _add_content(conn.dialect.name).run(conn, row)


def content_chunk(conn: Connection, chunk_hash: str) -> tuple[int, int] | None:
    """``(size, references)`` of the content named by chunk ``chunk_hash``, or None when that
    chunk is not (or was never) a content of its own."""
    row = conn.execute(_CONTENT_CHUNK, {"key": chunk_hash}).first()
    return None if row is None else (int(row[0]), int(row[1]))


def change_content_refs(conn: Connection, chunk_hash: str, delta: int, now: datetime) -> bool:
    """Add ``delta`` references to the content named by chunk ``chunk_hash`` (at zero it is
    stamped an orphan, collected by gc after the grace period). False, changing nothing, when
    there is no such content, the count would go negative, or it has no references left and
    its bytes may be gone."""
    params = {"key": chunk_hash, "n": delta, "now": now}
    return bool(_CHANGE_CONTENT_REFS.run(conn, params).rowcount == 1)


__all__ = ["add_content_chunk", "add_inline_chunk", "change_content_refs", "content_chunk"]
