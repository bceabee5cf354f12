"""The CardDAV writes oxidav handles itself: PUT and DELETE of a card, extended MKCOL.

The request plumbing is ``dav_writes``'s (WsgiDAV's MKCOL also refuses a body, 415, so the
extended MKCOL is here too). The conditions are checked in the same transaction as the write
(``ContactStore``), and every refusal carries its RFC 6352 precondition. A write into an
address book shared with the user is authorized first (``authorize_write``,
``authorize_transfer``): the grant decides, through ``oxidav.authz.grants.collections``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lxml import etree
from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CONFLICT,
    HTTP_CREATED,
    HTTP_FORBIDDEN,
    HTTP_METHOD_NOT_ALLOWED,
    HTTP_NO_CONTENT,
    HTTP_NOT_FOUND,
    DAVError,
)

from oxidav.authz.grants.roles import Action
from oxidav.contacts import (
    BookExistsError,
    CardTooLargeError,
    Conditions,
    ContactsError,
    InvalidCardError,
    UnsupportedCardError,
)
from oxidav.providers.carddav.context import ADDRESSBOOK, ADDRESSBOOK_DESCRIPTION, dav_error
from oxidav.providers.carddav.resources import (
    AddressBookCollection,
    AddressBookHome,
    SharedAddressBook,
)
from oxidav.providers.dav.writes import (
    MAX_OBJECT_NAME,
    StartResponse,
    check_put,
    entity_tags,
    media_type,
    read_body,
)
from oxidav.providers.dav.xml import DISPLAYNAME, RESOURCETYPE, condition, element_text
from oxidav.providers.dav.xml_input import request_xml

#: Media types a card PUT may declare (RFC 6350 §10.1; text/directory is RFC 2425's 3.0 type).
ACCEPTED_CARD_TYPES = (
    "text/vcard",
    "text/x-vcard",
    "text/directory",
    "text/plain",
    "application/octet-stream",
)


def parse_conditions(environ: dict[str, Any]) -> Conditions:
    """``If-Match`` / ``If-None-Match`` of the request (RFC 9110 §13.1.1-2)."""
    return Conditions(
        if_match=entity_tags(environ.get("HTTP_IF_MATCH")),
        if_none_match=entity_tags(environ.get("HTTP_IF_NONE_MATCH")),
    )


def authorize_write(environ: dict[str, Any], book: AddressBookCollection | None, name: str) -> None:
    """For a PUT or DELETE of ``name`` in a shared address book: refuse (403 need-privileges,
    or 404) unless the recipient's grant allows it. Own books need no question."""
    if not isinstance(book, SharedAddressBook):
        return
    if environ["REQUEST_METHOD"] == "DELETE":
        book.require(Action.DELETE, str(book.get_href()))
    elif book.load_row(name) is None:
        book.require(Action.CREATE, str(book.get_href()))
    else:
        book.require(Action.WRITE, book.member_href(name))


def authorize_transfer(
    environ: dict[str, Any],
    source: tuple[AddressBookCollection | None, str],
    target: tuple[AddressBookCollection | None, str],
    move: bool,
) -> None:
    """COPY / MOVE touching a shared address book: MOVE deletes from the source, and the
    target gets a new or replaced card."""
    book, _ = source
    if isinstance(book, SharedAddressBook) and move:
        book.require(Action.DELETE, str(book.get_href()))
    target_book, target_name = target
    if isinstance(target_book, SharedAddressBook):
        authorize_write({**environ, "REQUEST_METHOD": "PUT"}, target_book, target_name)


def put_object(
    environ: dict[str, Any],
    start_response: StartResponse,
    book: AddressBookCollection | None,
    name: str,
) -> Iterable[bytes]:
    """PUT of ``name`` into ``book`` (RFC 6352 §6.3.2): 201 or 204 with the new ETag."""
    book = check_put(environ, book, name, container="address book", member="card")
    store = book.backend.store
    try:
        media, charset = media_type(environ.get("CONTENT_TYPE") or "text/vcard")
        if media not in ACCEPTED_CARD_TYPES:
            raise UnsupportedCardError(f"{media} is not a vCard media type")
        body = _decode(read_body(environ, store.max_resource_bytes, CardTooLargeError), charset)
        result = store.put_object(book.info.id, name, body, parse_conditions(environ))
    except ContactsError as exc:
        raise dav_error(exc, book.member_href) from None
    status = HTTP_CREATED if result.created else HTTP_NO_CONTENT
    headers = [("ETag", f'"{result.etag}"')]
    return util.send_status_response(environ, start_response, status, add_headers=headers)  # type: ignore[no-any-return]


