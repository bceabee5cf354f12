"""The CardDAV writes oxidav handles itself: PUT and DELETE of a card, extended MKCOL.

WsgiDAV's own PUT ignores ``If-Match`` on a missing target and commits a short body
(wsgidav.md §0.7, §0.8), and its MKCOL refuses a body (415). These handlers read the request
themselves: the body is counted against ``Content-Length`` and bounded by
``max_resource_bytes``, the conditions are checked in the same transaction as the write
(``ContactStore``), and every refusal carries its RFC 6352 precondition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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

from oxidav.contacts import (
    BookExistsError,
    CardTooLargeError,
    Conditions,
    ContactsError,
    InvalidCardError,
    UnsupportedCardError,
)
from oxidav.providers.addressbook_resources import AddressBookCollection, AddressBookHome
from oxidav.providers.contacts_context import (
    ADDRESSBOOK,
    ADDRESSBOOK_DESCRIPTION,
    DISPLAYNAME,
    MAX_CARD_NAME,
    RESOURCETYPE,
    condition,
    dav_error,
)

StartResponse = Callable[..., Any]
READ_BLOCK = 64 * 1024
#: Media types a card PUT may declare (RFC 6350 §10.1; text/directory is RFC 2425's 3.0 type).
ACCEPTED_CARD_TYPES = (
    "text/vcard",
    "text/x-vcard",
    "text/directory",
    "text/plain",
    "application/octet-stream",
)


def parse_conditions(environ: dict[str, Any]) -> Conditions:
    """``If-Match`` / ``If-None-Match`` as unquoted entity tags (weak tags compare by their
    opaque part, as WsgiDAV does)."""

    def tags(header: str | None) -> tuple[str, ...] | None:
        if header is None:
            return None
        result = []
        for part in header.split(","):
            tag = part.strip()
            if tag.startswith("W/"):
                tag = tag[2:]
            tag = tag.strip('"')
            if tag:
                result.append(tag)
        return tuple(result)

    return Conditions(
        if_match=tags(environ.get("HTTP_IF_MATCH")),
        if_none_match=tags(environ.get("HTTP_IF_NONE_MATCH")),
    )


def read_body(environ: dict[str, Any], limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (``CardTooLargeError`` beyond), and exactly
    ``Content-Length`` bytes when that is given (400 for a short body)."""
    stream = environ["wsgi.input"]
    header = (environ.get("CONTENT_LENGTH") or "").strip()
    if header:
        try:
            length = int(header)
        except ValueError:
            raise DAVError(HTTP_BAD_REQUEST, "invalid Content-Length") from None
        if length > limit:
            raise CardTooLargeError(f"the body has {length} bytes; at most {limit} are allowed")
        chunks: list[bytes] = []
        remaining = length
        while remaining > 0:
            chunk = stream.read(min(remaining, READ_BLOCK))
            if not chunk:
                raise DAVError(HTTP_BAD_REQUEST, "the body is shorter than its Content-Length")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return b""
    chunks = []
    size = 0
    while True:
        chunk = stream.read(READ_BLOCK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise CardTooLargeError(f"the body exceeds {limit} bytes")
        chunks.append(chunk)


def put_card(
    environ: dict[str, Any],
    start_response: StartResponse,
    book: AddressBookCollection | None,
    name: str,
) -> Iterable[bytes]:
    """PUT of ``name`` into ``book`` (RFC 6352 §6.3.2): 201 or 204 with the new ETag."""
    if book is None:
        raise DAVError(HTTP_CONFLICT, "the address book does not exist")
    if not name or len(name) > MAX_CARD_NAME:
        raise DAVError(HTTP_BAD_REQUEST, "invalid card name")
    if "HTTP_CONTENT_RANGE" in environ or "HTTP_CONTENT_ENCODING" in environ:
        raise DAVError(HTTP_BAD_REQUEST, "Content-Range / Content-Encoding are not supported")
    store = book.backend.store
    try:
        media, charset = _media_type(environ.get("CONTENT_TYPE") or "text/vcard")
        if media not in ACCEPTED_CARD_TYPES:
            raise UnsupportedCardError(f"{media} is not a vCard media type")
        body = _decode(read_body(environ, store.max_resource_bytes), charset)
        result = store.put_card(book.book.id, name, body, parse_conditions(environ))
    except ContactsError as exc:
        raise dav_error(exc, book.card_href) from None
    status = HTTP_CREATED if result.created else HTTP_NO_CONTENT
    headers = [("ETag", f'"{result.etag}"')]
    return util.send_status_response(environ, start_response, status, add_headers=headers)  # type: ignore[no-any-return]


def _media_type(header: str) -> tuple[str, str]:
    """(media type, charset) of a Content-Type header, both lower-case; charset "" if none."""
    media, *params = (part.strip() for part in header.split(";"))
    charset = ""
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip('"').lower()
    return media.lower(), charset


def _decode(body: bytes, charset: str) -> bytes | str:
    """The body as text when a charset other than UTF-8 is declared (vCard 3.0 allowed any,
    RFC 2425 §5.8.1); UTF-8 bytes are left to the validator."""
    if charset in ("", "utf-8", "utf8", "us-ascii"):
        return body
    try:
        return body.decode(charset)
    except (LookupError, UnicodeDecodeError):
        raise InvalidCardError(f"the body is not valid {charset} text") from None


def delete_card(
    environ: dict[str, Any],
    start_response: StartResponse,
    book: AddressBookCollection | None,
    name: str,
) -> Iterable[bytes]:
    """DELETE of a card; ``If-Match`` on a missing card is 412, not 404 (RFC 9110 §13.1.1)."""
    if book is None:
        raise DAVError(HTTP_NOT_FOUND)
    try:
        deleted = book.backend.store.delete_card(book.book.id, name, parse_conditions(environ))
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
    if not target_name or len(target_name) > MAX_CARD_NAME:
        raise DAVError(HTTP_BAD_REQUEST, "invalid destination name")
    overwrite = environ.get("HTTP_OVERWRITE", "T").strip().upper() != "F"
    try:
        result = source.backend.store.copy_card(
            (source.book.id, name), (book.book.id, target_name), move=move, overwrite=overwrite
        )
    except ContactsError as exc:
        raise dav_error(exc, book.card_href) from None
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
    displayname, description = _mkcol_properties(util.parse_xml_body(environ, allow_empty=True))
    try:
        home.backend.store.create_book(home.user_id, name, displayname or name, description)
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
            displayname = _text(prop)
        elif prop.tag == ADDRESSBOOK_DESCRIPTION:
            description = _text(prop)
    if not is_addressbook:
        raise DAVError(
            HTTP_FORBIDDEN,
            "an address-book home holds address books only",
            err_condition=condition("{DAV:}valid-resourcetype"),
        )
    return displayname, description


def _text(element: etree._Element) -> str:
    return "".join(str(part) for part in element.itertext())
