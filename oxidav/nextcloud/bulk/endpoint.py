"""``POST /remote.php/dav/bulk``: many small files in one request
(docs/nextcloud-protocol.md#uploads).

Each part carries ``X-File-Path`` (relative to the user's files root), ``X-File-MD5`` (hex of
the part body), ``X-File-Mtime`` (or ``X-OC-Mtime``) and ``Content-Length``. Parts are ingested
through the blob chain one after another as the body streams in (the MD5 is computed during
ingest); then every file whose MD5 matched is written with ``oxidav.tree.write_file`` in one
transaction. The reply is 200 with a JSON object keyed by exactly the ``X-File-Path`` sent:
``{"error": false, "etag", "fileid", "permissions", "X-OC-MTime"}`` or
``{"error": true, "message"}``. A bad MD5 or path fails that file only; a body that is not
well-formed multipart fails the request with 400 (and a logged reason).

Each path is placed by ``oxidav.authz.writes`` before its body is read: a path below a share
mounted in the uploader's tree lands in the owner's tree (the owner's quota and etags), and a
path the uploader may not write fails that file only (``"403: …"``, or ``"404: …"`` where a
403 would reveal that something exists), its body skipped, as Nextcloud answers per file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_METHOD_NOT_ALLOWED, DAVError

from oxidav.authz.authn.principal import Principal
from oxidav.authz.writes import RequestWrites, WriteGate
from oxidav.blobs import IncompleteContentError, StoredContent
from oxidav.environ import principal_of
from oxidav.nextcloud.bulk.multipart import MultipartError, MultipartReader, Part, boundary_of
from oxidav.nextcloud.checksums import format_checksum
from oxidav.nextcloud.enrichers import oc_id, permissions_for
from oxidav.nextcloud.headers import InvalidMtime, parse_mtime
from oxidav.storage_failures import storage_failure
from oxidav.tree import TreeError, normalize_path, write_file
from oxidav.urls import DAV_ROOT, FILES

if TYPE_CHECKING:
    from oxidav.nextcloud.context import NextcloudContext

log = logging.getLogger("oxidav.nextcloud")

BULK_PATH = f"{DAV_ROOT}/bulk"

Result = dict[str, Any]


@dataclass
class _Upload:
    """A part whose content is stored and waits to be written to the tree."""

    key: str
    #: The tree that receives the file (the uploader's, or a share's owner's) and the path there.
    owner_id: int
    path: str
    content: StoredContent
    mtime: datetime | None
    checksum: str | None


def _error(message: str) -> Result:
    return {"error": True, "message": message}


class BulkUpload:
    def __init__(self, context: NextcloudContext) -> None:
        self.context = context
        self.writes = WriteGate(context.db, context.settings.share_folder)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            raise DAVError(HTTP_METHOD_NOT_ALLOWED, "bulk upload takes POST")
        principal = principal_of(environ)
        if not isinstance(principal, Principal):
            raise DAVError(401)
        try:
            boundary = boundary_of(environ.get("CONTENT_TYPE", ""))
        except MultipartError as exc:
            log.warning("bulk upload rejected: %s", exc)
            raise DAVError(HTTP_BAD_REQUEST, f"bad multipart: {exc}") from None
        raw_length = str(environ.get("CONTENT_LENGTH", "")).strip()
        limit = int(raw_length) if raw_length.isdigit() else None
        reader = MultipartReader(environ["wsgi.input"], boundary, limit)
        results: dict[str, Result] = {}
        uploads: list[_Upload] = []
        writes = self.writes.request(environ, principal)
        try:
            for part in reader.parts():
                self._receive(part, writes, results, uploads)
        except (MultipartError, IncompleteContentError) as exc:
            log.warning("bulk upload from user %r rejected: %s", principal.username, exc)
            reader.drain()
            raise DAVError(HTTP_BAD_REQUEST, f"bad multipart: {exc}") from None
        environ["wsgidav.all_input_read"] = 1
        self._write(environ, uploads, results)
        body = json.dumps(results, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/json; charset=utf-8"),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]

    def _receive(
        self, part: Part, writes: RequestWrites, results: dict[str, Result], uploads: list[_Upload]
    ) -> None:
        """Place one part, then ingest its body (a part that fails early is skipped unread)."""
        key = part.headers.get("x-file-path")
        if not key:
            raise MultipartError("a part has no X-File-Path")
        try:
            path = normalize_path(key)
            mtime = parse_mtime(part.headers.get("x-file-mtime") or part.headers.get("x-oc-mtime"))
        except (TreeError, InvalidMtime) as exc:
            results[key] = _error(str(exc))
            return
        if not path:
            results[key] = _error("cannot write the root folder")
            return
        place = writes.place(f"{FILES}/{writes.principal.username}{path}")
        decision = place.verdict.decision
        if not decision.allowed:
            results[key] = _error(f"{decision.status}: {decision.reason}")
            return
        try:
            content = self.context.chain.ingest(part.body, expected_length=part.length, md5=True)
        except Exception as exc:
            full = storage_failure(exc)
            if full is None or full.status != 507:
                raise
            # Nothing of this file was committed; the reader skips the rest of its body.
            log.error("bulk upload of %r answered 507: %s", key, full.reason)
            results[key] = _error(f"507: {full.status_line}")
            return
        declared = part.headers.get("x-file-md5", "").strip().lower()
        if not declared:
            results[key] = _error("X-File-MD5 header is missing")
            return
        if content.md5 != declared:
            results[key] = _error(f"MD5 mismatch: declared {declared}, content has {content.md5}")
            return
        checksum = format_checksum("MD5", declared)
        uploads.append(_Upload(key, place.owner_id, place.tree_path, content, mtime, checksum))

    def _write(
        self, environ: dict[str, Any], uploads: list[_Upload], results: dict[str, Result]
    ) -> None:
        if not uploads:
            return
        settings = self.context.settings
        with self.context.db.write() as session:
            for upload in uploads:
                try:
                    written = write_file(
                        session,
                        self.context.chain,
                        upload.owner_id,
                        upload.path,
                        upload.content,
                        mtime=upload.mtime,
                        checksums=upload.checksum,
                        default_quota_bytes=settings.default_quota_bytes,
                        expire_trash=True,
                    )
                except TreeError as exc:
                    # write_file raises before it changes anything, so the batch goes on.
                    results[upload.key] = _error(f"{exc.status}: {exc}")
                    continue
                node = written.node
                results[upload.key] = {
                    "error": False,
                    "etag": f'"{node.etag}"',
                    "fileid": oc_id(node.id, settings.instance_id),
                    "permissions": permissions_for(node, environ),
                }
                if upload.mtime is not None:
                    results[upload.key]["X-OC-MTime"] = "accepted"