def _decode(body: bytes, charset: str) -> bytes | str:
    """The body as text when a charset other than UTF-8 is declared (vCard 3.0 allowed any,
    RFC 2425 §5.8.1); UTF-8 bytes are left to the validator."""
    if charset in ("", "utf-8", "utf8", "us-ascii"):
        return body
    try:
        return body.decode(charset)
    except (LookupError, UnicodeDecodeError):
        raise InvalidCardError(f"the body is not valid {charset} text") from None


def delete_object(
    environ: dict[str, Any],
    start_response: StartResponse,
    book: AddressBookCollection | None,
    name: str,
) -> Iterable[bytes]:
    """DELETE of a card; ``If-Match`` on a missing card is 412, not 404 (RFC 9110 §13.1.1)."""
    if book is None:
        raise DAVError(HTTP_NOT_FOUND)
    try:
        deleted = book.backend.store.delete_object(book.info.id, name, parse_conditions(environ))
    except ContactsError as exc:
        raise dav_error(exc) from None
    if not deleted:
        raise DAVError(HTTP_NOT_FOUND)
    return util.send_status_response(environ, start_response, HTTP_NO_CONTENT)  # type: ignore[no-any-return]


def copy_or_move_card(
    environ: dict[str, Any],
    start_response: StartResponse,
    source: AddressBookCollection | None,
    name: str,
    target: tuple[AddressBookCollection | None, str],
    move: bool,
) -> Iterable[bytes]:
    """COPY / MOVE of a card into an address book of the same user (RFC 4918 §9.8, §9.9):
    the destination gets a PUT's preconditions (RFC 6352 §6.3.2.1); 201 or 204."""
    if source is None:
        raise DAVError(HTTP_NOT_FOUND)
    book, target_name = target
    if book is None:
        raise DAVError(HTTP_CONFLICT, "the destination address book does not exist")
    if not target_name or len(target_name) > MAX_OBJECT_NAME:
        raise DAVError(HTTP_BAD_REQUEST, "invalid destination name")
    overwrite = environ.get("HTTP_OVERWRITE", "T").strip().upper() != "F"
    try:
        result = source.backend.store.copy_object(
            (source.info.id, name), (book.info.id, target_name), move=move, overwrite=overwrite
        )
    except ContactsError as exc:
        raise dav_error(exc, book.member_href) from None
    status = HTTP_CREATED if result.created else HTTP_NO_CONTENT
    headers = [("ETag", f'"{result.etag}"')]
    return util.send_status_response(environ, start_response, status, add_headers=headers)  # type: ignore[no-any-return]


def mkcol_book(
    environ: dict[str, Any],
    start_response: StartResponse,
    home: AddressBookHome | None,
    name: str,
    exists: bool,
) -> Iterable[bytes]:
    """Extended MKCOL (RFC 5689 §3) of an address book in the home, with its displayname and
    description; a body that asks for another resource type fails ``DAV:valid-resourcetype``.
    A plain MKCOL (no body) creates an address book too."""
    if home is None:
        raise DAVError(HTTP_CONFLICT, "the address-book home does not exist")
    if exists:
        raise DAVError(HTTP_METHOD_NOT_ALLOWED, "the address book already exists")
    if not name or len(name) > 255:
        raise DAVError(HTTP_BAD_REQUEST, "invalid address book name")
    displayname, description = _mkcol_properties(request_xml(environ, allow_empty=True))
    try:
        home.backend.store.create_collection(home.user_id, name, displayname or name, description)
    except BookExistsError:
        raise DAVError(HTTP_METHOD_NOT_ALLOWED, "the address book already exists") from None
    return util.send_status_response(environ, start_response, HTTP_CREATED)  # type: ignore[no-any-return]


def _mkcol_properties(body: etree._Element | None) -> tuple[str, str]:
    if body is None:
        return "", ""
    if body.tag != "{DAV:}mkcol":
        raise DAVError(HTTP_BAD_REQUEST, "the MKCOL body must be a DAV:mkcol element")
    displayname = description = ""
    is_addressbook = False
    for prop in body.iterfind("{DAV:}set/{DAV:}prop/*"):
        if prop.tag == RESOURCETYPE:
            kinds = {child.tag for child in prop}
            if not kinds <= {"{DAV:}collection", ADDRESSBOOK}:
                raise DAVError(
                    HTTP_FORBIDDEN,
                    "only address books can be created here",
                    err_condition=condition("{DAV:}valid-resourcetype"),
                )
            is_addressbook = ADDRESSBOOK in kinds
        elif prop.tag == DISPLAYNAME:
            displayname = element_text(prop)
        elif prop.tag == ADDRESSBOOK_DESCRIPTION:
            description = element_text(prop)
    if not is_addressbook:
        raise DAVError(
            HTTP_FORBIDDEN,
            "an address-book home holds address books only",
            err_condition=condition("{DAV:}valid-resourcetype"),
        )
    return displayname, description
