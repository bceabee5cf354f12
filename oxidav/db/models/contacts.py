"""Tables of the contacts room: address books, cards and the card index (RFC 6352).

A card keeps its raw vCard text as received plus the columns every request needs without
parsing it (etag, UID, size). ``card_index`` holds one row per indexed property instance
(FN, N, EMAIL, TEL, ORG, UID, NICKNAME) with its folded match value, so an addressbook-query
text-match is pre-filtered in SQL and only the candidates are parsed.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, utcnow


class AddressBook(Base):
    """An address book collection (RFC 6352 §5.2) of one user, named by its URI segment."""

    __tablename__ = "addressbooks"
    __table_args__ = (UniqueConstraint("user_id", "uri", name="uq_addressbooks_user_id_uri"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    uri: Mapped[str] = mapped_column(String(255))
    displayname: Mapped[str] = mapped_column(String(255), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Card(Base):
    """An address object resource (RFC 6352 §5.1): one vCard, stored as received."""

    __tablename__ = "cards"
    __table_args__ = (
        UniqueConstraint("addressbook_id", "name", name="uq_cards_addressbook_id_name"),
        UniqueConstraint("addressbook_id", "uid", name="uq_cards_addressbook_id_uid"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    addressbook_id: Mapped[int] = mapped_column(ForeignKey("addressbooks.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    uid: Mapped[str] = mapped_column(String(512))
    version: Mapped[str] = mapped_column(String(8))
    vcard: Mapped[str] = mapped_column(Text)
    etag: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CardIndex(Base):
    """One indexed property instance of a card: ``value`` is its ``i;unicode-casemap`` key
    (``oxidav.collation.fold``). ``addressbook_id`` is repeated so that a query
    scans the rows of one book and one property through the (book, prop) index.

    On SQLite that index is a covering one (book, prop, value, card): a text-match reads the
    index alone. PostgreSQL does not get it: a B-tree entry there is limited to ~2.7 kB, and an
    index holding ``value`` would refuse a card with a long indexed property."""

    __tablename__ = "card_index"
    __table_args__ = (
        Index("ix_card_index_book_prop", "addressbook_id", "prop").ddl_if(dialect="postgresql"),
        Index("ix_card_index_book_prop_value", "addressbook_id", "prop", "value", "card_id").ddl_if(
            dialect="sqlite"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    card_id: Mapped[int] = mapped_column(ForeignKey("cards.id", ondelete="CASCADE"), index=True)
    addressbook_id: Mapped[int] = mapped_column(ForeignKey("addressbooks.id", ondelete="CASCADE"))
    prop: Mapped[str] = mapped_column(String(32))
    value: Mapped[str] = mapped_column(Text)
