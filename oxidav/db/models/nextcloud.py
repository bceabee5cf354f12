"""Tables of the Nextcloud room: chunked-upload sessions and their chunks, favorites.

``nc_upload_sessions`` is one Nextcloud chunking-v2 transfer
(``/remote.php/dav/uploads/<user>/<id>/``); ``nc_upload_chunks`` its chunks, each a blob-chain
manifest on which the row holds one reference (taken when the chunk is recorded, dropped when
the session is assembled, aborted or purged).
``nc_login_flows`` are pending Login Flow v2 logins (``oxidav.nextcloud.login_flow``).
``nc_favorites`` marks nodes a user starred (``oc:favorite``); it is keyed by node id, so a
favorite follows MOVE, and has no foreign key to ``nodes`` (rows of purged nodes are ignored).
``push_staged_chunks`` records which user uploaded which chunk through the push protocol
(``oxidav.nextcloud.push``): a commit may name a chunk only if its user staged it (within the
blob gc grace period) or already holds it in their own files.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, utcnow


class UploadSession(Base):
    """One chunked upload (Nextcloud chunking v2), created by MKCOL of its folder."""

    __tablename__ = "nc_upload_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: The client's transfer id: the folder name below ``uploads/<user>/``.
    transfer_id: Mapped[str] = mapped_column(String(255))
    #: ``OC-Total-Length`` announced at MKCOL, if any.
    total_length: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: ``Destination`` announced at MKCOL (newer clients), if any.
    destination: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: Last activity (MKCOL or a chunk); sessions idle for 24 h are purged.
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        UniqueConstraint("user_id", "transfer_id"),
        Index("ix_nc_upload_sessions_updated_at", "updated_at"),
    )


class UploadChunk(Base):
    """One chunk of an upload session: its name (a zero-padded number) and stored content."""

    __tablename__ = "nc_upload_chunks"

    session_id: Mapped[int] = mapped_column(
        ForeignKey("nc_upload_sessions.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    manifest_hash: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Favorite(Base):
    """A node the user marked as favorite (``oc:favorite`` = 1)."""

    __tablename__ = "nc_favorites"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_nc_favorites_node_id", "node_id"),)


class LoginFlow(Base):
    """One Login Flow v2 attempt (``/index.php/login/v2``), alive for 20 minutes.

    Both tokens are stored as SHA-256 digests; ``csrf`` is the per-flow secret of the login
    form. ``user_id`` is set once the user logged in on the page; the app password itself is
    created only when the client polls, so no plaintext secret is ever stored."""

    __tablename__ = "nc_login_flows"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    poll_token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    login_token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    csrf: Mapped[str] = mapped_column(String(64))
    #: The client's User-Agent, used as the app password's label.
    client_name: Mapped[str] = mapped_column(String(255), default="")
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_nc_login_flows_created_at", "created_at"),)


class PushStagedChunk(Base):
    """A chunk ``user_id`` uploaded with the push protocol, not yet necessarily committed."""

    __tablename__ = "push_staged_chunks"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    chunk_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    staged_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_push_staged_chunks_staged_at", "staged_at"),)
