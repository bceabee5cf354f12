"""One INFO line per request (logger ``oxidav.access``), space-separated fields::

    METHOD PATH STATUS 12.3ms user=NAME addr=CLIENT bytes=SENT id=REQUEST_ID

``PATH`` is the request path (percent-decoded, UTF-8), ``STATUS`` the status code ("-" when
no answer started), ``bytes`` the body bytes the app handed to the server, ``id`` the request
id (``oxidav.response_guard``; also in the answer's ``X-Request-ID``).

Invariants: no field contains a space, a control or a non-printable character — such
characters (and ``\\``) are written as ``\\xNN`` / ``\\uNNNN`` escapes, so a path with ``%0a``
cannot start a line of its own. Secrets in URLs are masked to their first four characters and
``…``: public-link tokens (``/s/<token>``, ``/public.php/dav/files/<token>``, and the user
name of ``/public.php/webdav``, which is the token) and login-flow tokens
(``/index.php/login/v2/flow/<token>``).

The outermost layer of the app, so the time includes everything, and the line is written when
the response body has been sent (or the client went away). While the logger is set above INFO
the layer steps aside (checked per request, so a level changed at run time takes effect).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from oxidav.nextcloud.login_flow import LOGIN_V2
from oxidav.origin import client_address
from oxidav.providers.urls import PUBLIC_DAV_FILES, PUBLIC_SHARE, PUBLIC_WEBDAV
from oxidav.response_guard import REQUEST_ID

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.access")

#: Paths whose next segment is a secret token.
TOKEN_PREFIXES = (PUBLIC_SHARE + "/", PUBLIC_DAV_FILES + "/", LOGIN_V2 + "/flow/")
#: How much of a masked token is kept.
TOKEN_KEPT = 4


def mask_token(token: str) -> str:
    return token if not token else token[:TOKEN_KEPT] + "…"


def mask_path(path: str) -> str:
    """``path`` with the token segment of a public-link or login-flow URL masked."""
    for prefix in TOKEN_PREFIXES:
        if path.startswith(prefix):
            token, slash, rest = path[len(prefix) :].partition("/")
            return prefix + mask_token(token) + slash + rest
    return path


def escape_field(value: str) -> str:
    """``value`` with spaces, ``\\``, control and non-printable characters escaped."""
    if value.isprintable() and " " not in value and "\\" not in value:
        return value
    out = []
    for char in value:
        if char == "\\":
            out.append("\\\\")
        elif char.isprintable() and char != " ":
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return "".join(out)


def _text(wsgi_string: str) -> str:
    """A WSGI (ISO-8859-1) string as the UTF-8 text it carries; kept as is if it is not."""
    try:
        return wsgi_string.encode("iso-8859-1").decode("utf-8")
    except UnicodeError:
        return wsgi_string


def _user(environ: WSGIEnvironment, path: str) -> str:
    # The authenticated principal, also when acting in a sharer's tree (authz).
    name = getattr(environ.get("oxidav.principal"), "username", None) or environ.get(
        "wsgidav.auth.user_name"
    )
    if not name:
        return "-"
    if path == PUBLIC_WEBDAV or path.startswith(PUBLIC_WEBDAV + "/"):
        return mask_token(str(name))  # the link's token is its Basic user name
    return str(name)


def access_line(environ: WSGIEnvironment, status: str, millis: float, sent: int) -> str:
    path = _text(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""))
    fields = [
        escape_field(str(environ.get("REQUEST_METHOD", "-"))),
        escape_field(mask_path(path)),
        escape_field(status),
        f"{millis:.1f}ms",
        "user=" + escape_field(_text(_user(environ, path))),
        "addr=" + escape_field(client_address(environ) or "-"),
        f"bytes={sent}",
        "id=" + escape_field(str(environ.get(REQUEST_ID, "-"))),
    ]
    return " ".join(fields)


class AccessLog:
    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not log.isEnabledFor(logging.INFO):
            # Nothing would be written: no timing, no status capture, no wrapping generator.
            return self.app(environ, start_response)
        started = time.perf_counter()
        status_holder: list[str] = []

        def _start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            status_holder.append(status)
            return start_response(status, headers, exc_info)

        return self._logged(environ, self.app(environ, _start_response), status_holder, started)

    def _logged(
        self,
        environ: WSGIEnvironment,
        body: Iterable[bytes],
        status_holder: list[str],
        started: float,
    ) -> Iterator[bytes]:
        sent = 0
        try:
            for piece in body:
                sent += len(piece)
                yield piece
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
            status = status_holder[-1].split(" ", 1)[0] if status_holder else "-"
            millis = (time.perf_counter() - started) * 1000
            log.info("%s", access_line(environ, status, millis, sent))
