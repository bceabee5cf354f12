"""The Nextcloud layer's place in the DAV middleware stack.

It enriches the one WsgiDAV surface for Nextcloud clients — OC-* response headers, the PROPFIND
enrichment plug-in, upload and bulk endpoints — and never re-implements a DAV method. Until
that room is built it passes every request through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wsgidav.mw.base_mw import BaseMiddleware


class NextcloudMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        result: Iterable[bytes] = self.next_app(environ, start_response)
        return result
