"""``OxiErrorPages``: the first middleware of oxidav's WsgiDAV stacks, in place of WsgiDAV's
``ErrorPrinter``: turns a ``DAVError`` or an exception into an answer that tells the client
what it needs and no more.

- 4xx: ``text/plain``, the status line and the error's reason (``context_info``), or the
  DAV error XML of its pre-/postcondition. No source exception, no server footer.
- 5xx: the DAV error XML of a precondition (RFC 4331's ``quota-not-exceeded``: nothing in it
  but the condition's name), else the status line and the request id
  (``oxidav.response_guard.error_body``). An exception is logged with its traceback and the
  request id; its text never reaches the client.
- 204 / 304: no body.

An exception raised after the answer started is not answered again: it goes up to
``ResponseGuard``, which logs it and has the connection closed.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator
from typing import Any

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_FORBIDDEN,
    HTTP_INTERNAL_ERROR,
    HTTP_NO_CONTENT,
    HTTP_NOT_MODIFIED,
    DAVError,
    get_http_status_string,
)
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.environ import ENVIRON_CLEAN_ERROR_BODY, ENVIRON_REQUEST_ID
from oxidav.response_guard import error_body, error_headers
from oxidav.storage_failures import storage_failure

log = logging.getLogger("oxidav.errors")


class OxiErrorPages(BaseMiddleware):  # type: ignore[misc]
    def is_disabled(self) -> bool:
        return False

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        sub_start_response = util.SubAppStartResponse()
        started = False
        try:
            app_iter = self.next_app(environ, sub_start_response)
            try:
                for piece in app_iter:
                    if not started:
                        started = True
                        start_response(
                            sub_start_response.status,
                            sub_start_response.response_headers,
                            sub_start_response.exc_info,
                        )
                    yield piece
            finally:
                close = getattr(app_iter, "close", None)
                if close is not None:
                    close()
            if not started:
                start_response(
                    sub_start_response.status,
                    sub_start_response.response_headers,
                    sub_start_response.exc_info,
                )
            return
        except DAVError as error:
            if started:
                raise
            failure = error
        except Exception as exc:
            if started:
                raise
            if isinstance(exc, OSError) and exc.errno == errno.EACCES:
                failure = DAVError(HTTP_FORBIDDEN)
            else:
                failure = _failure(environ, exc)
        yield from _answer(environ, start_response, failure)


def _failure(environ: dict[str, Any], exc: Exception) -> DAVError:
    """507 / 503 for a storage failure (its reason logged), else a logged 500."""
    storage = storage_failure(exc)
    if storage is None:
        return _internal_error(environ, exc)
    return DAVError(storage.status, storage.reason, add_headers=storage.headers)


def _internal_error(environ: dict[str, Any], exc: Exception) -> DAVError:
    log.error(
        "request %s: %s %s failed",
        environ.get(ENVIRON_REQUEST_ID, "-"),
        environ.get("REQUEST_METHOD"),
        environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
        exc_info=exc,
    )
    return DAVError(HTTP_INTERNAL_ERROR, src_exception=exc)


def _answer(environ: dict[str, Any], start_response: Any, error: DAVError) -> Iterator[bytes]:
    status = get_http_status_string(error)
    extra: list[tuple[str, str]] = list(error.add_headers or [])
    if error.value in (HTTP_NOT_MODIFIED, HTTP_NO_CONTENT):
        start_response(status, [("Content-Length", "0"), *extra])
        return
    if error.err_condition is not None:
        content_type, body = error.get_response_page()  # the condition's XML only
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    elif error.value >= 500:
        if error.src_exception is None:
            log.error(
                "request %s: %s %s answered %s: %s",
                environ.get(ENVIRON_REQUEST_ID, "-"),
                environ.get("REQUEST_METHOD"),
                environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
                status,
                error.context_info,
            )
        body = error_body(status, environ.get(ENVIRON_REQUEST_ID, "-"))
        headers = error_headers(body)
    else:
        reason = f": {error.context_info}" if error.context_info else ""
        body = f"{status}{reason}\n".encode()
        headers = error_headers(body)
    if error.value >= 500:
        environ[ENVIRON_CLEAN_ERROR_BODY] = True
    if environ.get("REQUEST_METHOD") == "HEAD" or not error.add_body:
        body = b""
        headers = [(n, v) for n, v in headers if n != "Content-Length"]
        headers.append(("Content-Length", "0"))
    start_response(status, [*headers, *extra])
    yield body
