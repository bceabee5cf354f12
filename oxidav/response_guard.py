"""``ResponseGuard``: the request id, clean 5xx answers and correct framing, for every answer.

Just inside the access log, around everything else:

- **Request id.** Each request gets one: the client's ``X-Request-ID`` when it is short and
  plain (``SANE_REQUEST_ID``), else a fresh random one. It is put in the environ
  (``ENVIRON_REQUEST_ID``), in the ``X-Request-ID`` header of the answer, in the access-log
  line, and in ``current_request_id`` for log records written while the request runs.
- **5xx.** A 5xx answer carries its status line and the request id, nothing else: an answer
  whose body was not made clean by ``oxidav.error_pages`` (``ENVIRON_CLEAN_ERROR_BODY``) has it
  replaced. An exception that escapes the app before anything was sent is logged with its
  traceback and the request id, and answered the same way.
- **Framing.** The answer is started only with its first body byte (or at its end), so a body
  that turns out shorter than its declared ``Content-Length`` with nothing sent yet is answered
  with ``Content-Length: 0`` and ``Connection: close``; one that breaks its length after bytes
  went out ends the connection (an exception for cheroot, which then closes it). A keep-alive
  client never waits for bytes that will not come, nor reads a body into its next answer.
  An answer that has no body (to HEAD, 204, 304) sends none, whatever the app yields.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from oxidav.environ import ENVIRON_CLEAN_ERROR_BODY, ENVIRON_REQUEST_ID
from oxidav.storage_failures import storage_failure

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.errors")

#: An incoming ``X-Request-ID`` that is kept (a proxy's); anything else gets a fresh id.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}\Z")
#: The id of the request the current thread serves ("-" outside one), for log records.
current_request_id: ContextVar[str] = ContextVar("oxidav_request_id", default="-")

_NO_BODY_STATUSES = frozenset({204, 304})
#: Headers of an app's 5xx answer that describe the body it no longer has.
_BODY_HEADERS = frozenset(
    {"content-length", "content-type", "content-encoding", "content-disposition", "etag"}
)


class MisframedResponse(RuntimeError):
    """An answer whose body broke its declared ``Content-Length`` after bytes were sent."""


def request_id_for(environ: WSGIEnvironment) -> str:
    incoming = environ.get("HTTP_X_REQUEST_ID", "")
    if SANE_REQUEST_ID.match(incoming):
        return str(incoming)
    return secrets.token_hex(8)


def error_body(status: str, request_id: str) -> bytes:
    """The whole body of a 5xx answer."""
    return f"{status}\nrequest id: {request_id}\n".encode()


def error_headers(body: bytes) -> list[tuple[str, str]]:
    return [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]


def _declared_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name.lower() == "content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class _Answer:
    """What the app asked ``start_response`` for, until it is passed on."""

    def __init__(self, environ: WSGIEnvironment, start_response: StartResponse) -> None:
        self.environ = environ
        self.start_response = start_response
        self.request_id: str = environ[ENVIRON_REQUEST_ID]
        self.status: str | None = None
        self.headers: list[tuple[str, str]] = []
        self.started = False
        self.declared: int | None = None

    def app_start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Any:
        if self.started:
            if exc_info:
                raise exc_info[1].with_traceback(exc_info[2])
            raise AssertionError("start_response called twice without exc_info")
        self.status, self.headers = status, list(headers)
        return self.write

    def write(self, data: bytes) -> None:
        """WSGI's ``write`` callable (unused by oxidav's apps, kept for the contract)."""
        self.begin()(data)

    @property
    def code(self) -> int:
        return int((self.status or "500")[:3])

    @property
    def has_body(self) -> bool:
        code = self.code
        return (
            self.environ.get("REQUEST_METHOD") != "HEAD"
            and code >= 200
            and code not in _NO_BODY_STATUSES
        )

    def needs_clean_error(self) -> bool:
        return self.code >= 500 and not self.environ.get(ENVIRON_CLEAN_ERROR_BODY)

    def begin(self, extra: list[tuple[str, str]] | None = None) -> Any:
        """Pass the answer's status and headers on (once)."""
        if self.status is None:
            raise AssertionError("the app sent a body before start_response")
        self.started = True
        self.declared = _declared_length(self.headers)
        headers = [*self.headers, *(extra or []), ("X-Request-ID", self.request_id)]
        return self.start_response(self.status, headers)

    def clean_error(self) -> list[bytes]:
        """Answer the (5xx) status with the status line and the request id only."""
        status = self.status or "500 Internal Server Error"
        body = error_body(status, self.request_id)
        kept = [(n, v) for n, v in self.headers if n.lower() not in _BODY_HEADERS]
        self.status, self.headers = status, [*kept, *error_headers(body)]
        self.begin()
        return [body] if self.has_body else []


