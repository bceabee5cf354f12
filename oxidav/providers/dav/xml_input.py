"""XML from clients: the one parser of every request body, and of every stored XML value.

A request body of an XML method (``XML_METHODS``) is read by ``XmlInput.read_body`` before any
handler runs (``OxiRequestServer.__call__``): at most ``max_body_bytes`` (413 beyond, without
reading a declared-too-long body), Content-Length or chunked alike, then kept in the environ
as bytes. ``request_xml`` parses it — once — with ``parse_xml``; WsgiDAV's own handlers
(PROPFIND, PROPPATCH, LOCK read ``wsgi.input`` themselves) get the canonical serialisation of
the parsed tree in place of the client's bytes (``XmlInput.prepare``), so every XML body any
handler sees has passed this parser.

``parse_xml`` refuses (``XmlRefused``, answered 400 with the reason) a document type
declaration of any kind — so no entity, internal or external, is ever declared, let alone
expanded — entity references, a nesting deeper than ``MAX_DEPTH``, more than
``MAX_ELEMENTS`` elements, and anything that is not well-formed. Comments and processing
instructions are dropped. What it returns therefore serialises (``etree.tostring``) to bytes
that ``parse_xml`` reads back to the same tree: that is the only form in which oxidav stores
client XML (dead properties, lock owners, personal share properties).

``stored_xml`` reads such a stored value back; a value it cannot read (written before these
rules) is logged with a WARNING naming the resource and property, and the caller leaves it
out — a poisoned row never turns a PROPFIND into a 500.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_REQUEST_ENTITY_TOO_LARGE, DAVError

from oxidav.environ import ENVIRON_BODY, ENVIRON_ROOT

_log = logging.getLogger(__name__)

#: Methods whose request body is XML.
XML_METHODS = frozenset(
    ("PROPFIND", "PROPPATCH", "LOCK", "REPORT", "SEARCH", "MKCOL", "MKCALENDAR")
)
#: Methods WsgiDAV parses the body of itself (from ``wsgi.input``).
WSGIDAV_PARSED = frozenset(("PROPFIND", "PROPPATCH", "LOCK"))
#: Deepest element nesting accepted (the deepest RFC body, a calendar-query filter, is ~8).
MAX_DEPTH = 64
#: Most elements in one document (a multiget of thousands of hrefs fits).
MAX_ELEMENTS = 25_000
#: Default cap of a request body, in bytes (``Settings.max_xml_body_bytes``).
DEFAULT_MAX_BODY = 1 << 20
#: Bytes handed to the parser at a time: the limits are checked between pieces.
_FEED = 16 << 10
_READ = 64 << 10
_NO_DOCTYPE = "a document type declaration (DOCTYPE) is not allowed"
_DOCTYPE_MARKS = tuple("<!DOCTYPE".encode(codec) for codec in ("utf-8", "utf-16-le", "utf-16-be"))


class XmlRefused(ValueError):
    """XML that oxidav does not accept; the message says why (it is shown to the client)."""


def _parser() -> etree.XMLPullParser:
    return etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def parse_xml(data: bytes) -> etree._Element:
    """The root element of ``data``; ``XmlRefused`` unless it is well-formed XML without a
    document type declaration or entity reference, at most ``MAX_DEPTH`` deep and with at
    most ``MAX_ELEMENTS`` elements."""
    parser = _parser()
    depth = count = 0
    checked_doctype = False
    try:
        for start in range(0, len(data), _FEED):
            parser.feed(data[start : start + _FEED])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                if not checked_doctype:
                    checked_doctype = True
                    _refuse_doctype(element)
                depth += 1
                count += 1
                if depth > MAX_DEPTH:
                    raise XmlRefused(f"elements are nested deeper than {MAX_DEPTH}")
                if count > MAX_ELEMENTS:
                    raise XmlRefused(f"more than {MAX_ELEMENTS} elements")
        root = parser.close()
    except etree.XMLSyntaxError as error:
        if not checked_doctype and any(mark in data for mark in _DOCTYPE_MARKS):
            # libxml2 stopped inside the prolog (e.g. on an entity amplification): say why
            raise XmlRefused(_NO_DOCTYPE) from None
        if "Excessive depth" in error.msg:  # libxml2's own cap, met within one fed piece
            raise XmlRefused(f"elements are nested deeper than {MAX_DEPTH}") from None
        raise XmlRefused(f"not well-formed XML: {error.msg.strip()}") from None
    _refuse_doctype(root)
    if next(root.iter(etree.Entity), None) is not None:
        raise XmlRefused("entity references are not allowed")
    return root


def _refuse_doctype(element: Any) -> None:
    docinfo: Any = element.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise XmlRefused(_NO_DOCTYPE)


def canonical(element: etree._Element) -> bytes:
    """``element`` serialised as oxidav stores client XML (readable by ``parse_xml``)."""
    return etree.tostring(element, with_tail=False)


def storable(element: etree._Element) -> bytes:
    """The stored form of a client's ``element``: ``canonical``, checked to read back;
    ``DAVError`` 400 when it does not (it came from ``parse_xml``, so it always should)."""
    data = canonical(element)
    try:
        parse_xml(data)
    except XmlRefused as error:
        raise DAVError(HTTP_BAD_REQUEST, f"the XML value cannot be stored: {error}") from None
    return data


def stored_xml(value: bytes | str, *, resource: str, name: str) -> etree._Element | None:
    """A stored XML value parsed back, or None (logged) when it is unreadable."""
    data = value.encode() if isinstance(value, str) else value
    try:
        return parse_xml(data)
    except XmlRefused as error:
        _log.warning("skipping unreadable stored XML of %s on %s: %s", name, resource, error)
        return None


@dataclass(frozen=True)
class XmlInput:
    """How request bodies of ``XML_METHODS`` are read (``make_app`` builds one from settings)."""

    max_body_bytes: int = DEFAULT_MAX_BODY

    def prepare(self, environ: dict[str, Any]) -> None:
        """Read the body of an XML method; for the methods WsgiDAV parses itself, parse it and
        put its canonical form in ``wsgi.input``. ``DAVError`` 400 / 413 when refused."""
        method = environ.get("REQUEST_METHOD", "")
        if method not in XML_METHODS:
            return
        self.read_body(environ)
        if method in WSGIDAV_PARSED:
            root = request_xml(environ, allow_empty=True)
            replace_body(environ, root)

    def read_body(self, environ: dict[str, Any]) -> None:
        """Read the request body (at most ``max_body_bytes``) into ``ENVIRON_BODY``."""
        if ENVIRON_BODY in environ:
            return
        data = _read_bounded(environ, self.max_body_bytes)
        environ[ENVIRON_BODY] = data or None
        environ["wsgidav.all_input_read"] = 1


def _read_bounded(environ: Mapping[str, Any], limit: int) -> bytes:
    chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    header = str(environ.get("CONTENT_LENGTH", "")).strip()
    if chunked:
        wanted = limit + 1
    elif not header:
        return b""
    else:
        try:
            wanted = int(header)
        except ValueError:
            raise DAVError(HTTP_BAD_REQUEST, "Content-Length is not a number") from None
        if wanted < 0:
            raise DAVError(HTTP_BAD_REQUEST, "Content-Length is negative")
        if wanted > limit:
            raise DAVError(HTTP_REQUEST_ENTITY_TOO_LARGE, _too_large(limit))
    stream = environ["wsgi.input"]
    pieces: list[bytes] = []
    size = 0
    while size < wanted:
        piece = stream.read(min(_READ, wanted - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    if size > limit:
        raise DAVError(HTTP_REQUEST_ENTITY_TOO_LARGE, _too_large(limit))
    return b"".join(pieces)


def _too_large(limit: int) -> str:
    return f"the XML request body is larger than {limit} bytes (max_xml_body_bytes)"


@overload
def request_xml(
    environ: dict[str, Any], *, allow_empty: Literal[False] = False
) -> etree._Element: ...


@overload
def request_xml(environ: dict[str, Any], *, allow_empty: bool) -> etree._Element | None: ...


def request_xml(environ: dict[str, Any], *, allow_empty: bool = False) -> etree._Element | None:
    """The parsed request body (parsed once per request); None without a body if
    ``allow_empty``, else 400. ``DAVError`` 400 with the reason for refused XML."""
    if ENVIRON_ROOT not in environ:
        if ENVIRON_BODY not in environ:
            XmlInput().read_body(environ)  # a handler reached without OxiRequestServer
        data = environ[ENVIRON_BODY]
        try:
            environ[ENVIRON_ROOT] = None if data is None else parse_xml(data)
        except XmlRefused as error:
            raise DAVError(HTTP_BAD_REQUEST, f"refused XML request body: {error}") from None
    root: etree._Element | None = environ[ENVIRON_ROOT]
    if root is None and not allow_empty:
        raise DAVError(HTTP_BAD_REQUEST, "the request needs an XML body")
    return root


def replace_body(environ: dict[str, Any], root: etree._Element | None) -> None:
    """Make ``wsgi.input`` the canonical form of ``root`` (or empty), for WsgiDAV's handlers."""
    data = b"" if root is None else canonical(root)
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))
    environ.pop("HTTP_TRANSFER_ENCODING", None)
