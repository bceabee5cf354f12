"""``base_path``: oxidav served below a path prefix (``https://example.org/cloud/…``).

``BasePath``, a layer of the outer stack, takes the prefix off every request, so that below it
every path oxidav reads is the same as without one: ``PATH_INFO`` and the ``Destination``
header's path start with ``/remote.php/…``, ``/ocs/…``, ``/s/…``. What goes out carries the
prefix back: WsgiDAV's hrefs and oxidav's own (``oxidav.urls``) through the providers'
``mount_path`` (``MountedDavApp`` and ``OxiRequestServer`` let WsgiDAV's COPY / MOVE work
with one), absolute URLs
through ``public_base`` (``oxidav.origin``), paths of the link pages and redirects through
``oxidav.environ.base_path_of``.

Invariants: a request outside the prefix is answered 404 before any route sees it; a
``Destination`` outside it is 502 (RFC 4918 §9.8.5: another server). The prefix is ASCII
without reserved characters, so its raw and percent-encoded spellings are the same.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from wsgidav.wsgidav_app import WsgiDAVApp

from oxidav.environ import ENVIRON_BASE_PATH
from oxidav.origin import client_address

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.requests")

_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


def base_path_problem(value: str) -> str | None:
    """Why ``value`` cannot be the ``base_path`` setting (None: it can)."""
    if value in ("", "/"):
        return None
    if not value.startswith("/"):
        return "must start with / (e.g. /cloud), or be empty"
    segments = value.strip("/").split("/")
    if any(not _SEGMENT.fullmatch(s) or s in (".", "..") for s in segments):
        return "must be a path of letters, digits and . _ ~ - (e.g. /cloud), or be empty"
    return None


def normalized(value: str) -> str:
    """The prefix a valid ``base_path`` setting names: ``""`` or ``/a/b`` (no trailing ``/``)."""
    return value.rstrip("/")


def _below(path: str, prefix: str) -> str | None:
    """``path`` without ``prefix``, or None when it is not below it."""
    if path == prefix:
        return "/"
    if path.startswith(prefix + "/"):
        return path[len(prefix) :]
    return None


def _answer(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    body = f"{status}: {text}\n".encode()
    start_response(
        status,
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
    )
    return [body]


class BasePath:
    """Takes ``prefix`` off ``PATH_INFO`` and off the ``Destination`` header."""

    def __init__(self, app: WSGIApplication, prefix: str) -> None:
        self.app = app
        self.prefix = normalized(prefix)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not self.prefix:
            return self.app(environ, start_response)
        path = _below(str(environ.get("PATH_INFO", "")), self.prefix)
        if path is None:
            log.info(
                "refused %s %r from %s: outside base_path %s",
                environ.get("REQUEST_METHOD", "-"),
                str(environ.get("PATH_INFO", ""))[:200],
                client_address(environ) or "-",
                self.prefix,
            )
            return _answer(start_response, "404 Not Found", f"this server is at {self.prefix}/")
        destination = environ.get("HTTP_DESTINATION")
        if destination:
            try:
                parts = urlsplit(str(destination))
            except ValueError:
                parts = None  # malformed: the handlers answer 400 with the reason
            if parts is not None:
                inner = _below(parts.path, self.prefix)
                if inner is None:
                    return _answer(
                        start_response, "502 Bad Gateway", "the Destination is not on this server"
                    )
                environ["HTTP_DESTINATION"] = urlunsplit(parts._replace(path=inner))
        environ["PATH_INFO"] = path
        environ[ENVIRON_BASE_PATH] = self.prefix
        return self.app(environ, start_response)


class MountedDavApp(WsgiDAVApp):  # type: ignore[misc]
    """WsgiDAV's application, mounted at its ``mount_path``: WsgiDAV resolves a COPY / MOVE
    Destination (which carries the mount path) with ``resolve_provider``, which knows only the
    share paths below it."""

    def resolve_provider(self, path: str) -> Any:
        if self.mount_path:
            inner = _below(path, self.mount_path)
            if inner is not None:
                path = inner
        return super().resolve_provider(path)
