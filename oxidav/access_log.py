"""One INFO line per request: method, path, status, milliseconds, user.

The outermost layer of the app, so the time includes everything, and the line is written when
the response body has been sent (or the client went away). While the logger is set above INFO
the layer steps aside (checked per request, so a level changed at run time takes effect).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.access")


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
        try:
            yield from body
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
            status = status_holder[-1].split(" ", 1)[0] if status_holder else "-"
            path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
            log.info(
                "%s %s %s %.1fms user=%s",
                environ.get("REQUEST_METHOD", "-"),
                path,
                status,
                (time.perf_counter() - started) * 1000,
                # The authenticated principal, also when acting in a sharer's tree (authz).
                getattr(environ.get("oxidav.principal"), "username", None)
                or environ.get("wsgidav.auth.user_name")
                or "-",
            )
