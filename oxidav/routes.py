"""Routes that are not DAV, answered before authentication: discovery redirects and (from the
Nextcloud room) status.php and OCS. A route is a path prefix and a WSGI app; the first match
wins, everything else goes to the DAV app.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from oxidav.environ import base_path_of
from oxidav.urls import DAV_ROOT

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


class Router:
    def __init__(
        self, routes: Sequence[tuple[str, WSGIApplication]], fallback: WSGIApplication
    ) -> None:
        self.routes = list(routes)
        self.fallback = fallback
        #: (prefix, what a path below it starts with, app), worked out once.
        self._matchers = [(prefix, prefix.rstrip("/") + "/", app) for prefix, app in self.routes]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        for prefix, below, app in self._matchers:
            if path == prefix or path.startswith(below):
                return app(environ, start_response)
        return self.fallback(environ, start_response)


def well_known_redirect(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    """RFC 6764 §5: ``/.well-known/caldav`` and ``/.well-known/carddav`` point at the DAV root
    (below ``base_path``)."""
    location = base_path_of(environ) + DAV_ROOT + "/"
    start_response(
        "301 Moved Permanently",
        [("Location", location), ("Content-Length", "0"), ("Cache-Control", "no-cache")],
    )
    return [b""]


DISCOVERY_ROUTES: list[tuple[str, WSGIApplication]] = [
    ("/.well-known/caldav", well_known_redirect),
    ("/.well-known/carddav", well_known_redirect),
]
