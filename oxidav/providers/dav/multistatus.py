"""A ``DAV:multistatus`` answer written one ``DAV:response`` at a time (RFC 4918 §13).

WsgiDAV builds the whole multistatus as one lxml tree and serialises it to one ``bytes``: an
answer's memory is its size, twice over. Here each response is built and serialised on its own
(``response_bytes``, ``status_bytes``, ``element_bytes``: the same lxml calls, so the same bytes
as WsgiDAV's tree would hold; a response of ``DAV:`` properties with text values, the common
answer of sync-collection, is written directly as the same bytes) and ``send_multistatus``
sends the pieces as they come: an answer of up to ``BUFFER_LIMIT`` bytes in one piece with a
Content-Length, exactly as WsgiDAV would, a larger one without (chunked), produced as it is
sent. The caller's piece iterator decides how much it holds at once (reports load members in
small batches).

Invariants: nothing runs before ``start_response`` that the iterator has not already produced,
so an error in the first ``BUFFER_LIMIT`` bytes still becomes a normal error answer; an error
after the head was sent ends the connection with an unterminated body (detectably cut, never a
wrong complete answer).

``property_names`` reads the property names of a request's ``DAV:prop``, each once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any
from xml.sax.saxutils import escape as _escape

from lxml import etree
from wsgidav import util, xml_tools

#: Largest answer sent with a Content-Length (built whole); beyond it the answer is streamed.
BUFFER_LIMIT = 1 << 20
#: Responses are joined into pieces of about this size while streaming.
PIECE_BYTES = 64 << 10
CONTENT_TYPE = "application/xml; charset=utf-8"
XML_DECLARATION = b"<?xml version='1.0' encoding='UTF-8'?>\n"
OPEN = b'<D:multistatus xmlns:D="DAV:">'
CLOSE = b"</D:multistatus>"
#: What WsgiDAV sends for a multistatus without responses.
EMPTY = XML_DECLARATION + b'<D:multistatus xmlns:D="DAV:"/>'

PropList = list[tuple[str, Any]]


def property_names(prop: etree._Element) -> list[str]:
    """The Clark names of the properties a ``DAV:prop`` element asks for, each once, in order:
    a property named twice is answered once (comments and processing instructions skipped)."""
    return list(dict.fromkeys(child.tag for child in prop if isinstance(child.tag, str)))


def _inner(multistatus: etree._Element) -> bytes:
    """The serialised children of ``multistatus`` (as they appear inside WsgiDAV's tree)."""
    data: bytes = etree.tostring(multistatus, encoding="UTF-8", xml_declaration=False)
    assert data.startswith(OPEN) and data.endswith(CLOSE), data[:80]
    return data[len(OPEN) : -len(CLOSE)]


#: Text lxml writes as it is but for ``&``, ``<`` and ``>``; anything else (``\r``, which it
#: writes as a character reference, and what XML cannot hold) takes the lxml path.
_PLAIN_TEXT = re.compile(r"[\t\n\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
_DAV = "{DAV:}"


def _plain_response(href: str, props: PropList) -> bytes | None:
    """``response_bytes`` written directly, where every property is in ``DAV:`` and its value
    is text or empty (a sync-collection's getetag, say): the same bytes lxml would write, or
    None to take the lxml path."""
    for name, _value in props:
        if name[:6] != _DAV:
            return None  # calendar-data, address-data, oc: / nc: properties: the lxml path
    if not props or not _PLAIN_TEXT.fullmatch(href):
        return None
    parts = [f"<D:response><D:href>{_escape(href)}</D:href><D:propstat><D:prop>"]
    for name, value in props:
        local = name[len(_DAV) :]
        if value is None:
            parts.append(f"<D:{local}/>")
        elif isinstance(value, str) and _PLAIN_TEXT.fullmatch(value):
            parts.append(f"<D:{local}>{_escape(value)}</D:{local}>")
        else:
            return None
    parts.append("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>")
    return "".join(parts).encode("utf-8")


def response_bytes(href: str, props: PropList) -> bytes:
    """One ``DAV:response`` with a propstat per status (``util.add_property_response``)."""
    plain = _plain_response(href, props)
    if plain is not None:
        return plain
    multistatus = xml_tools.make_multistatus_el()
    util.add_property_response(multistatus, href, props)
    return _inner(multistatus)


def status_bytes(href: str, status: str, error: str | None = None) -> bytes:
    """A ``DAV:response`` with a bare status (RFC 4918 §14.24), optionally a ``DAV:error``
    naming the condition ``error``."""
    multistatus = xml_tools.make_multistatus_el()
    response = etree.SubElement(multistatus, "{DAV:}response")
    etree.SubElement(response, "{DAV:}href").text = href
    etree.SubElement(response, "{DAV:}status").text = status
    if error is not None:
        etree.SubElement(etree.SubElement(response, "{DAV:}error"), error)
    return _inner(multistatus)


def element_bytes(tag: str, text: str) -> bytes:
    """A text element directly inside the multistatus (e.g. RFC 6578's ``DAV:sync-token``)."""
    multistatus = xml_tools.make_multistatus_el()
    etree.SubElement(multistatus, tag).text = text
    return _inner(multistatus)


def _pieces(responses: Iterable[bytes]) -> Iterator[bytes]:
    """``responses`` joined into pieces of about ``PIECE_BYTES``."""
    batch: list[bytes] = []
    size = 0
    for response in responses:
        batch.append(response)
        size += len(response)
        if size >= PIECE_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


def take_up_to(pieces: Iterator[bytes], limit: int) -> tuple[list[bytes], int, bool]:
    """The first pieces of ``pieces`` until they hold more than ``limit`` bytes: (pieces,
    their size, whether that was all of them). An answer that fits is sent whole with a
    Content-Length; a larger one is streamed on from where this stopped."""
    taken: list[bytes] = []
    size = 0
    for piece in pieces:
        taken.append(piece)
        size += len(piece)
        if size > limit:
            return taken, size, False
    return taken, size, True


def send_multistatus(
    environ: dict[str, Any], start_response: Any, responses: Iterable[bytes]
) -> Iterable[bytes]:
    """Answer 207 with a multistatus holding ``responses`` (each a serialised child of it)."""
    pieces = _pieces(responses)
    buffered, _size, whole = take_up_to(pieces, BUFFER_LIMIT)
    if whole:
        body = XML_DECLARATION + OPEN + b"".join(buffered) + CLOSE if buffered else EMPTY
        start_response(
            "207 Multi-Status",
            [
                ("Content-Type", CONTENT_TYPE),
                ("Date", util.get_rfc1123_time()),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]
    start_response(
        "207 Multi-Status", [("Content-Type", CONTENT_TYPE), ("Date", util.get_rfc1123_time())]
    )
    return _streamed(buffered, pieces)


def _streamed(buffered: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    yield XML_DECLARATION + OPEN + b"".join(buffered)
    buffered.clear()
    yield from rest
    yield CLOSE
