"""``AddressbooksProvider``: CardDAV (RFC 6352) at ``/remote.php/dav/addressbooks/``.

URL layout below the mount point (docs/architecture.md#urls)::

    /                                   the address-book root
    /users/                             lists the authenticated user only
    /users/<user>/                      address-book home (RFC 6352 §7.1.1)
    /users/<user>/<book>/               address book (RFC 6352 §5.2)
    /users/<user>/<book>/<card>         address object resource (RFC 6352 §5.1)

Another user's paths answer 404 (the authz middleware says so first; the provider checks again
so that it is safe when embedded without it). Address books others shared with the user appear
in their home as ``<uri>_shared_by_<owner>`` (``AddressBookHome.shared_book``); every write into
one is authorized first (``addressbook_writes.authorize_write``). PUT and DELETE of cards and
MKCOL of books are handled by ``addressbook_writes``; the REPORTs live in ``contacts_reports``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from wsgidav.dav_error import HTTP_FORBIDDEN, HTTP_NOT_FOUND, DAVError

from oxidav.contacts import BookInfo
from oxidav.contacts.store import DEFAULT_BOOK_URI
from oxidav.db import Database
from oxidav.environ import ENVIRON_BOOKS
from oxidav.providers.carddav import writes as addressbook_writes
from oxidav.providers.carddav.context import CardDavPath, ContactsBackend
from oxidav.providers.carddav.resources import (
    AddressBookCollection,
    AddressBookHome,
    CardDavCollection,
    CardResource,
    VirtualCollection,
)
from oxidav.providers.dav.provider import CollectionProvider
from oxidav.settings import Settings


class AddressbooksProvider(CollectionProvider[ContactsBackend, BookInfo]):
    """Serves every user's address books from the database (``oxidav.contacts``)."""

    cache_key = ENVIRON_BOOKS
    default_uri = DEFAULT_BOOK_URI

    def __init__(self, db: Database, settings: Settings) -> None:
        super().__init__(ContactsBackend(db, settings))

    def get_resource_inst(
        self, path: str, environ: dict[str, Any]
    ) -> CardDavCollection | CardResource | None:
        target = CardDavPath.parse(path)
        authenticated = self.authenticated(environ)
        if target.kind == "root":
            return VirtualCollection("/", environ, self.backend, authenticated, ["users"])
        if target.kind == "users":
            members = [authenticated] if authenticated else []
            return VirtualCollection("/users/", environ, self.backend, authenticated, members)
        if target.kind == "invalid" or not self.visible(environ, target.user):
            return None
        home = self._home(environ, target)
        if home is None or target.kind == "home":
            return home
        book = self._collection(environ, home, target)
        if book is None or target.kind == "book":
            return book
        return book.get_member(target.card)

    def _home(self, environ: dict[str, Any], target: CardDavPath) -> AddressBookHome | None:
        user_id = self.backend.user_id(target.user)
        if user_id is None:
            return None
        self.backend.prepare_home(user_id)
        return AddressBookHome(
            f"/users/{target.user}/", environ, self.backend, target.user, user_id
        )

    def _collection(
        self, environ: dict[str, Any], home: AddressBookHome, target: CardDavPath
    ) -> AddressBookCollection | None:
        book = self.cached_collection(environ, home.user_id, target.book)
        if book is None:
            return home.shared_member(target.book)
        return AddressBookCollection(target.book_path, environ, self.backend, target.user, book)

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        target = CardDavPath.parse(environ["PATH_INFO"])
        if method in ("PUT", "DELETE") and target.kind == "card":
            if not self.visible(environ, target.user):
                raise DAVError(HTTP_NOT_FOUND)
            home = self._home(environ, target)
            book = None if home is None else self._collection(environ, home, target)
            addressbook_writes.authorize_write(environ, book, target.card)
            if method == "PUT":
                return addressbook_writes.put_object(environ, start_response, book, target.card)
            return addressbook_writes.delete_object(environ, start_response, book, target.card)
        if method in ("COPY", "MOVE") and target.kind == "card":
            return self._copy_or_move(environ, start_response, target, method == "MOVE")
        if method == "MKCOL" and target.kind == "book" and self.visible(environ, target.user):
            home = self._home(environ, target)
            exists = home is not None and self._collection(environ, home, target) is not None
            return addressbook_writes.mkcol_book(environ, start_response, home, target.book, exists)
        return default_handler(environ, start_response)  # type: ignore[no-any-return]

    def _copy_or_move(
        self, environ: dict[str, Any], start_response: Any, source: CardDavPath, move: bool
    ) -> Iterable[bytes]:
        """COPY / MOVE of a card; the Destination must be a card URL of the same user."""
        if not self.visible(environ, source.user):
            raise DAVError(HTTP_NOT_FOUND)
        destination = unquote(urlsplit(environ.get("HTTP_DESTINATION", "")).path)
        share = str(self.share_path or "").rstrip("/")  # a Destination is base_path-free
        target = CardDavPath.parse(destination[len(share) :])
        if not destination.startswith(share + "/") or target.kind != "card":
            raise DAVError(HTTP_FORBIDDEN, "the Destination must be a card in an address book")
        if target.user != source.user:
            raise DAVError(HTTP_FORBIDDEN, "cards move only between one user's address books")
        home = self._home(environ, source)
        if home is None:
            raise DAVError(HTTP_NOT_FOUND)
        book = self._collection(environ, home, source)
        target_book = self._collection(environ, home, target)
        addressbook_writes.authorize_transfer(
            environ, (book, source.card), (target_book, target.card), move
        )
        return addressbook_writes.copy_or_move_card(
            environ, start_response, book, source.card, (target_book, target.card), move
        )
