"""One INFO line per request (logger ``oxidav.access``), space-separated fields::

    METHOD PATH STATUS 12.3ms user=NAME addr=CLIENT bytes=SENT in=RECEIVED id=ENVIRON_REQUEST_ID

``PATH`` is the request path (percent-decoded, UTF-8), ``STATUS`` the status code ("-" when
no answer started), ``bytes`` the body bytes the app handed to the server, ``in`` the request
body bytes read from the client while the request was served (a rest the server drained
after the answer included; a chunked body's framing too), ``id`` the request id
(``oxidav.response_guard``; also in the answer's ``X-Request-ID``).
The record also carries the same values, unescaped, as a dict in its ``access`` attribute
(``oxidav.observability.logs`` writes them as JSON keys).

Invariants: no field contains a space, a control or a non-printable character — such
characters (and ``\\``) are written as ``\\xNN`` / ``\\uNNNN`` escapes, so a path with ``%0a``
cannot start a line of its own. Secrets in URLs are masked to their first four characters and
``…``: public-link tokens (``/s/<token>``, ``/public.php/dav/files/<token>``, and the user
name of ``/public.php/webdav``, which is the token) and login-flow tokens
(``/index.php/login/v2/flow/<token>``).

The outermost layer of the app, so the time includes everything, and the line is written when
the response body has been sent (or the client went away). The same layer feeds the request
metrics (``oxidav.observability.metrics``) when it has them. While the logger is set above
INFO and there are no metrics the layer steps aside (checked per request, so a level changed at
run time takes effect).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from oxidav import environ as environ_keys
from oxidav.environ import ENVIRON_REQUEST_ID, base_path_of
from oxidav.nextcloud.login_flow import LOGIN_V2
from oxidav.observability.logs import ACCESS_FIELDS
from oxidav.observability.metrics import Metrics
from oxidav.origin import client_address
from oxidav.urls import PUBLIC_DAV_FILES, PUBLIC_SHARE, PUBLIC_WEBDAV

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
    name = environ_keys.username_of(environ) or environ.get("wsgidav.auth.user_name")
    if not name:
        return "-"
    if path == PUBLIC_WEBDAV or path.startswith(PUBLIC_WEBDAV + "/"):
        return mask_token(str(name))  # the link's token is its Basic user name
    return str(name)


def received_bytes(body: Any, content_length: str) -> int:
    """The request body bytes read from cheroot's ``wsgi.input`` (0 when it cannot tell)."""
    remaining = getattr(body, "remaining", None)  # a Content-Length body: what is left
    if isinstance(remaining, int):
        try:
            return max(0, int(content_length) - remaining)
        except ValueError:
            return 0
    read = getattr(body, "bytes_read", 0)  # a chunked body: what was read, framing included
    return read if isinstance(read, int) else 0


def access_fields(
    environ: WSGIEnvironment, status: str, millis: float, sent: int, received: int = 0
) -> dict[str, Any]:
    """The values of an access line (unescaped; secrets in the path masked)."""
    inner = _text(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""))
    return {
        "method": str(environ.get("REQUEST_METHOD", "-")),
        "path": base_path_of(environ) + mask_path(inner),
        "status": status,
        "duration_ms": round(millis, 1),
        "user": _text(_user(environ, inner)),
        "addr": client_address(environ) or "-",
        "bytes_out": sent,
        "bytes_in": received,
        "request_id": str(environ.get(ENVIRON_REQUEST_ID, "-")),
    }


def format_line(fields: dict[str, Any]) -> str:
    return " ".join(
        [
            escape_field(fields["method"]),
            escape_field(fields["path"]),
            escape_field(fields["status"]),
            f"{fields['duration_ms']:.1f}ms",
            "user=" + escape_field(fields["user"]),
            "addr=" + escape_field(fields["addr"]),
            f"bytes={fields['bytes_out']}",
            f"in={fields['bytes_in']}",
            "id=" + escape_field(fields["request_id"]),
        ]
    )


def access_line(
    environ: WSGIEnvironment, status: str, millis: float, sent: int, received: int = 0
) -> str:
    return format_line(access_fields(environ, status, millis, sent, received))


class AccessLog:
    def __init__(self, app: WSGIApplication, metrics: Metrics | None = None) -> None:
        self.app = app
        self.metrics = metrics

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        logging_on = log.isEnabledFor(logging.INFO)
        if not logging_on and self.metrics is None:
            # Nothing would be written: no timing, no status capture, no wrapping generator.
            return self.app(environ, start_response)
        started = time.perf_counter()
        status_holder: list[str] = []
        body_input = environ.get("wsgi.input")

        def _start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            status_holder.append(status)
            return start_response(status, headers, exc_info)

        return self._logged(
            environ,
            self.app(environ, _start_response),
            status_holder,
            started,
            body_input,
            logging_on,
        )

    def _logged(
        self,
        environ: WSGIEnvironment,
        body: Iterable[bytes],
        status_holder: list[str],
        started: float,
        body_input: Any,
        logging_on: bool,
    ) -> Iterator[bytes]:
        sent = 0
        counted = None
        if self.metrics is not None:
            counted = self.metrics.for_method(str(environ.get("REQUEST_METHOD", "")))
            counted.started()
        try:
            for piece in body:
                sent += len(piece)
                yield piece
        finally:
            try:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
            finally:
                status = status_holder[-1].split(" ", 1)[0] if status_holder else "-"
                seconds = time.perf_counter() - started
                received = received_bytes(body_input, environ.get("CONTENT_LENGTH") or "0")
                if counted is not None:
                    counted.finished(status, seconds, received, sent)
                if logging_on:
                    fields = access_fields(environ, status, seconds * 1000, sent, received)
                    extra = {ACCESS_FIELDS: fields, "request_id": fields["request_id"]}
                    log.info("%s", format_line(fields), extra=extra)
