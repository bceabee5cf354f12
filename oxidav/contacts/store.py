"""Storage of address books and cards: one transaction per change, change log included.

``ContactStore`` is the contacts room's API for the DAV layer, the CLI and tests; it knows
nothing of HTTP. Every write validates first, then in one transaction checks the client's
conditions (``If-Match`` / ``If-None-Match``, evaluated against the row it is about to change,
so two clients cannot both win), enforces ``no-uid-conflict``, writes the card and its index
rows, and logs the change for sync-collection (``oxidav.sync``, kind ``addressbook``).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import blake3
from sqlalchemy import Select, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav import sync
from oxidav.contacts.errors import (
    BookExistsError,
    BookNotFoundError,
    CardNotFoundError,
    PreconditionFailedError,
    UidConflictError,
)
from oxidav.contacts.evaluate import card_matches
from oxidav.contacts.filters import Filter
from oxidav.contacts.index import index_entries
from oxidav.contacts.prefilter import (
    Shape,
    parameter_count,
    prefilter,
    prefilter_condition,
)
from oxidav.contacts.validate import ParsedCard, parse_card
from oxidav.contacts.vcard import VCardSyntaxError, parse_vcards
from oxidav.db import Database, utcnow
from oxidav.db.models.contacts import AddressBook, Card, CardIndex
from oxidav.db.models.users import User
from oxidav.db.prepared import PreparedRead

SYNC_KIND = "addressbook"
DEFAULT_BOOK_URI = "contacts"
DEFAULT_BOOK_NAME = "Contacts"
QUERY_BATCH = 256


@dataclass(frozen=True)
class BookInfo:
    id: int
    user_id: int
    uri: str
    displayname: str
    description: str
    created_at: datetime


@dataclass(frozen=True)
class CardInfo:
    """A card's metadata; ``etag`` is the unquoted strong entity tag."""

    name: str
    etag: str
    size: int
    uid: str
    version: str
    modified_at: datetime


@dataclass(frozen=True)
class StoredCard(CardInfo):
    text: str


@dataclass(frozen=True)
class Conditions:
    """A request's ``If-Match`` / ``If-None-Match`` (RFC 9110 §13.1.1, §13.1.2): unquoted entity
    tags, or ``"*"``. None: header absent."""

    if_match: tuple[str, ...] | None = None
    if_none_match: tuple[str, ...] | None = None

    def check(self, current_etag: str | None) -> None:
        """Raise ``PreconditionFailedError`` unless the conditions hold for a target whose
        entity tag is ``current_etag`` (None: the target does not exist)."""
        if self.if_match is not None and (
            current_etag is None or ("*" not in self.if_match and current_etag not in self.if_match)
        ):
            raise PreconditionFailedError("If-Match does not match the current entity tag")
        if (
            self.if_none_match is not None
            and current_etag is not None
            and ("*" in self.if_none_match or current_etag in self.if_none_match)
        ):
            raise PreconditionFailedError("If-None-Match matches the current entity tag")


@dataclass(frozen=True)
class PutResult:
    etag: str
    created: bool


@dataclass(frozen=True)
class QueryResult:
    cards: list[StoredCard]
    #: True when ``limit`` cut the result short (RFC 6352 §8.6.1: 507 for the rest).
    truncated: bool


def card_etag(text: str) -> str:
    """The strong entity tag of a card: BLAKE3 of its UTF-8 text (stable across processes)."""
    return blake3.blake3(text.encode("utf-8")).hexdigest()[:32]


def _book(row: AddressBook) -> BookInfo:
    return BookInfo(row.id, row.user_id, row.uri, row.displayname, row.description, row.created_at)


_BOOK_AT = PreparedRead(
    select(
        AddressBook.id,
        AddressBook.user_id,
        AddressBook.uri,
        AddressBook.displayname,
        AddressBook.description,
        AddressBook.created_at,
    ).where(AddressBook.user_id == bindparam("user_id"), AddressBook.uri == bindparam("uri"))
)

_INFO_COLUMNS = (Card.name, Card.etag, Card.size, Card.uid, Card.version, Card.modified_at)

#: Cards read at a time by ``ContactStore.every_card_info``.
INFO_PAGE = 500
_INFO_PAGE = PreparedRead(
    select(*_INFO_COLUMNS)
    .where(Card.addressbook_id == bindparam("book"), Card.name > bindparam("after"))
    .order_by(Card.name)
    .limit(INFO_PAGE)
)


