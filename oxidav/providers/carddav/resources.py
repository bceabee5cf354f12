"""The DAV resources of CardDAV (RFC 6352): address-book home, address books, cards.

Every resource is built from rows already loaded (a ``BookInfo``, a ``CardInfo``), so property
reads are O(1) and a PROPFIND Depth 1 of an address book is one query for all its cards. Live
properties are answered by a name -> getter table per class; allprop keeps to RFC 4918's live
properties (RFC 4918 §9.1), propname lists them all.

An address-book home lists the user's own books, then the books others shared with them
(``SharedAddressBook``, named ``<uri>_shared_by_<owner>``; ``dav_shared``); the grants are asked
of ``authz.grants.collections``, one grant-set read for the whole listing and one query for all
the shared books' rows.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError, PRECONDITION_CODE_ProtectedProperty

from oxidav.authz.grants.collections import Reach
from oxidav.authz.grants.resources import Resource, ResourceKind
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
from oxidav.providers.carddav.context import (
    ADDRESS_DATA,
    ADDRESSBOOK,
    ADDRESSBOOK_DESCRIPTION,
    CARD_CONTENT_TYPE,
    MAX_RESOURCE_SIZE,
    SUPPORTED_ADDRESS_DATA,
    ContactsBackend,
    dav_error,
    supported_address_data,
)
from oxidav.providers.carddav.props import PropRequest
from oxidav.providers.dav.collections import (
    Getter,
    ObjectCollection,
    OwnedCollection,
    TextObjectResource,
    row_etag,
)
from oxidav.providers.dav.home import CollectionHome
from oxidav.providers.dav.shared import (
    SharedObjectCollection,
    SharedState,
    forget_shares,
    shared_name,
)
from oxidav.providers.dav.xml import DISPLAYNAME, GETETAG, element_text
from oxidav.sync import ChangeSet
from oxidav.urls import addressbook_home_href


class CardDavCollection(OwnedCollection[ContactsBackend]):
    """Base of the CardDAV collections: the owner and the backend, read-only by default."""

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


class AddressBookHome(
    CollectionHome[ContactsBackend, BookInfo, "AddressBookCollection", "SharedAddressBook"],
    CardDavCollection,
):
    """``/users/<user>/``: the address-book home (RFC 6352 §7.1.1); a ``contacts`` book is
    created on first use."""

    shared_kind = ResourceKind.ADDRESSBOOK

    def own_resource(self, info: BookInfo) -> AddressBookCollection:
        path = f"{self.path.rstrip('/')}/{info.uri}/"
        return AddressBookCollection(path, self.environ, self.backend, self.owner_name, info)

    def shared_resource(self, info: BookInfo, owner: str, reach: Reach) -> SharedAddressBook:
        path = f"{self.path.rstrip('/')}/{shared_name(info.uri, owner)}/"
        mount = self.provider.mount_path
        home = addressbook_home_href(owner, mount)
        state = SharedState(reach, owner, f"{home}{info.uri}/", mount=mount)
        return SharedAddressBook(path, self.environ, self.backend, owner, info, state)

    def create_collection(self, name: str) -> None:
        """A plain MKCOL in the home creates an address book (RFC 5689 MKCOL is preferred)."""
        try:
            self.backend.store.create_collection(self.user_id, name)
        except BookExistsError as exc:
            raise dav_error(exc) from None


class AddressBookCollection(ObjectCollection[ContactsBackend]):
    """``/users/<user>/<book>/``: an address book collection (RFC 6352 §5.2)."""

    info: BookInfo
    kinds: tuple[str, ...] = (ADDRESSBOOK,)

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        props.update(
            {
                ADDRESSBOOK_DESCRIPTION: lambda: self.info.description,
                **self.sync_properties(),
                SUPPORTED_ADDRESS_DATA: supported_address_data,
                MAX_RESOURCE_SIZE: lambda: str(self.backend.settings.max_resource_bytes),
            }
        )
        return props

    def load_sync_token(self) -> str:
        return self.backend.store.sync_token(self.info.id)

    def member_resource(self, row: CardInfo) -> CardResource:
        return CardResource(self.member_path(row.name), self.environ, self, row)

    def load_rows(self) -> list[CardInfo]:
        return self.backend.store.objects(self.info.id)

    def load_row(self, name: str) -> CardInfo | None:
        return self.backend.store.object(self.info.id, name)

    # --- SyncCollection (oxidav.providers.dav.sync_report) -------------------------------------

    def sync_changes(self, token: str | None, limit: int | None) -> ChangeSet:
        return self.backend.store.changes_since(self.info.id, token, limit)

    def sync_member_responses(
        self, names: Sequence[str], prop: etree._Element | None
    ) -> dict[str, list[tuple[str, Any]]]:
        request = PropRequest(prop)
        cards = self.load_members(names)
        return {name: self.member_properties(request, card) for name, card in cards.items()}

    def sync_every_member(self, prop: etree._Element | None) -> Iterator[tuple[str, Any]]:
        request = PropRequest(prop)
        for page in self.backend.store.every_card_info(self.info.id):
            for card in page:
                yield card.name, self.member_properties(request, card)

    # --- MultigetReport (oxidav.providers.dav.reports) ---------------------------------------

    def load_members(self, names: Sequence[str]) -> Mapping[str, CardInfo]:
        return self.backend.store.objects_named(self.info.id, names)

    def member_properties(self, request: PropRequest, card: CardInfo) -> list[tuple[str, Any]]:
        if request.etag_only:
            return [(GETETAG, row_etag(card))]
        return request.properties(self.member_resource(card))

    def handle_delete(self) -> bool:
        """DELETE of the address book: its cards, change log and shares go with it."""
        try:
            resource = Resource.addressbook(self.info.id, self.info.user_id)
            forget_shares(self.backend.shares, resource)
            self.backend.store.delete_collection(self.info.id)
        except ContactsError as exc:
            raise dav_error(exc) from None
        return True

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        """PROPPATCH of DAV:displayname and CARDDAV:addressbook-description (RFC 6352
        §6.2.1); everything else is protected."""
        if name not in (DISPLAYNAME, ADDRESSBOOK_DESCRIPTION):
            raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)
        text = "" if value is None else element_text(value)
        if len(text) > (255 if name == DISPLAYNAME else 10_000):
            raise DAVError(HTTP_FORBIDDEN, f"{name} is too long")
        if dry_run:
            return
        if name == DISPLAYNAME:
            self.info = self.backend.store.update_collection(self.info.id, displayname=text)
        else:
            self.info = self.backend.store.update_collection(self.info.id, description=text)


class SharedAddressBook(SharedObjectCollection[ContactsBackend], AddressBookCollection):
    """Another user's address book in the recipient's home (``<uri>_shared_by_<owner>``):
    the owner's cards, sync token and properties; what the recipient may do follows from
    the grant (``dav_shared.SharedState``)."""

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: ContactsBackend,
        owner_name: str,
        info: BookInfo,
        share: SharedState,
    ) -> None:
        super().__init__(path, environ, backend, owner_name, info)
        self.bind_share(share)


class CardResource(TextObjectResource):
    """One address object resource (RFC 6352 §5.1). GET and HEAD honour ``Accept`` with a
    vCard ``version`` (3.0 or 4.0); everything else serves the stored text unchanged."""

    row: CardInfo
    data_property = ADDRESS_DATA

    def __init__(
        self, path: str, environ: dict[str, Any], book: AddressBookCollection, card: CardInfo
    ) -> None:
        super().__init__(path, environ, book, card)
        self.book = book
        self._text = card.text if isinstance(card, StoredCard) else None
        self._body: bytes | None = None

    def text(self) -> str:
        if self._text is None:
            stored = self.book.backend.store.object(self.book.info.id, self.row.name)
            if stored is None:
                raise DAVError(404)
            self._text = stored.text
        return self._text

    def render(self, request: AddressDataRequest) -> str:
        body, _ = render(self.text(), self.row.version, request)
        return body

    def _negotiated_body(self) -> bytes:
        if self._body is None:
            version = negotiate_accept(self.environ.get("HTTP_ACCEPT"))
            self._body = self.render(AddressDataRequest(version=version)).encode("utf-8")
        return self._body

    def _is_read(self) -> bool:
        return self.environ.get("REQUEST_METHOD") in ("GET", "HEAD")

    def get_content_length(self) -> int:
        return len(self._negotiated_body()) if self._is_read() else self.row.size

    def get_content_type(self) -> str:
        return CARD_CONTENT_TYPE

    def get_content(self) -> io.BytesIO:
        return io.BytesIO(self._negotiated_body())

    def finalize_headers(self, environ: dict[str, Any], response_headers: list[Any]) -> None:
        response_headers.append(("Vary", "Accept"))
