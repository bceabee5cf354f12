"""The DAV resources of CardDAV (RFC 6352): address-book home, address books, cards.

Every resource is built from rows already loaded (a ``BookInfo``, a ``CardInfo``), so property
reads are O(1) and a PROPFIND Depth 1 of an address book is one query for all its cards. Live
properties are answered by a name -> getter table per class; allprop keeps to RFC 4918's live
properties (RFC 4918 §9.1), propname lists them all.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError, PRECONDITION_CODE_ProtectedProperty
from wsgidav.dav_provider import DAVCollection, DAVNonCollection

from oxidav.contacts import (
    AddressDataRequest,
    BookExistsError,
    BookInfo,
    CardInfo,
    ContactsError,
    StoredCard,
    negotiate_accept,
    render,
)
from oxidav.providers.contacts_context import (
    ADDRESS_DATA,
    ADDRESSBOOK,
    ADDRESSBOOK_DESCRIPTION,
    CARD_CONTENT_TYPE,
    CURRENT_USER_PRINCIPAL,
    CURRENT_USER_PRIVILEGE_SET,
    DISPLAYNAME,
    GETCTAG,
    GETETAG,
    MAX_RESOURCE_SIZE,
    OWNER,
    RESOURCETYPE,
    SUPPORTED_ADDRESS_DATA,
    SUPPORTED_REPORT_SET,
    SYNC_TOKEN,
    ContactsBackend,
    dav_error,
    href_element,
    privilege_set,
    supported_address_data,
)
from oxidav.providers.contacts_props import PropRequest, address_data_element
from oxidav.providers.request_server import supported_reports
from oxidav.providers.urls import principal_href
from oxidav.sync import ChangeSet

Getter = Callable[[], Any]


class _Properties:
    """Mixin: live properties from a ``{name: getter}`` table, before WsgiDAV's own."""

    environ: dict[str, Any]
    owner_name: str

    def live_properties(self) -> dict[str, Getter]:
        return {
            CURRENT_USER_PRINCIPAL: self._current_user_principal,
            CURRENT_USER_PRIVILEGE_SET: privilege_set,
            OWNER: lambda: href_element(OWNER, principal_href(self.owner_name)),
            SUPPORTED_REPORT_SET: self._supported_report_set,
        }

    def prevent_locking(self) -> bool:
        """No LOCK on address books or cards: CardDAV clients synchronise with entity tags
        (If-Match), and the card writes here do not consult locks."""
        return True

    def _current_user_principal(self) -> etree._Element:
        user = self.environ.get("wsgidav.auth.user_name") or self.owner_name
        return href_element(CURRENT_USER_PRINCIPAL, principal_href(user))

    def _supported_report_set(self) -> etree._Element:
        element = etree.Element(SUPPORTED_REPORT_SET)
        for name in supported_reports(self):
            report = etree.SubElement(
                etree.SubElement(element, "{DAV:}supported-report"), "{DAV:}report"
            )
            etree.SubElement(report, name)
        return element


class CardDavCollection(_Properties, DAVCollection):  # type: ignore[misc]
    """Base of the CardDAV collections: the owner and the backend, read-only by default."""

    def __init__(
        self, path: str, environ: dict[str, Any], backend: ContactsBackend, owner_name: str
    ) -> None:
        super().__init__(path, environ)
        self.backend = backend
        self.owner_name = owner_name

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        if is_allprop:
            return names
        return names + [name for name in self.live_properties() if name not in names]

    def get_property_value(self, name: str) -> Any:
        getter = self.live_properties().get(name)
        if getter is not None:
            return getter()
        return super().get_property_value(name)

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)

    def handle_delete(self) -> bool:
        """Homes and the collections above them cannot be deleted (books can)."""
        raise DAVError(HTTP_FORBIDDEN, "this collection cannot be deleted")


class VirtualCollection(CardDavCollection):
    """``/`` and ``/users/``: lead to the authenticated user's home, nothing else."""

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: ContactsBackend,
        owner_name: str,
        members: list[str],
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self._members = members

    def get_member_names(self) -> list[str]:
        return list(self._members)


class AddressBookHome(CardDavCollection):
    """``/users/<user>/``: the address-book home (RFC 6352 §7.1.1); a ``contacts`` book is
    created on first use (DESIGN §4)."""

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: ContactsBackend,
        owner_name: str,
        user_id: int,
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self.user_id = user_id

    def books(self) -> list[BookInfo]:
        return self.backend.store.ensure_default_book(self.user_id)

    def get_member_names(self) -> list[str]:
        return [book.uri for book in self.books()]

    def get_member_list(self) -> list[AddressBookCollection]:
        return [
            AddressBookCollection(
                f"{self.path.rstrip('/')}/{book.uri}/",
                self.environ,
                self.backend,
                self.owner_name,
                book,
            )
            for book in self.books()
        ]

    def create_collection(self, name: str) -> None:
        """A plain MKCOL in the home creates an address book (RFC 5689 MKCOL is preferred)."""
        try:
            self.backend.store.create_book(self.user_id, name)
        except BookExistsError as exc:
            raise dav_error(exc) from None


