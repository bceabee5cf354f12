"""Request plumbing of the text-object writes (PUT, DELETE, COPY, MOVE) of CalDAV and CardDAV.

WsgiDAV's own PUT ignores ``If-Match`` on a missing target and commits a short body
(docs/wsgidav.md#request-bodies), so the rooms read the request themselves: ``read_body`` counts the
body against ``Content-Length`` (``Transfer-Encoding: chunked`` wins, RFC 9112 §6.3) and
bounds it by the room's size limit; ``entity_tags`` reads ``If-Match`` / ``If-None-Match``
(RFC 9110 §13.1.1-2) for the store, which checks them in the write's own transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_CONFLICT, DAVError

StartResponse = Callable[..., Any]
CollectionT = TypeVar("CollectionT")
READ_BLOCK = 64 * 1024
#: The longest object name (one path segment) a PUT, COPY or MOVE may create.
MAX_OBJECT_NAME = 255


def entity_tags(header: str | None) -> tuple[str, ...] | None:
    """An ``If-Match`` / ``If-None-Match`` value as unquoted entity tags (``*`` kept);
    a weak tag compares by its opaque part, as WsgiDAV does. None: header absent."""
    if header is None:
        return None
    tags = []
    for part in header.split(","):
        tag = part.strip()
        if tag.startswith("W/"):
            tag = tag[2:]
        tag = tag.strip('"')
        if tag:
            tags.append(tag)
    return tuple(tags)


def media_type(header: str) -> tuple[str, str]:
    """(media type, charset) of a Content-Type header, both lower-case; charset "" if none."""
    media, *params = (part.strip() for part in header.split(";"))
    charset = ""
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip('"').lower()
    return media.lower(), charset


def check_put(
    environ: dict[str, Any],
    collection: CollectionT | None,
    name: str,
    *,
    container: str,
    member: str,
) -> CollectionT:
    """The checks before a PUT reads its body: the ``container`` exists (409, RFC 4918
    §9.7.1; returned), the ``member`` name is usable, and the body is neither a range nor
    encoded."""
    if collection is None:
        raise DAVError(HTTP_CONFLICT, f"the {container} does not exist")
    if not name or len(name) > MAX_OBJECT_NAME:
        raise DAVError(HTTP_BAD_REQUEST, f"invalid {member} name")
    if "HTTP_CONTENT_RANGE" in environ or "HTTP_CONTENT_ENCODING" in environ:
        raise DAVError(HTTP_BAD_REQUEST, "Content-Range / Content-Encoding are not supported")
    return collection


def read_body(environ: dict[str, Any], limit: int, too_large: Callable[[str], Exception]) -> bytes:
    """The request body, at most ``limit`` bytes (``too_large(message)`` is raised beyond),
    exactly ``Content-Length`` bytes when that is given (400 for a short body)."""
    stream = environ["wsgi.input"]
    header = (environ.get("CONTENT_LENGTH") or "").strip()
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    if header and not chunked:
        try:
            length = int(header)
        except ValueError:
            raise DAVError(HTTP_BAD_REQUEST, "invalid Content-Length") from None
        if length > limit:
            raise too_large(f"the body has {length} bytes; at most {limit} are allowed")
        chunks: list[bytes] = []
        remaining = length
        while remaining > 0:
            chunk = stream.read(min(remaining, READ_BLOCK))
            if not chunk:
                raise DAVError(HTTP_BAD_REQUEST, "the body is shorter than its Content-Length")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    if not chunked:
        return b""
    chunks = []
    size = 0
    while True:
        chunk = stream.read(READ_BLOCK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise too_large(f"the body exceeds {limit} bytes")
        chunks.append(chunk)


def empty_response(
    start_response: StartResponse, status: str, headers: list[tuple[str, str]] | None = None
) -> list[bytes]:
    """A response without a body (WsgiDAV's status responses carry an HTML page)."""
    start_response(status, [*(headers or []), ("Content-Length", "0")])
    return [b""]
