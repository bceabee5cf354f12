"""The request resolver that builds oxidav's RequestServer (WsgiDAV hard-codes its own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wsgidav.dav_error import HTTP_NOT_FOUND, DAVError
from wsgidav.request_resolver import RequestResolver

from oxidav.providers.request_server import OxiRequestServer


class OxiRequestResolver(RequestResolver):  # type: ignore[misc]
    """Must be the last entry of the middleware stack."""

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        if environ["REQUEST_METHOD"] == "OPTIONS" and environ["PATH_INFO"] == "*":
            yield from super().__call__(environ, start_response)
            return
        provider = environ["wsgidav.provider"]
        if provider is None:
            raise DAVError(HTTP_NOT_FOUND, f"No resource at {environ['PATH_INFO']!r}")
        app_iter = OxiRequestServer(provider)(environ, start_response)
        yield from app_iter
        close = getattr(app_iter, "close", None)
        if close is not None:
            close()
