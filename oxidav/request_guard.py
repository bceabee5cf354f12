"""``RejectBadPaths``: a request whose path is not UTF-8 gets a clear 400 before anything else.

A WSGI server hands ``PATH_INFO`` over as bytes decoded with ISO-8859-1 (PEP 3333); every
oxidav route and WsgiDAV then re-decode it as UTF-8. A percent-encoded path that is not valid
UTF-8 (``/files/alice/%C3%28``) made that re-decoding raise inside WsgiDAV, after which the
server closed the connection without any answer. No resource can have such a name (names are
Unicode, NFC), so the request is refused here with 400 and a logged reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.requests")


def _is_utf8(wsgi_string: str) -> bool:
    try:
        wsgi_string.encode("iso-8859-1").decode("utf-8")
    except UnicodeError:
        return False
    return True


class RejectBadPaths:
    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if _is_utf8(path):
            return self.app(environ, start_response)
        log.info(
            "refused %s %r from %s: the path is not UTF-8",
            environ.get("REQUEST_METHOD", "-"),
            path,
            environ.get("REMOTE_ADDR", "-"),
        )
        body = b"400 Bad Request: the request path is not valid UTF-8\n"
        start_response(
            "400 Bad Request",
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
        )
        return [body]
