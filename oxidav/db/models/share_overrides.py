"""The table of a recipient's own values for a shared calendar's or address book's personal
properties (its name, colour and order in their clients), as Nextcloud keeps them per sharee.

``share_overrides``: user ``user_id`` sees the property ``name`` (Clark notation) of the shared
collection ``(resource_kind, resource_id)`` as the XML element ``value``; the owner and other
recipients keep theirs. Like grants, no foreign key into the rooms' tables
(docs/architecture.md#no-foreign-keys-between-rooms: no cross-room foreign keys); the providers drop
the rows with the collection or the share. Deleting the user drops theirs.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base


class ShareOverride(Base):
    """One property value one recipient set on a collection shared with them."""

    __tablename__ = "share_overrides"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    #: ``calendar`` or ``addressbook`` (``ResourceKind`` values).
    resource_kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    resource_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    #: The property element as XML text.
    value: Mapped[str] = mapped_column(Text)
