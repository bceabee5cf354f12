"""PROPFIND Depth 0 / 1 on files and folders (RFC 4918 §9.1), written as XML text directly.

WsgiDAV builds one lxml tree for the whole multistatus and asks every resource for every
property through several layers (docs/wsgidav.md#propfind-cost). Here each member's
``<response>`` is formatted straight from its row — the common live properties from byte
templates, others through the resource's ``get_property_value`` — and joined. An answer of up to
``BUFFER_LIMIT`` bytes is sent with a Content-Length (the connection stays open); a larger one
is streamed as it is produced — members are loaded a page (1000 rows) at a time — so memory
stays bounded by the buffer and the page, not by the folder.

A named PROPFIND whose properties all come from the rows, or from the page's enrichers (the
``oc:`` / ``nc:`` properties a Nextcloud client lists), lists its members as rows
(``FolderResource.iter_member_rows``: a ``MemberRow`` is a child's row and href, and builds its
resource only for a property the row cannot answer: a locked member's lockdiscovery, a property
no enricher answers of a node with dead properties), and without a creation date reads those
rows without what it does not show (``oxidav.tree.listing.read_children_brief``). One that asks
only for ``LISTED_PROPERTIES`` (what a file browser's columns show: etag, time, length, type,
kind, name) reads only those columns (``ListedMember``s over ``read_listed_rows``); their
formatters answer every row, so no resource is ever needed. A folder's length and type are
answered from its row too, in a 404 propstat (``Absent``). An allprop PROPFIND (without
``include``) lists ``MemberRow``s too and answers each from its row and its page's enrichers
(``Enricher.values``: all of a node's properties in one call); a node with dead properties, or
a locked member, takes the general path. Every way gives the same bytes.

Supports ``allprop`` (with ``include``, §14.8), ``propname`` and named properties; a property
named twice is answered once. Depth infinity and the ``files/`` homes collection are left to
``dav_propfind``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, overload
from xml.sax.saxutils import escape

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_NOT_FOUND, DAVError, get_http_status_string

from oxidav.providers.dav.enrichment import values_of
from oxidav.providers.dav.multistatus import property_names, take_up_to
from oxidav.providers.dav.xml_input import request_xml
from oxidav.providers.files.get import http_date_now, rfc1123_of, rfc3339_of
from oxidav.providers.files.members import ListedMember, MemberRow
from oxidav.providers.files.props import FILE_PROPS, FOLDER_PROPS, LOCK_PROPS
from oxidav.providers.files.resources import FileResource, FolderResource

BUFFER_LIMIT = 8 << 20
#: Responses joined into one piece when streaming.
BATCH = 256
#: Namespaces declared once, on the multistatus element, with the prefixes Nextcloud's own
#: answers use: the Nextcloud properties of every member need no declaration of their own.
ROOT_NAMESPACES = {"http://owncloud.org/ns": "oc", "http://nextcloud.org/ns": "nc"}
XML_HEAD = (
    "<?xml version='1.0' encoding='UTF-8'?>\n<D:multistatus xmlns:D=\"DAV:\""
    + "".join(f' xmlns:{prefix}="{namespace}"' for namespace, prefix in ROOT_NAMESPACES.items())
    + ">"
).encode()
XML_TAIL = b"</D:multistatus>"
OK = "HTTP/1.1 200 OK"
NOT_FOUND = "HTTP/1.1 " + get_http_status_string(HTTP_NOT_FOUND)
CREATIONDATE = "{DAV:}creationdate"
RESOURCETYPE_COLLECTION = "<D:resourcetype><D:collection/></D:resourcetype>"
RESOURCETYPE_FILE = "<D:resourcetype/>"
SUPPORTEDLOCK = (
    "<D:supportedlock>"
    + "".join(
        f"<D:lockentry><D:lockscope><D:{scope}/></D:lockscope><D:locktype><D:write/></D:locktype>"
        "</D:lockentry>"
        for scope in ("exclusive", "shared")
    )
    + "</D:supportedlock>"
)

Resource = FileResource | FolderResource
T = TypeVar("T")
#: What a row formatter reads: a resource, or a listed member's row (``MemberRow``).
Row = FileResource | FolderResource | MemberRow
#: What a formatter of ``LISTED_PROPERTIES`` reads: any row, or a ``ListedMember``.
Listed = FileResource | FolderResource | MemberRow | ListedMember


def _etag(res: Listed) -> str:
    return f'<D:getetag>"{res.node.etag}"</D:getetag>'


def _lastmodified(res: Listed) -> str:
    return f"<D:getlastmodified>{rfc1123_of(res.node.mtime)}</D:getlastmodified>"


def _resourcetype(res: Listed) -> str:
    return RESOURCETYPE_COLLECTION if res.is_collection else RESOURCETYPE_FILE


def _displayname(res: Listed) -> str:
    return f"<D:displayname>{escape(res.get_display_name())}</D:displayname>"


def _creationdate(res: Row) -> str | None:
    return f"<D:creationdate>{rfc3339_of(res.node.created_at)}</D:creationdate>"


def _supportedlock(res: Row) -> str | None:
    return SUPPORTEDLOCK if res.provider.lock_manager is not None else None


def _lockdiscovery(res: Row) -> str | None:
    if res.provider.lock_manager is None or res.has_locks():
        return None
    return "<D:lockdiscovery/>"


class Absent(str):
    """What a row formatter gives for a property the resource does not have: its empty
    element, answered in a 404 propstat (as the general path answers it)."""

    __slots__ = ()


_NO_CONTENTLENGTH = Absent("<D:getcontentlength/>")
_NO_CONTENTTYPE = Absent("<D:getcontenttype/>")


def _contentlength(res: Listed) -> str:
    if res.is_collection:
        return _NO_CONTENTLENGTH
    return f"<D:getcontentlength>{res.node.size}</D:getcontentlength>"


def _contenttype(res: Listed) -> str:
    if res.is_collection:
        return _NO_CONTENTTYPE
    return f"<D:getcontenttype>{escape(res.node.mime_type)}</D:getcontenttype>"


#: Properties answered from a ``ListedRow`` alone (``read_listed_rows``), as XML text.
_LISTED: dict[str, Callable[[Listed], str]] = {
    "{DAV:}getetag": _etag,
    "{DAV:}getlastmodified": _lastmodified,
    "{DAV:}resourcetype": _resourcetype,
    "{DAV:}displayname": _displayname,
    "{DAV:}getcontentlength": _contentlength,
    "{DAV:}getcontenttype": _contenttype,
}
LISTED_PROPERTIES = frozenset(_LISTED)
#: Common live properties as XML text straight from the row; None takes the general path.
_FAST: dict[str, Callable[[Row], str | None]] = {
    **_LISTED,
    CREATIONDATE: _creationdate,
    "{DAV:}supportedlock": _supportedlock,
    "{DAV:}lockdiscovery": _lockdiscovery,
}


def _allprop_formatters(names: Sequence[str], locking: bool) -> list[Formatter]:
    return [_FAST[name] for name in (*names, *(LOCK_PROPS if locking else ()))]


#: The formatters of allprop's live DAV: properties (``NodeProperties.get_property_names``'
#: first names), by (is a folder, locks are supported).
_ALLPROP: dict[tuple[bool, bool], list[Formatter]] = {
    (folder, locking): _allprop_formatters(FOLDER_PROPS if folder else FILE_PROPS, locking)
    for folder in (False, True)
    for locking in (False, True)
}


def _fast(res: Resource, name: str) -> str | None:
    """Common live properties as XML text (an ``Absent`` one's empty element), or None to
    take the general path."""
    format_property = _FAST.get(name)
    return None if format_property is None else format_property(res)


@functools.lru_cache(maxsize=1024)
def _root_tag(name: str) -> str | None:
    """The tag of property ``name`` (Clark notation) if its namespace is declared on the
    multistatus element (DAV:, ``ROOT_NAMESPACES``) or it has none; else None."""
    if name.startswith("{DAV:}"):
        return "D:" + name[6:]
    if not name.startswith("{"):
        return name
    namespace, _, local = name[1:].partition("}")
    prefix = ROOT_NAMESPACES.get(namespace)
    return None if prefix is None else f"{prefix}:{local}"


class _Names:
    """Prefixes of the namespaces of one response that the multistatus element does not
    declare (``NS1``, ``NS2`` …: never one of ``ROOT_NAMESPACES``' prefixes)."""

    def __init__(self) -> None:
        self.prefixes: dict[str, str] = {}

    def tag(self, name: str) -> str:
        tag = _root_tag(name)
        if tag is not None:
            return tag
        namespace, _, local = name[1:].partition("}")
        prefix = self.prefixes.get(namespace)
        if prefix is None:
            prefix = self.prefixes[namespace] = f"NS{len(self.prefixes) + 1}"
        return f"{prefix}:{local}"

    def declarations(self) -> str:
        return "".join(
            f' xmlns:{p}="{escape(ns, {chr(34): "&quot;"})}"' for ns, p in self.prefixes.items()
        )


#: The tags of properties in the multistatus element's namespaces (which need no prefixes
#: of their own): only those are ever asked of it.
_ROOT_NAMES = _Names()


def _value_xml(names: _Names, name: str, value: Any) -> str:
    if value is None or value == "":
        return f"<{names.tag(name)}/>"
    if isinstance(value, etree._Element):
        if value.tag == name and not (len(value) or value.text or value.attrib):
            return f"<{names.tag(name)}/>"  # empty (an item's share-types, mostly)
        return etree.tostring(value, encoding="unicode", with_tail=False)
    tag = names.tag(name)
    return f"<{tag}>{escape(str(value))}</{tag}>"


Formatter = Callable[[Row], str | None]
ListedFormatter = Callable[[Listed], str]


def row_formatters(mode: str, requested: list[str]) -> list[Formatter] | None:
    """For a named PROPFIND whose every property can come from the row or its page's
    enrichers, their formatters; None otherwise. Looked up once per request, not per member."""
    if mode != "named" or not requested:
        return None
    formatters: list[Formatter] = []
    for name in requested:
        format_property = _FAST.get(name)
        if format_property is None:
            if name.startswith("{DAV:}") or _root_tag(name) is None:
                return None
            format_property = _enriched(name)
        formatters.append(format_property)
    return formatters


@functools.lru_cache(maxsize=256)
def _enriched(name: str) -> Formatter:
    """The row formatter of ``name``, a property outside DAV: in the multistatus element's
    namespaces: the first value an enricher of the page gives (as ``find_property_value``),
    else, for a node without dead properties, an ``Absent`` (404); None (the general path)
    for a node with dead properties, one of which may be ``name``."""
    absent = Absent(f"<{_root_tag(name)}/>")

    def format_property(res: Row) -> str | None:
        page, node = res.page, res.node
        for enricher in page.enrichers():
            value = enricher.value(node, name, page.environ)
            if value is not None:
                return _value_xml(_ROOT_NAMES, name, value)
        if page.props(node.id, lambda: _ref_url(res)):
            return None
        return absent

    return format_property


def listed_formatters(mode: str, requested: list[str]) -> list[ListedFormatter] | None:
    """``row_formatters`` when every property is one of ``LISTED_PROPERTIES``; else None."""
    if mode != "named" or not requested or not LISTED_PROPERTIES.issuperset(requested):
        return None
    return [_LISTED[name] for name in requested]


def _plain_allprop(mode: str, requested: list[str]) -> bool:
    """An allprop PROPFIND without ``include``: the one ``_allprop_from_row`` answers."""
    return mode == "allprop" and not requested


def _allprop_from_row(res: Row) -> bytes | None:
    """The allprop ``<D:response>`` of ``res`` (without ``include``) from its row and its
    page's enrichers, as the general path writes it; None when the general path must: a node
    with dead properties, a locked member, an enricher's property that is not in the
    multistatus element's namespaces or has no value."""
    page, node = res.page, res.node
    if page.props(node.id, lambda: _ref_url(res)):
        return None
    locking = res.provider.lock_manager is not None
    texts = [format_property(res) for format_property in _ALLPROP[res.is_collection, locking]]
    for enricher in page.enrichers():
        for name, value in values_of(enricher, node, page.environ):
            if value is None or _root_tag(name) is None:
                return None
            texts.append(_value_xml(_ROOT_NAMES, name, value))
    return _response(res.get_href(), texts)


def _ref_url(res: Row) -> str:
    return (res.resource() if isinstance(res, MemberRow) else res).get_ref_url()


def _from_row(res: Row, formatters: list[Formatter]) -> bytes | None:
    """The ``<D:response>`` of ``res`` from its row (``_response``); None if a property cannot
    be answered from the row (a locked member's lockdiscovery)."""
    return _response(res.get_href(), [format_property(res) for format_property in formatters])


@overload
def _response(href: str, texts: Sequence[str]) -> bytes: ...
@overload
def _response(href: str, texts: Sequence[str | None]) -> bytes | None: ...
def _response(href: str, texts: Sequence[str | None]) -> bytes | None:
    """A ``<D:response>`` with no namespaces for the properties' ``texts``: a 200 propstat,
    and a 404 one for the ``Absent`` ones (a folder's getcontentlength), first if one of them
    was asked for first (as the general path orders them); None if a text is None."""
    found: list[str] = []
    absent: list[str] | None = None
    absent_first = False
    for text in texts:
        if text is None:
            return None
        if text.__class__ is Absent:
            if absent is None:
                absent = []
                absent_first = not found
            absent.append(text)
        else:
            found.append(text)
    if "&" in href or "<" in href or ">" in href:  # escape's own test, without its three replaces
        href = escape(href)
    ok = f"<D:propstat><D:prop>{''.join(found)}</D:prop><D:status>{OK}</D:status></D:propstat>"
    if absent is None:
        return f"<D:response><D:href>{href}</D:href>{ok}</D:response>".encode()
    missing = (
        f"<D:propstat><D:prop>{''.join(absent)}</D:prop>"
        f"<D:status>{NOT_FOUND}</D:status></D:propstat>"
    )
    if not found:
        return f"<D:response><D:href>{href}</D:href>{missing}</D:response>".encode()
    stats = missing + ok if absent_first else ok + missing
    return f"<D:response><D:href>{href}</D:href>{stats}</D:response>".encode()


def response_xml(
    res: Row, mode: str, requested: list[str], from_row: list[Formatter] | None = None
) -> bytes:
    """One ``<D:response>`` for ``res`` (``from_row``: ``row_formatters(mode, requested)``;
    a ``MemberRow`` only with them)."""
    if from_row is not None:
        fast = _from_row(res, from_row)
        if fast is not None:
            return fast
    elif _plain_allprop(mode, requested):
        fast = _allprop_from_row(res)
        if fast is not None:
            return fast
    resource = res.resource() if isinstance(res, MemberRow) else res
    names = _Names()
    if mode == "named":
        wanted = requested
    else:
        wanted = resource.get_property_names(is_allprop=mode == "allprop")
        wanted.extend(n for n in requested if n not in wanted)  # allprop + include
    groups: dict[str, list[str]] = {}
    for name in wanted:
        if mode == "propname":
            groups.setdefault(OK, []).append(f"<{names.tag(name)}/>")
            continue
        text = _fast(resource, name)
        if isinstance(text, Absent):
            groups.setdefault(NOT_FOUND, []).append(text)
            continue
        if text is None:
            try:
                value = resource.find_property_value(name)
            except DAVError as exc:
                status = "HTTP/1.1 " + get_http_status_string(exc)
                groups.setdefault(status, []).append(f"<{names.tag(name)}/>")
                continue
            if value is None:  # not a property of this resource
                groups.setdefault(NOT_FOUND, []).append(f"<{names.tag(name)}/>")
                continue
            text = _value_xml(names, name, value)
        groups.setdefault(OK, []).append(text)
    stats = "".join(
        f"<D:propstat><D:prop>{''.join(props)}</D:prop><D:status>{status}</D:status></D:propstat>"
        for status, props in groups.items()
    )
    return (
        f"<D:response{names.declarations()}><D:href>{escape(resource.get_href())}</D:href>"
        f"{stats}</D:response>"
    ).encode()


def _request(environ: dict[str, Any]) -> tuple[str, list[str]]:
    """``(mode, names)`` of a PROPFIND body; an empty body is allprop (§9.1)."""
    body = request_xml(environ, allow_empty=True)
    if body is None:
        return "allprop", []
    if body.tag != "{DAV:}propfind":
        raise DAVError(HTTP_BAD_REQUEST, "expected DAV:propfind")
    mode, names, include = "", [], []
    for child in body:
        tag = child.tag
        if tag in ("{DAV:}allprop", "{DAV:}propname", "{DAV:}name", "{DAV:}prop"):
            new = {"{DAV:}allprop": "allprop", "{DAV:}prop": "named"}.get(tag, "propname")
            if mode:
                raise DAVError(HTTP_BAD_REQUEST, "allprop, propname and prop are exclusive")
            mode = new
            if new == "named":
                names = property_names(child)
        elif tag == "{DAV:}include":
            include = property_names(child)
    if include and mode != "allprop":
        raise DAVError(HTTP_BAD_REQUEST, "include is only valid with allprop")
    return mode or "allprop", names or include


def _body(
    res: Resource, depth: str, mode: str, names: list[str], from_row: list[Formatter] | None
) -> Iterator[bytes]:
    """The multistatus of ``res`` and, at Depth 1, its members, in pieces of at most ``BATCH``
    responses."""
    yield XML_HEAD
    yield response_xml(res, mode, names, from_row)
    if depth != "1" or not isinstance(res, FolderResource):
        yield XML_TAIL
        return
    listed = None if from_row is None else listed_formatters(mode, names)
    pages: Iterable[Sequence[Row]]
    if listed is not None:  # only a file browser's columns: the fewest read, no resources
        for members in _batches(res.iter_listed_members()):
            yield b"".join(
                [
                    _response(member.get_href(), [show(member) for show in listed])
                    for member in members
                ]
            )
        pages = [res.mount_members()]
    elif from_row is not None:  # from the rows: no resources, without a creation date fewer columns
        pages = res.iter_member_rows(brief=CREATIONDATE not in names)
    elif _plain_allprop(mode, names):  # from the rows and the enrichers
        pages = res.iter_member_rows()
    else:
        pages = res.iter_member_pages()
    for batch in _batches(pages):
        yield b"".join([response_xml(row, mode, names, from_row) for row in batch])
    yield XML_TAIL


def _batches(pages: Iterable[Sequence[T]]) -> Iterator[Sequence[T]]:
    """``pages`` cut into pieces of at most ``BATCH``."""
    for page in pages:
        for start in range(0, len(page), BATCH):
            yield page[start : start + BATCH]


def handle_propfind(
    provider: Any, server: Any, environ: dict[str, Any], start_response: Any
) -> Iterable[bytes] | None:
    """Answer a Depth 0 / 1 PROPFIND; None leaves the request to WsgiDAV."""
    depth = environ.get("HTTP_DEPTH", "infinity").strip().lower()
    if depth not in ("0", "1"):
        return None
    res = provider.get_resource_inst(environ["PATH_INFO"], environ)
    if res is None:
        raise DAVError(HTTP_NOT_FOUND)
    if not isinstance(res, FileResource | FolderResource):
        return None
    server._evaluate_if_headers(res, environ)
    mode, names = _request(environ)
    chunks = _body(res, depth, mode, names, row_formatters(mode, names))
    buffered, size, whole = take_up_to(chunks, BUFFER_LIMIT)
    if whole:
        start_response(
            "207 Multi-Status",
            [
                ("Content-Type", "application/xml; charset=utf-8"),
                ("Content-Length", str(size)),
                ("Date", http_date_now()),
            ],
        )
        return [b"".join(buffered)]
    start_response(
        "207 Multi-Status",
        [("Content-Type", "application/xml; charset=utf-8"), ("Date", http_date_now())],
    )
    return itertools.chain(buffered, chunks)
