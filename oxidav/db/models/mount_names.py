"""The table of the names under which shares appear in their recipients' trees (Nextcloud's
per-recipient ``file_target``).

``mount_names``: user ``user_id`` sees the shared node ``node_id`` of user ``owner_id`` as the
member ``name`` of their share folder. One row per (recipient, shared node): a node reaching a
user through several grants (his own and a group's) is one mount, as in Nextcloud. Like grants,
no foreign key into the tree (docs/architecture.md#no-foreign-keys-between-rooms); ``owner_id``
records whose node it was, so a row never names another user's node that later got the same id.
Deleting the recipient or the owner drops the row. ``id`` orders the rows: when two stored names
collide, the older row keeps its name (``oxidav.authz.grants.mount_names``).
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base


class MountName(Base):
    """The name one recipient sees one shared node under."""

    __tablename__ = "mount_names"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    node_id: Mapped[int] = mapped_column(Integer)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: NFC-normalized, a valid tree name.
    name: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        # One name per recipient and node; also serves "the rows of this recipient".
        Index("uq_mount_names_user_node", "user_id", "node_id", unique=True),
        # Deleting an owner drops the names of their nodes.
        Index("ix_mount_names_owner_id", "owner_id"),
    )
