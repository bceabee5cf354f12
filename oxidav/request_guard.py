"""``RejectBadPaths``: a request path that oxidav cannot route safely gets a clear 400 before
anything else; every other path reaches the routes with its dot segments resolved.

A WSGI server hands ``PATH_INFO`` over as bytes decoded with ISO-8859-1 (PEP 3333); every
oxidav route and WsgiDAV then re-decode it as UTF-8. A percent-encoded path that is not valid
UTF-8 (``/files/alice/%C3%28``) made that re-decoding raise inside WsgiDAV, after which the
server closed the connection without any answer. No resource can have such a name (names are
Unicode, NFC), so the request is refused here with 400 and a logged reason.

A path whose ``..`` segments climb above ``/`` (``/remote.php/dav/files/alice/x/%2e%2e/…``) is
refused the same way. WsgiDAV refuses it too, but from inside a generator, which drops the body
of its answer after declaring its length: the client waited for bytes that never came. Dot
segments that stay below ``/`` are resolved here (RFC 3986 §5.2.4, as WsgiDAV does), so the
Router and WsgiDAV see the same path and authorization is decided on the resolved one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from oxidav.origin import client_address

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.requests")


def _is_utf8(wsgi_string: str) -> bool:
    try:
        wsgi_string.encode("iso-8859-1").decode("utf-8")
    except UnicodeError:
        return False
    return True


def resolve_dot_segments(path: str) -> str | None:
    """``path`` with its ``.`` and ``..`` segments resolved, or None when a ``..`` climbs
    above ``/``. Other segments (empty ones too) are kept as they are."""
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    kept: list[str] = []
    for segment in segments[1:]:
        if segment == ".":
            continue
        if segment == "..":
            if not kept:
                return None
            kept.pop()
            continue
        kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")  # "/a/b/.." names the collection "/a/"
    return "/" + "/".join(kept)


def _refuse(
    environ: WSGIEnvironment, start_response: StartResponse, logged: str, answered: str
) -> list[bytes]:
    log.info(
        "refused %s %r from %s: %s",
        environ.get("REQUEST_METHOD", "-"),
        environ.get("PATH_INFO", ""),
        client_address(environ) or "-",
        logged,
    )
    body = f"400 Bad Request: {answered}\n".encode()
    start_response(
        "400 Bad Request",
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
    )
    return [body]


class RejectBadPaths:
    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not _is_utf8(path):
            return _refuse(
                environ,
                start_response,
                "the path is not UTF-8",
                "the request path is not valid UTF-8",
            )
        resolved = resolve_dot_segments(path)
        if resolved is None:
            reason = "the request path climbs above the root"
            return _refuse(environ, start_response, reason, reason)
        environ["PATH_INFO"] = resolved
        return self.app(environ, start_response)