class AddressBookCollection(CardDavCollection):
    """``/users/<user>/<book>/``: an address book collection (RFC 6352 §5.2)."""

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: ContactsBackend,
        owner_name: str,
        book: BookInfo,
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self.book = book
        self._token: str | None = None

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        props.update(
            {
                RESOURCETYPE: self._resourcetype,
                ADDRESSBOOK_DESCRIPTION: lambda: self.book.description,
                GETCTAG: self.sync_token,
                SYNC_TOKEN: self.sync_token,
                SUPPORTED_ADDRESS_DATA: supported_address_data,
                MAX_RESOURCE_SIZE: lambda: str(self.backend.settings.max_resource_bytes),
            }
        )
        return props

    def _resourcetype(self) -> etree._Element:
        element = etree.Element(RESOURCETYPE)
        etree.SubElement(element, "{DAV:}collection")
        etree.SubElement(element, ADDRESSBOOK)
        return element

    def sync_token(self) -> str:
        """The DAV:sync-token (RFC 6578 §4), also the CS:getctag: it changes with every card."""
        if self._token is None:
            self._token = self.backend.store.sync_token(self.book.id)
        return self._token

    def get_display_name(self) -> str:
        return self.book.displayname or self.book.uri

    def get_creation_date(self) -> float:
        return self.book.created_at.timestamp()

    def card_href(self, name: str) -> str:
        return str(self.get_href()) + _quote_segment(name)

    def card_resource(self, card: CardInfo) -> CardResource:
        return CardResource(f"{self.path.rstrip('/')}/{card.name}", self.environ, self, card)

    def get_member_names(self) -> list[str]:
        return [card.name for card in self.backend.store.cards(self.book.id)]

    def get_member_list(self) -> list[CardResource]:
        return [self.card_resource(card) for card in self.backend.store.cards(self.book.id)]

    def get_member(self, name: str) -> CardResource | None:
        card = self.backend.store.card(self.book.id, name)
        return None if card is None else self.card_resource(card)

    # --- SyncCollection (oxidav.providers.sync_report) -------------------------------------

    def sync_changes(self, token: str | None, limit: int | None) -> ChangeSet:
        return self.backend.store.changes_since(self.book.id, token, limit)

    def sync_member_href(self, name: str) -> str:
        return self.card_href(name)

    def sync_member_responses(
        self, names: Sequence[str], prop: etree._Element | None
    ) -> dict[str, list[tuple[str, Any]]]:
        request = PropRequest(prop)
        cards = self.backend.store.cards_by_name(self.book.id, names)
        return {name: request.properties(self.card_resource(card)) for name, card in cards.items()}

    def handle_delete(self) -> bool:
        """DELETE of the address book: its cards and change log go with it."""
        try:
            self.backend.store.delete_book(self.book.id)
        except ContactsError as exc:
            raise dav_error(exc) from None
        return True

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        """PROPPATCH of DAV:displayname and CARDDAV:addressbook-description (RFC 6352
        §6.2.1); everything else is protected."""
        if name not in (DISPLAYNAME, ADDRESSBOOK_DESCRIPTION):
            raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)
        text = "" if value is None else "".join(value.itertext())
        if len(text) > (255 if name == DISPLAYNAME else 10_000):
            raise DAVError(HTTP_FORBIDDEN, f"{name} is too long")
        if dry_run:
            return
        if name == DISPLAYNAME:
            self.book = self.backend.store.update_book(self.book.id, displayname=text)
        else:
            self.book = self.backend.store.update_book(self.book.id, description=text)


class CardResource(_Properties, DAVNonCollection):  # type: ignore[misc]
    """One address object resource (RFC 6352 §5.1). GET and HEAD honour ``Accept`` with a
    vCard ``version`` (3.0 or 4.0); everything else serves the stored text unchanged."""

    def __init__(
        self, path: str, environ: dict[str, Any], book: AddressBookCollection, card: CardInfo
    ) -> None:
        super().__init__(path, environ)
        self.book = book
        self.card = card
        self.owner_name = book.owner_name
        self._text = card.text if isinstance(card, StoredCard) else None
        self._body: bytes | None = None

    def text(self) -> str:
        if self._text is None:
            stored = self.book.backend.store.card(self.book.book.id, self.card.name)
            if stored is None:
                raise DAVError(404)
            self._text = stored.text
        return self._text

    def render(self, request: AddressDataRequest) -> str:
        body, _ = render(self.text(), self.card.version, request)
        return body

    def _negotiated_body(self) -> bytes:
        if self._body is None:
            version = negotiate_accept(self.environ.get("HTTP_ACCEPT"))
            self._body = self.render(AddressDataRequest(version=version)).encode("utf-8")
        return self._body

    def _is_read(self) -> bool:
        return self.environ.get("REQUEST_METHOD") in ("GET", "HEAD")

    def get_content_length(self) -> int:
        return len(self._negotiated_body()) if self._is_read() else self.card.size

    def get_content_type(self) -> str:
        return CARD_CONTENT_TYPE

    def get_content(self) -> io.BytesIO:
        return io.BytesIO(self._negotiated_body())

    def get_etag(self) -> str:
        return self.card.etag

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return False

    def get_last_modified(self) -> float:
        return self.card.modified_at.timestamp()

    def get_display_name(self) -> str:
        return str(self.name)

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        return names if is_allprop else [*names, CURRENT_USER_PRIVILEGE_SET, OWNER]

    def get_property_value(self, name: str) -> Any:
        if name == GETETAG:
            # Quoted, exactly as in the ETag header (WsgiDAV would send it bare).
            return f'"{self.card.etag}"'
        if name == ADDRESS_DATA:
            return address_data_element(self.text())
        getter = self.live_properties().get(name)
        if getter is not None:
            return getter()
        return super().get_property_value(name)

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)

    def finalize_headers(self, environ: dict[str, Any], response_headers: list[Any]) -> None:
        response_headers.append(("Vary", "Accept"))


def _quote_segment(name: str) -> str:
    # The characters WsgiDAV's get_href() leaves unquoted, so both spell an href alike.
    return quote(name, safe="!*'(),$-_|.")
