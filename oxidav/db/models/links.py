"""The table of public links (Nextcloud ``shareType`` 3): a token URL onto one file or folder.

``public_links``: anyone who knows ``token`` may use the shared node ``(resource_kind,
resource_id)`` of ``owner_id`` as ``mode`` allows (``read``, ``upload`` — a file drop — or
``edit``), after giving the password whose argon2id hash is ``password_hash`` (None: no
password), until ``expires_at`` (None: no expiry). Like grants, there is no foreign key into
the tree (docs/architecture.md#no-foreign-keys-between-rooms): a link whose node is gone, trashed or
no longer
``owner_id``'s is dead. Deleting the owner drops their links.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, utcnow


class PublicLink(Base):
    """One public link; every request through it reads this row by ``token`` (unique index)."""

    __tablename__ = "public_links"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: ``folder`` or ``file`` (``ResourceKind`` values); ``resource_id`` is the node id.
    resource_kind: Mapped[str] = mapped_column(String(16))
    resource_id: Mapped[int] = mapped_column(Integer)
    #: ``read``, ``upload`` or ``edit`` (``oxidav.authz.links.store.LinkMode`` values).
    mode: Mapped[str] = mapped_column(String(16))
    #: argon2id PHC string of the link password; None: no password.
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    label: Mapped[str] = mapped_column(String(255), default="")

    __table_args__ = (
        # "links on this node" (OCS list by path, share-types enrichment)
        Index("ix_public_links_resource", "resource_kind", "resource_id"),
        # "the links of this owner"
        Index("ix_public_links_owner_id", "owner_id"),
    )
