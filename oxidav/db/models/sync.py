"""Tables of the generic change log behind RFC 6578 sync tokens (``oxidav.sync``).

A *collection* is anything whose members clients synchronise: a calendar, an address book. It is
named by a ``kind`` ("calendar", "addressbook") and the integer id the owning room gives it; no
foreign key, so every room can use the log without knowing the others.

``sync_collections`` holds one counter per collection: ``seq`` grows by one per change, ``epoch``
is random per collection life (so a token of a deleted collection never validates against a new
one that reuses its id), ``min_seq`` is the oldest sequence number the log can still answer from.

``sync_changes`` holds one row per member name ever seen: the sequence number of its latest
change, whether that change removed it, and the sequence number at which its current (or last)
life began. One row per name keeps the log as small as the collection plus its tombstones.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base


class SyncCollection(Base):
    """The change counter of one synchronised collection."""

    __tablename__ = "sync_collections"
    __table_args__ = (
        UniqueConstraint("kind", "collection_id", name="uq_sync_collections_kind_collection_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    collection_id: Mapped[int] = mapped_column(Integer)
    epoch: Mapped[str] = mapped_column(String(16))
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    min_seq: Mapped[int] = mapped_column(BigInteger, default=0)


class SyncChange(Base):
    """The latest change of one member (by name) of a synchronised collection."""

    __tablename__ = "sync_changes"
    __table_args__ = (
        UniqueConstraint(
            "kind", "collection_id", "name", name="uq_sync_changes_kind_collection_id_name"
        ),
        Index("ix_sync_changes_kind_collection_seq", "kind", "collection_id", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    collection_id: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(255))
    seq: Mapped[int] = mapped_column(BigInteger)
    created_seq: Mapped[int] = mapped_column(BigInteger)
    removed: Mapped[bool] = mapped_column(Boolean, default=False)