class ResponseGuard:
    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        environ[ENVIRON_REQUEST_ID] = request_id_for(environ)
        return self._guarded(_Answer(environ, start_response))

    def _guarded(self, answer: _Answer) -> Iterator[bytes]:
        current_request_id.set(answer.request_id)
        body: Iterable[bytes] | None = None
        sent = 0
        try:
            body = self.app(answer.environ, answer.app_start_response)
            for piece in body:
                if not answer.started:
                    if answer.needs_clean_error():
                        _log_replaced(answer)
                        yield from answer.clean_error()
                        return
                    if not len(piece):
                        continue
                    answer.begin()
                if not answer.has_body:
                    continue  # HEAD, 204, 304: the status and headers only, whatever the app sent
                size = len(piece)
                declared = answer.declared
                if answer.has_body and declared is not None and sent + size > declared:
                    raise MisframedResponse(f"the body exceeds its Content-Length {declared}")
                sent += size
                yield piece
            if not answer.started:
                if answer.needs_clean_error():
                    _log_replaced(answer)
                    yield from answer.clean_error()
                    return
                declared = _declared_length(answer.headers)
                if answer.has_body and declared:
                    log.error(
                        "request %s: %s %s declared Content-Length %s and sent no body; "
                        "answered with an empty body and closed",
                        answer.request_id,
                        answer.environ.get("REQUEST_METHOD"),
                        answer.environ.get("PATH_INFO"),
                        declared,
                    )
                    answer.headers = [
                        (n, v) for n, v in answer.headers if n.lower() != "content-length"
                    ]
                    answer.begin([("Content-Length", "0"), ("Connection", "close")])
                    return
                answer.begin()
            elif answer.has_body and answer.declared is not None and sent < answer.declared:
                raise MisframedResponse(
                    f"the body ended after {sent} of its {answer.declared} declared bytes"
                )
        except Exception as exc:
            if answer.started:
                log.exception(
                    "request %s: %s %s failed after its answer started; closing the connection",
                    answer.request_id,
                    answer.environ.get("REQUEST_METHOD"),
                    answer.environ.get("PATH_INFO"),
                )
                raise
            storage = storage_failure(exc)
            if storage is not None:
                log.error(
                    "request %s: %s %s answered %s: %s",
                    answer.request_id,
                    answer.environ.get("REQUEST_METHOD"),
                    answer.environ.get("PATH_INFO"),
                    storage.status_line,
                    storage.reason,
                )
                answer.status, answer.headers = storage.status_line, storage.headers
            else:
                log.exception(
                    "request %s: %s %s failed",
                    answer.request_id,
                    answer.environ.get("REQUEST_METHOD"),
                    answer.environ.get("PATH_INFO"),
                )
                answer.status, answer.headers = "500 Internal Server Error", []
            yield from answer.clean_error()
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
            current_request_id.set("-")


def _log_replaced(answer: _Answer) -> None:
    log.error(
        "request %s: %s %s answered %s; its body was replaced by the request id",
        answer.request_id,
        answer.environ.get("REQUEST_METHOD"),
        answer.environ.get("PATH_INFO"),
        answer.status,
    )


__all__ = [
    "ENVIRON_CLEAN_ERROR_BODY",
    "ENVIRON_REQUEST_ID",
    "MisframedResponse",
    "ResponseGuard",
    "current_request_id",
    "error_body",
    "error_headers",
    "request_id_for",
]
