"""``MOVE uploads/<user>/<id>/.file`` with ``Destination: /remote.php/dav/files/<user>/<path>``:
assemble the chunks and make them the destination file (docs/nextcloud-protocol.md#uploads).

The chunks are concatenated as manifests (``BlobChain.concat``: no bytes copied again), checked
against ``OC-Total-Length`` (400 on a mismatch) and, when sent, ``OC-Checksum`` (400), then
written with ``oxidav.tree.write_file`` honouring ``If-Match`` / the ``If`` header's entity tag
/ ``If-None-Match: *`` / ``Overwrite: F`` (412), ``X-OC-Mtime`` and the quota (507); the same
transaction drops the session. The reply is 201 (new file) or 204, and the node is left in
the environ so the Nextcloud middleware adds ``OC-FileId``, ``OC-ETag``, ``ETag`` and
``X-OC-MTime: accepted``.

The destination is placed by ``oxidav.authz.writes`` (``destination_place``): below a share
mounted in the uploader's tree the file lands in the owner's tree (the owner's quota and
etags); where the uploader may not write, 403 (404 where a 403 would reveal the resource).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CREATED,
    HTTP_NO_CONTENT,
    HTTP_NOT_FOUND,
    DAVError,
)

from oxidav.authz.authn.principal import Principal
from oxidav.authz.writes import WritePlace
from oxidav.blobs import StoredContent
from oxidav.environ import ENVIRON_NODE, principal_of
from oxidav.nextcloud.checksums import ChecksumError, format_checksum, new_hasher, parse_checksum
from oxidav.nextcloud.context import NextcloudContext
from oxidav.nextcloud.headers import InvalidMtime, parse_mtime
from oxidav.nextcloud.uploads import sessions
from oxidav.nextcloud.uploads.sessions import UploadError
from oxidav.providers.files.context import dav_error
from oxidav.tree import QuotaExceeded, TreeError, write_file

if TYPE_CHECKING:
    from oxidav.nextcloud.uploads.provider import UploadsProvider

log = logging.getLogger("oxidav.nextcloud")

#: The virtual member of a session that stands for the assembled file.
ASSEMBLED = ".file"
_IF_ETAG = re.compile(r'\[\s*(?:W/)?"?([^"\]\s]+)"?\s*\]')


def destination_place(
    provider: UploadsProvider, environ: dict[str, Any], principal: Principal
) -> WritePlace:
    """Where the file named by ``Destination`` (absolute path or URL of a file below the
    caller's files, possibly inside a share mounted there) lands; DAVError if it may not."""
    raw = environ.get("HTTP_DESTINATION")
    if not raw:
        raise DAVError(HTTP_BAD_REQUEST, "missing Destination header")
    path = unquote(urlsplit(raw).path)
    place = provider.writes.request(environ, principal).place(path)
    decision = place.verdict.decision
    if not decision.allowed:
        raise DAVError(decision.status, decision.reason)
    if not place.tree_path:
        raise DAVError(HTTP_BAD_REQUEST, "Destination must be a file below files/<user>/")
    return place


def required_etag(environ: dict[str, Any]) -> str | None:
    """The entity tag the destination must still have: ``If-Match`` or the ``If`` header's."""
    match = str(environ.get("HTTP_IF_MATCH", "")).strip()
    if match and match != "*":
        return match.split(",")[0].strip().removeprefix("W/").strip('"')
    found = _IF_ETAG.search(str(environ.get("HTTP_IF", "")))
    return found.group(1) if found else None


def _verify(context: NextcloudContext, content: StoredContent | None, header: str) -> str | None:
    """Check ``OC-Checksum`` against the assembled content; the value to store, if any."""
    try:
        kind, digest = parse_checksum(header)
    except ChecksumError:
        return None
    hasher = new_hasher(kind)
    if content is not None:
        with context.chain.open(content.manifest_hash) as reader:
            for piece in reader.iter_range(0, content.size, 1 << 20):
                hasher.update(piece)
    if hasher.hexdigest() != digest:
        raise DAVError(HTTP_BAD_REQUEST, f"{kind} checksum mismatch on the assembled file")
    return format_checksum(kind, digest)


def finish_upload(
    provider: UploadsProvider, environ: dict[str, Any], start_response: Any
) -> Iterable[bytes]:
    context = provider.context
    principal = principal_of(environ)
    parts = [part for part in environ["PATH_INFO"].split("/") if part]
    if not isinstance(principal, Principal) or len(parts) != 3 or parts[0] != principal.username:
        raise DAVError(HTTP_NOT_FOUND)
    with context.db.read() as session:
        info = sessions.find_session(session, principal.user_id, parts[1])
    if info is None:
        raise DAVError(HTTP_NOT_FOUND, "no such upload session")
    place = destination_place(provider, environ, principal)
    try:
        mtime = parse_mtime(environ.get("HTTP_X_OC_MTIME"))
    except InvalidMtime as exc:
        raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
    raw_total = str(environ.get("HTTP_OC_TOTAL_LENGTH", "")).strip()
    if raw_total and not raw_total.isdigit():
        raise DAVError(HTTP_BAD_REQUEST, "invalid OC-Total-Length")
    total = int(raw_total) if raw_total else info.total_length
    try:
        content = sessions.assemble(context.db, context.chain, info.id, total)
    except UploadError as exc:
        raise DAVError(exc.status, str(exc)) from None
    checksum = None
    if environ.get("HTTP_OC_CHECKSUM"):
        checksum = _verify(context, content, environ["HTTP_OC_CHECKSUM"])
    require_absent = (
        environ.get("HTTP_IF_NONE_MATCH", "").strip() == "*"
        or environ.get("HTTP_OVERWRITE", "T").upper() == "F"
    )
    try:
        with context.db.write() as session:
            result = write_file(
                session,
                context.chain,
                place.owner_id,
                place.tree_path,
                content,
                mtime=mtime,
                checksums=checksum,
                require_etag=required_etag(environ),
                require_absent=require_absent,
                default_quota_bytes=context.settings.default_quota_bytes,
                expire_trash=True,
            )
            sessions.finish(session, context.chain, info.id)
    except QuotaExceeded as exc:
        raise dav_error(exc) from None
    except TreeError as exc:
        raise DAVError(exc.status, str(exc)) from None
    log.info(
        "chunked upload %s of user %r assembled into %r of %r (%d bytes)",
        info.transfer_id,
        principal.username,
        place.tree_path,
        place.owner,
        result.node.size,
    )
    environ[ENVIRON_NODE] = result.node
    status = HTTP_CREATED if result.created else HTTP_NO_CONTENT
    sent: Iterable[bytes] = util.send_status_response(environ, start_response, status)
    return sent
