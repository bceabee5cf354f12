"""oxidav: a WebDAV / CalDAV / CardDAV server toolkit on WsgiDAV, Nextcloud-client compatible.

Public API: ``make_app(settings)`` returns the WSGI application; ``Settings`` and
``load_settings`` configure it; the providers in ``oxidav.providers`` can be mounted in any
WsgiDAV configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oxidav.settings import Settings, load_settings
from oxidav.version import __version__

if TYPE_CHECKING:
    from oxidav.app import make_app


def __getattr__(name: str) -> Any:
    # make_app pulls in WsgiDAV and every provider; importing it lazily keeps `oxidav user …`
    # and the other small commands quick to start.
    if name == "make_app":
        from oxidav.app import make_app

        return make_app
    raise AttributeError(name)


__all__ = ["Settings", "__version__", "load_settings", "make_app"]
