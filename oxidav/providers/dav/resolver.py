"""The request resolver that builds oxidav's RequestServer (WsgiDAV hard-codes its own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wsgidav.dav_error import HTTP_NOT_FOUND, DAVError
from wsgidav.request_resolver import RequestResolver

from oxidav.providers.dav.deferred import DeferredProvider
from oxidav.providers.dav.request_server import DavExtensions, OxiRequestServer
from oxidav.providers.dav.xml_input import XmlInput

#: The ``WsgiDAVApp`` configuration key of the ``XmlInput`` (request bodies' limits).
XML_INPUT = "oxidav_xml_input"
#: The ``WsgiDAVApp`` configuration key of the ``DavExtensions`` (REPORTs, SEARCH).
DAV_EXTENSIONS = "oxidav_dav_extensions"


class OxiRequestResolver(RequestResolver):  # type: ignore[misc]
    """Must be the last entry of the middleware stack. Request bodies are read with the
    configuration's ``XML_INPUT`` (defaults if absent); REPORT and SEARCH are answered by its
    ``DAV_EXTENSIONS`` (none if absent)."""

    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        self.xml_input: XmlInput = config.get(XML_INPUT) or XmlInput()
        self.extensions: DavExtensions = config.get(DAV_EXTENSIONS) or DavExtensions()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        if environ["REQUEST_METHOD"] == "OPTIONS" and environ["PATH_INFO"] == "*":
            yield from super().__call__(environ, start_response)
            return
        provider = environ["wsgidav.provider"]
        if provider is None:
            raise DAVError(HTTP_NOT_FOUND, f"No resource at {environ['PATH_INFO']!r}")
        if isinstance(provider, DeferredProvider):  # the first request to its room
            provider = environ["wsgidav.provider"] = provider.provider_for(environ["wsgidav.app"])
        app_iter = OxiRequestServer(provider, self.xml_input, self.extensions)(
            environ, start_response
        )
        yield from app_iter
        close = getattr(app_iter, "close", None)
        if close is not None:
            close()