class ContactStore:
    """Address books and cards in the database. ``max_resource_bytes`` bounds a card
    (``Settings.max_resource_bytes``)."""

    def __init__(self, db: Database, max_resource_bytes: int = 10 << 20) -> None:
        self.db = db
        self.max_resource_bytes = max_resource_bytes

    # --- address books ---------------------------------------------------------------------

    def collections(self, user_id: int) -> list[BookInfo]:
        with self.db.read() as session:
            rows = session.execute(
                select(AddressBook).where(AddressBook.user_id == user_id).order_by(AddressBook.uri)
            ).scalars()
            return [_book(row) for row in rows]

    def collection(self, user_id: int, uri: str) -> BookInfo | None:
        """The address book ``uri`` of the user (every CardDAV request below it asks: one
        prepared single read, no session)."""
        row = _BOOK_AT.first(self.db, {"user_id": user_id, "uri": uri})
        return None if row is None else BookInfo(*row)

    def collections_with_owners(self, ids: Iterable[int]) -> list[tuple[BookInfo, str]]:
        """The address books with these ids and their owners' user names, by id (one query;
        ids that name no book are left out). Lists the books shared with someone."""
        wanted = sorted(set(ids))
        if not wanted:
            return []
        with self.db.read() as session:
            rows = session.execute(
                select(AddressBook, User.username)
                .join(User, User.id == AddressBook.user_id)
                .where(AddressBook.id.in_(wanted))
                .order_by(AddressBook.id)
            ).all()
            return [(_book(row), str(username)) for row, username in rows]

    def ensure_default(self, user_id: int) -> list[BookInfo]:
        """The user's books, creating ``contacts`` first if the user has none
        (docs/architecture.md#urls)."""
        books = self.collections(user_id)
        if books:
            return books
        with contextlib.suppress(BookExistsError):  # created by a concurrent request
            self.create_collection(user_id, DEFAULT_BOOK_URI, DEFAULT_BOOK_NAME)
        return self.collections(user_id)

    def create_collection(
        self, user_id: int, uri: str, displayname: str = "", description: str = ""
    ) -> BookInfo:
        """Create an address book (RFC 6352 §6.3.1); ``BookExistsError`` if ``uri`` is taken."""
        try:
            with self.db.write() as session:
                row = AddressBook(
                    user_id=user_id, uri=uri, displayname=displayname, description=description
                )
                session.add(row)
                session.flush()
                sync.init_collection(session, SYNC_KIND, row.id)
                return _book(row)
        except IntegrityError:
            raise BookExistsError(f"address book {uri!r} already exists") from None

    def update_collection(
        self, book_id: int, *, displayname: str | None = None, description: str | None = None
    ) -> BookInfo:
        """Change the DAV:displayname / CARDDAV:addressbook-description (PROPPATCH)."""
        with self.db.write() as session:
            row = session.get(AddressBook, book_id)
            if row is None:
                raise BookNotFoundError(f"no address book {book_id}")
            if displayname is not None:
                row.displayname = displayname
            if description is not None:
                row.description = description
            session.flush()
            return _book(row)

    def delete_collection(self, book_id: int) -> None:
        """Delete an address book with all its cards and its change log."""
        with self.db.write() as session:
            session.execute(delete(CardIndex).where(CardIndex.addressbook_id == book_id))
            session.execute(delete(Card).where(Card.addressbook_id == book_id))
            deleted = session.execute(delete(AddressBook).where(AddressBook.id == book_id))
            if deleted.rowcount == 0:  # type: ignore[attr-defined]
                raise BookNotFoundError(f"no address book {book_id}")
            sync.drop_collection(session, SYNC_KIND, book_id)

    def sync_token(self, book_id: int) -> str:
        """DAV:sync-token (RFC 6578 §4), also served as the CS:getctag."""
        with self.db.read() as session:
            return sync.current_token(session, SYNC_KIND, book_id)

    def changes_since(
        self, book_id: int, token: str | None, limit: int | None = None
    ) -> sync.ChangeSet:
        """What changed after ``token``; raises ``sync.InvalidSyncToken``."""
        with self.db.read() as session:
            return sync.changes_since(session, SYNC_KIND, book_id, token, limit)

    # --- cards -----------------------------------------------------------------------------

    def objects(self, book_id: int) -> list[CardInfo]:
        """Metadata of every card, by name (one query; a PROPFIND Depth 1 page)."""
        with self.db.read() as session:
            rows = session.execute(
                select(*_INFO_COLUMNS).where(Card.addressbook_id == book_id).order_by(Card.name)
            )
            return [CardInfo(*row) for row in rows]

    def every_card_info(self, book_id: int) -> Iterator[list[CardInfo]]:
        """Every card's metadata (no vCard), by name, ``INFO_PAGE`` at a time (a first sync;
        each page is its own snapshot)."""
        for rows in _INFO_PAGE.pages(self.db, {"book": book_id}, INFO_PAGE):
            yield [CardInfo(*row) for row in rows]

    def object_count(self, book_id: int) -> int:
        with self.db.read() as session:
            count = session.execute(
                select(func.count()).select_from(Card).where(Card.addressbook_id == book_id)
            ).scalar_one()
            return int(count)

    def object(self, book_id: int, name: str) -> StoredCard | None:
        found = self.objects_named(book_id, [name])
        return found.get(name)

    def objects_named(self, book_id: int, names: Iterable[str]) -> dict[str, StoredCard]:
        """The named cards that exist (addressbook-multiget), in batches of one query each."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, StoredCard] = {}
        with self.db.read() as session:
            for start in range(0, len(wanted), QUERY_BATCH):
                batch = wanted[start : start + QUERY_BATCH]
                rows = session.execute(
                    select(*_INFO_COLUMNS, Card.vcard).where(
                        Card.addressbook_id == book_id, Card.name.in_(batch)
                    )
                )
                for row in rows:
                    found[row.name] = StoredCard(*row)
        return found

    def put_object(
        self,
        book_id: int,
        name: str,
        data: bytes | str | ParsedCard,
        conditions: Conditions | None = None,
    ) -> PutResult:
        """Create or replace card ``name`` (RFC 6352 §6.3.2).

        Raises ``InvalidCardError`` / ``UnsupportedCardError`` / ``CardTooLargeError`` for a
        bad body, ``PreconditionFailedError`` when ``conditions`` fail, ``UidConflictError``
        when another card of the book has the same UID.
        """
        parsed = data if isinstance(data, ParsedCard) else parse_card(data, self.max_resource_bytes)
        etag = card_etag(parsed.text)
        try:
            with self.db.write() as session:
                created = self._write_card(session, book_id, name, parsed, etag, conditions)
        except IntegrityError:
            # A concurrent writer won a unique constraint (name or UID) between our checks
            # and our insert; report it as the precondition that the winner now violates.
            other = self._name_of_uid(book_id, parsed.uid)
            if other is not None and other != name:
                raise UidConflictError(f"UID {parsed.uid!r} is already used", other) from None
            raise PreconditionFailedError("the card was changed concurrently") from None
        return PutResult(etag=etag, created=created)

    def _write_card(
        self,
        session: Session,
        book_id: int,
        name: str,
        parsed: ParsedCard,
        etag: str,
        conditions: Conditions | None,
    ) -> bool:
        existing = session.execute(
            select(Card.id, Card.etag)
            .where(Card.addressbook_id == book_id, Card.name == name)
            .with_for_update()
        ).one_or_none()
        if conditions is not None:
            conditions.check(None if existing is None else existing.etag)
        other = session.execute(
            select(Card.name).where(
                Card.addressbook_id == book_id, Card.uid == parsed.uid, Card.name != name
            )
        ).scalar_one_or_none()
        if other is not None:
            raise UidConflictError(f"UID {parsed.uid!r} is already used by {other!r}", other)
        values = {
            "uid": parsed.uid,
            "version": parsed.version,
            "vcard": parsed.text,
            "etag": etag,
            "size": len(parsed.text.encode("utf-8")),
            "modified_at": utcnow(),
        }
        if existing is None:
            card_id = session.execute(
                insert(Card).values(addressbook_id=book_id, name=name, **values).returning(Card.id)
            ).scalar_one()
        else:
            card_id = existing.id
            session.execute(update(Card).where(Card.id == card_id).values(**values))
            session.execute(delete(CardIndex).where(CardIndex.card_id == card_id))
        entries = index_entries(parsed.card)
        if entries:
            session.execute(
                insert(CardIndex),
                [
                    {"card_id": card_id, "addressbook_id": book_id, "prop": prop, "value": value}
                    for prop, value in entries
                ],
            )
        sync.record_change(
            session, SYNC_KIND, book_id, name, "added" if existing is None else "modified"
        )
        return existing is None

    def _name_of_uid(self, book_id: int, uid: str) -> str | None:
        with self.db.read() as session:
            name = session.execute(
                select(Card.name).where(Card.addressbook_id == book_id, Card.uid == uid)
            ).scalar_one_or_none()
            return None if name is None else str(name)

    def delete_object(self, book_id: int, name: str, conditions: Conditions | None = None) -> bool:
        """Delete card ``name``; False if there is none (``conditions`` are checked first, so
        ``If-Match`` on a missing card raises ``PreconditionFailedError``)."""
        with self.db.write() as session:
            existing = session.execute(
                select(Card.id, Card.etag)
                .where(Card.addressbook_id == book_id, Card.name == name)
                .with_for_update()
            ).one_or_none()
            if conditions is not None:
                conditions.check(None if existing is None else existing.etag)
            if existing is None:
                return False
            self._remove(session, book_id, name)
            return True

    def copy_object(
        self,
        source: tuple[int, str],
        target: tuple[int, str],
        *,
        move: bool,
        overwrite: bool = True,
    ) -> PutResult:
        """COPY or MOVE a card (RFC 4918 §9.8, §9.9; RFC 6352 §6.3.2) in one transaction.

        ``source`` and ``target`` are (book id, card name). The target gets the same
        preconditions as a PUT (``no-uid-conflict`` in its book); ``overwrite=False`` makes an
        existing target a ``PreconditionFailedError`` (``Overwrite: F``). Raises
        ``CardNotFoundError`` when there is no source card.
        """
        if source == target:
            raise PreconditionFailedError("source and destination are the same card")
        try:
            with self.db.write() as session:
                row = session.execute(
                    select(Card.vcard)
                    .where(Card.addressbook_id == source[0], Card.name == source[1])
                    .with_for_update()
                ).scalar_one_or_none()
                if row is None:
                    raise CardNotFoundError(f"no card {source[1]!r}")
                parsed = parse_card(row, max(self.max_resource_bytes, len(row.encode())))
                if move:
                    # Gone first, so a MOVE inside one book does not conflict with itself.
                    self._remove(session, source[0], source[1])
                conditions = None if overwrite else Conditions(if_none_match=("*",))
                etag = card_etag(parsed.text)
                created = self._write_card(session, *target, parsed, etag, conditions)
        except IntegrityError:
            raise PreconditionFailedError("the card was changed concurrently") from None
        return PutResult(etag=etag, created=created)

    def _remove(self, session: Session, book_id: int, name: str) -> None:
        card_id = session.execute(
            select(Card.id).where(Card.addressbook_id == book_id, Card.name == name)
        ).scalar_one()
        session.execute(delete(CardIndex).where(CardIndex.card_id == card_id))
        session.execute(delete(Card).where(Card.id == card_id))
        sync.record_change(session, SYNC_KIND, book_id, name, "removed")

    # --- addressbook-query -----------------------------------------------------------------

    def query(self, book_id: int, flt: Filter, limit: int | None = None) -> QueryResult:
        """The cards matching ``flt`` (RFC 6352 §8.6), by name, at most ``limit``.

        Candidates come from the SQL pre-filter (``prefilter``); each is parsed and checked
        exactly (``evaluate``). Candidates are read in pages of ``QUERY_BATCH`` by name, so
        memory holds the matches, not the book.
        """
        matches: list[StoredCard] = []
        for row in self._candidates(book_id, flt):
            if _row_matches(row[-1], flt):
                if limit is not None and len(matches) >= limit:
                    return QueryResult(matches, truncated=True)
                matches.append(StoredCard(*row))
        return QueryResult(matches, truncated=False)

    def _candidates(self, book_id: int, flt: Filter) -> Iterator[tuple[Any, ...]]:
        """The rows (info columns, then the vCard) that pass the pre-filter, by name: one
        prepared read per page (each page is its own consistent snapshot)."""
        found = prefilter(flt)
        read = _CANDIDATES.read(found.shape if found is not None else None)
        params: dict[str, object] = {"book": book_id, **(found.params if found else {})}
        for rows in read.pages(self.db, params, QUERY_BATCH):
            yield from rows


class _CandidateReads:
    """One ``PreparedRead`` per pre-filter shape (None: no pre-filter), compiled on first use.
    At most ``KEPT`` shapes are kept, the least recently used leaving first; a shape of more
    than ``LARGEST_KEPT`` parameters (a filter of many text-matches) is built for its one use."""

    KEPT = 64
    LARGEST_KEPT = 32

    def __init__(self) -> None:
        self._reads: OrderedDict[Shape | None, PreparedRead] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, shape: Shape | None) -> PreparedRead:
        with self._lock:
            found = self._reads.get(shape)
            if found is not None:
                self._reads.move_to_end(shape)
                return found
        made = PreparedRead(_candidates_statement(shape))
        if shape is None or parameter_count(shape) <= self.LARGEST_KEPT:
            with self._lock:
                self._reads[shape] = made
                while len(self._reads) > self.KEPT:
                    self._reads.popitem(last=False)
        return made


def _candidates_statement(shape: Shape | None) -> Select[*tuple[Any, ...]]:
    statement = select(*_INFO_COLUMNS, Card.vcard).where(
        Card.addressbook_id == bindparam("book"), Card.name > bindparam("after")
    )
    if shape is not None:
        statement = statement.where(prefilter_condition(shape))
    return statement.order_by(Card.name).limit(QUERY_BATCH)


_CANDIDATES = _CandidateReads()


def _row_matches(text: str, flt: Filter) -> bool:
    if not flt.prop_filters:
        return True
    try:
        cards = parse_vcards(text)
    except VCardSyntaxError:
        return False  # stored cards were validated; an unreadable one matches nothing
    return bool(cards) and card_matches(cards[0], flt)
