"""The Nextcloud layer's place in the DAV middleware stack.

It enriches the one WsgiDAV surface for Nextcloud clients and never re-implements a DAV
method. Per request it:

- answers ``POST /remote.php/dav/bulk`` (bulk upload, ``oxidav.nextcloud.bulk``);
- installs the ``oc:``/``nc:`` PROPFIND enrichers into the environ
(docs/architecture.md#request-path), which the
  ``oc:filter-files`` REPORT and SEARCH (``oxidav.nextcloud.search``) answer with too;
- checks an ``OC-Checksum`` on PUT while the body streams (mismatch: 400, nothing stored) and
  rejects a malformed ``X-OC-Mtime`` with 400;
- adds ``OC-FileId`` / ``OC-ETag`` / ``ETag`` / ``X-OC-MTime`` to write responses and the exact
  multistatus Content-Type (``oxidav.nextcloud.headers``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.environ import ENVIRON_ENRICHERS
from oxidav.nextcloud.bulk.endpoint import BULK_PATH, BulkUpload
from oxidav.nextcloud.checksums import (
    ChecksumError,
    ChecksumMismatch,
    VerifyingInput,
    parse_checksum,
)
from oxidav.nextcloud.context import nextcloud_context
from oxidav.nextcloud.enrichers import NodeEnricher
from oxidav.nextcloud.headers import InvalidMtime, finish_headers, parse_mtime
from oxidav.nextcloud.push.endpoint import PushEndpoint
from oxidav.nextcloud.push.protocol import PUSH_ROOT
from oxidav.urls import UPLOADS

log = logging.getLogger("oxidav.nextcloud")


def _content_length(environ: dict[str, Any]) -> int | None:
    raw = str(environ.get("CONTENT_LENGTH", "")).strip()
    return int(raw) if raw.isdigit() else None


#: Key in the ``oxidav`` section of the WsgiDAV configuration: the ``ShareTypeSource``s that
#: ``oc:share-types`` lists besides user and group shares.
SHARE_TYPE_SOURCES = "share_type_sources"


class NextcloudMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        self.context = nextcloud_context(config["oxidav"]["services"])
        self.instance_id = self.context.settings.instance_id
        sources = config["oxidav"].get(SHARE_TYPE_SOURCES, ())
        self.enrichers = (NodeEnricher(self.context.db, self.instance_id, sources),)
        self.bulk = BulkUpload(self.context)
        self.push = PushEndpoint(self.context)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        method = environ.get("REQUEST_METHOD", "")
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        if path.rstrip("/") == BULK_PATH:
            yield from self.bulk(environ, start_response)
            return
        if path.startswith(PUSH_ROOT + "/"):
            yield from self.push(environ, start_response)
            return
        environ[ENVIRON_ENRICHERS] = self.enrichers
        try:
            mtime = parse_mtime(environ.get("HTTP_X_OC_MTIME"))
        except InvalidMtime as exc:
            raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
        # Chunk PUTs are not checked one by one: the whole file's checksum comes with the
        # final MOVE of .file and is checked on the assembled content.
        if method == "PUT" and environ.get("HTTP_OC_CHECKSUM") and not path.startswith(UPLOADS):
            self._verify_body(environ)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if exc_info is None:
                finish_headers(environ, status, headers, self.context.db, self.instance_id, mtime)
            return start_response(status, headers, exc_info)

        try:
            result: Iterable[bytes] = self.next_app(environ, start)
            yield from result
        except ChecksumMismatch as exc:
            log.warning("upload rejected: %s (%s)", exc, path)
            raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None

    @staticmethod
    def _verify_body(environ: dict[str, Any]) -> None:
        try:
            kind, digest = parse_checksum(environ["HTTP_OC_CHECKSUM"])
        except ChecksumError as exc:
            # An algorithm we do not know is stored as sent but cannot be checked; a known
            # algorithm with a malformed digest is a client error.
            if ":" in environ["HTTP_OC_CHECKSUM"] and "hexadecimal" in str(exc):
                raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
            return
        environ["wsgi.input"] = VerifyingInput(
            environ["wsgi.input"], kind, digest, _content_length(environ)
        )
