"""Tables of the tree room: file/folder nodes, their dead properties, and WebDAV locks.

``nodes`` holds every file and folder of every user (docs/architecture.md#nodes). The integer ``id``
is Nextcloud's ``oc:fileid``. ``path`` is the materialized path below the user's root (``""`` for
the root, ``"/a/b"`` below it); it is compared byte-wise (``COLLATE "C"`` on PostgreSQL, SQLite's
default BINARY), so ``path >= '/a/' AND path < '/a0'`` selects exactly the subtree of ``/a`` and
can use the ``(user_id, path)`` index. Trashed nodes keep their rows (``trashed_at`` set) until
the trash is purged; uniqueness of ``(parent_id, name)`` holds among live nodes only.

``node_properties`` stores RFC 4918 dead properties keyed by node id (so they follow MOVE), and
``dav_locks`` stores RFC 4918 §6 locks keyed by the lock root URL, so that several processes
share both.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, partial_index, utcnow

#: Text compared byte-wise on both backends (UTF-8 byte order == code point order).
BinaryText = Text().with_variant(Text(collation="C"), "postgresql")
#: A name (one path segment), compared byte-wise like paths.
BinaryName = String(255).with_variant(String(255, collation="C"), "postgresql")


class Node(Base):
    """A file or a folder of one user."""

    __tablename__ = "nodes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: None for the user's root folder. No foreign key: purging a trashed folder must not
    #: cascade into (or be blocked by) separately trashed items that were below it.
    parent_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    name: Mapped[str] = mapped_column(BinaryName)
    path: Mapped[str] = mapped_column(BinaryText)
    is_folder: Mapped[bool] = mapped_column(Boolean)
    #: Files: content length. Folders: total size of the live files below (rolled up).
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    mtime: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    etag: Mapped[str] = mapped_column(String(64))
    #: The blob chain manifest of a file's content; None for folders and the empty file.
    manifest_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: BLAKE3 hex of a file's whole content.
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    mime_type: Mapped[str] = mapped_column(String(255), default="")
    #: Nextcloud ``oc:checksums`` value, e.g. ``"SHA1:ab12… MD5:cd34…"``.
    checksums: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    trashed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: For trashed nodes: the node whose DELETE trashed them (itself for that node).
    trash_root_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: For trash roots: where the node lived, for restore.
    original_parent_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    original_path: Mapped[str | None] = mapped_column(BinaryText, nullable=True)

    __table_args__ = (
        partial_index(
            "uq_nodes_live_parent_name",
            "parent_id",
            "name",
            unique=True,
            where="trashed_at IS NULL",
        ),
        partial_index("uq_nodes_user_root", "user_id", unique=True, where="parent_id IS NULL"),
        Index("ix_nodes_user_path", "user_id", "path"),
        # Only trashed rows have a trash root: live rows (nearly all of them, and every row a
        # PUT inserts) stay out of the index.
        partial_index("ix_nodes_trash_root", "trash_root_id", where="trash_root_id IS NOT NULL"),
        # A node id is Nextcloud's fileid: it must never be handed out twice, also after a
        # purge (SQLite would otherwise reuse the largest freed rowid).
        {"sqlite_autoincrement": True},
    )


class NodeProperty(Base):
    """One dead property (RFC 4918 §4) of a node: Clark name and the serialized XML element."""

    __tablename__ = "node_properties"

    node_id: Mapped[int] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(512), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)


class DavLock(Base):
    """One RFC 4918 §6 write lock, in WsgiDAV's lock dictionary shape.

    ``root`` is the normalized lock root URL (quoted, no trailing slash); ``expire`` is seconds
    since the epoch, or -1 for an infinite lock.
    """

    __tablename__ = "dav_locks"

    token: Mapped[str] = mapped_column(String(128), primary_key=True)
    root: Mapped[str] = mapped_column(BinaryText, index=True)
    lock_type: Mapped[str] = mapped_column(String(16), default="write")
    scope: Mapped[str] = mapped_column(String(16))
    depth: Mapped[str] = mapped_column(String(16))
    owner: Mapped[bytes] = mapped_column(LargeBinary)
    timeout: Mapped[float] = mapped_column(Float)
    expire: Mapped[float] = mapped_column(Float)
    principal: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
