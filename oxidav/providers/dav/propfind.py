"""PROPFIND (RFC 4918 §9.1) of everything ``files_propfind`` does not answer itself: calendar
and address-book homes and collections, principals, the DAV root, Depth infinity.

WsgiDAV's ``do_PROPFIND``, with two changes: a property named twice in ``DAV:prop`` is asked
and answered once, and the multistatus is streamed one response at a time (``multistatus``)
instead of being built whole, so a Depth 1 listing of a large calendar holds one member's
properties at a time. The bytes of an answer are those WsgiDAV sends.

Both ``DAV:propname`` (RFC 4918) and WsgiDAV's ``DAV:name`` spelling of it are understood;
``DAV:include`` is ignored as WsgiDAV ignores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lxml import etree
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_FORBIDDEN,
    HTTP_NOT_FOUND,
    DAVError,
    PRECONDITION_CODE_PropfindFiniteDepth,
)

from oxidav.providers.dav.multistatus import property_names, response_bytes, send_multistatus
from oxidav.providers.dav.xml_input import request_xml

MODES = {"{DAV:}allprop": "allprop", "{DAV:}propname": "name", "{DAV:}name": "name"}


def propfind_request(body: etree._Element | None) -> tuple[str, list[str]]:
    """``(mode, names)`` of a PROPFIND body: ``allprop``, ``name`` or ``named``, and for
    ``named`` the distinct property names. An empty body is allprop (§9.1)."""
    if body is None:
        return "allprop", []
    if body.tag != "{DAV:}propfind":
        raise DAVError(HTTP_BAD_REQUEST, "expected DAV:propfind")
    mode = ""
    names: dict[str, None] = {}
    for child in body:
        if child.tag == "{DAV:}prop":
            if mode not in ("", "named"):
                raise DAVError(HTTP_BAD_REQUEST, "allprop, propname and prop are exclusive")
            mode = "named"
            names.update(dict.fromkeys(property_names(child)))
        elif child.tag in MODES:
            if mode:
                raise DAVError(HTTP_BAD_REQUEST, "allprop, propname and prop are exclusive")
            mode = MODES[child.tag]
    return mode or "allprop", list(names)


def propfind(server: Any, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """Answer a PROPFIND for ``server`` (an ``OxiRequestServer``)."""
    res = server._davProvider.get_resource_inst(environ["PATH_INFO"], environ)
    environ.setdefault("HTTP_DEPTH", "infinity")
    depth = environ["HTTP_DEPTH"]
    if depth not in ("0", "1", "infinity"):
        raise DAVError(HTTP_BAD_REQUEST, f"Invalid Depth header: {depth!r}.")
    if depth == "infinity" and not server.allow_propfind_infinite:
        raise DAVError(
            HTTP_FORBIDDEN,
            "PROPFIND 'infinite' was disabled for security reasons.",
            err_condition=PRECONDITION_CODE_PropfindFiniteDepth,
        )
    if res is None:
        raise DAVError(HTTP_NOT_FOUND, environ["PATH_INFO"])
    server._evaluate_if_headers(res, environ)
    mode, names = propfind_request(request_xml(environ, allow_empty=True))
    members = res.get_descendants(depth=depth, add_self=True)
    return send_multistatus(environ, start_response, _responses(members, mode, names))


def _responses(members: list[Any], mode: str, names: list[str]) -> Iterator[bytes]:
    for member in members:
        if mode == "named":
            props = member.get_properties("named", name_list=names)
        else:
            props = member.get_properties(mode)
        yield response_bytes(member.get_href(), props)
