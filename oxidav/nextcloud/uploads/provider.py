"""The WsgiDAV provider of ``/remote.php/dav/uploads/<user>/<transfer id>/<chunk>``.

Resources are thin adapters over ``sessions``: MKCOL of ``<user>/<id>`` opens a session
(``OC-Total-Length`` remembered; more than the free quota of the tree its ``Destination``
lands in — a share's owner's, ``oxidav.authz.writes`` — is 507 at once), PUT of a chunk
streams it into the blob chain and records it on ``end_write``, PROPFIND lists the chunks in
order (resume), DELETE drops a chunk or the session. ``MOVE <id>/.file`` is handled in
``custom_request_handler`` (the destination lives in another provider, which WsgiDAV's own
MOVE refuses) by ``oxidav.nextcloud.uploads.finish``. Paths of other users do not exist (404).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy.orm import Session
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_FORBIDDEN,
    DAVError,
)
from wsgidav.dav_provider import DAVCollection, DAVNonCollection, DAVProvider

from oxidav.authz.authn.principal import Principal
from oxidav.authz.writes import WriteGate
from oxidav.blobs import IncompleteContentError, StoredContent
from oxidav.db import utcnow
from oxidav.environ import principal_of
from oxidav.nextcloud.checksums import ChecksumMismatch
from oxidav.nextcloud.context import NextcloudContext
from oxidav.nextcloud.uploads import sessions
from oxidav.nextcloud.uploads.finish import ASSEMBLED, destination_place, finish_upload
from oxidav.nextcloud.uploads.quota import charge_chunk, check_room
from oxidav.nextcloud.uploads.sessions import ChunkInfo, SessionInfo, UploadError
from oxidav.providers.files.context import dav_error
from oxidav.tree import QuotaExceeded, available_bytes

#: How often (seconds) a process looks for stale sessions, piggybacked on MKCOL.
PURGE_EVERY = 600.0


def upload_error(exc: UploadError) -> DAVError:
    return DAVError(exc.status, str(exc))


def _length(environ: dict[str, Any], key: str) -> int | None:
    raw = str(environ.get(key, "")).strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise DAVError(HTTP_BAD_REQUEST, f"invalid {key}")
    return int(raw)


class UploadsRoot(DAVCollection):  # type: ignore[misc]
    """``/uploads/``: lists nothing (each user sees only their own folder)."""

    def get_member_names(self) -> list[str]:
        return []


class UserUploads(DAVCollection):  # type: ignore[misc]
    """``/uploads/<user>/``: the user's sessions; MKCOL below it opens one."""

    def __init__(self, path: str, environ: dict[str, Any], principal: Principal) -> None:
        super().__init__(path, environ)
        self.principal = principal
        self.context: NextcloudContext = self.provider.context

    def get_member_names(self) -> list[str]:
        with self.context.db.read() as session:
            return [s.transfer_id for s in sessions.list_sessions(session, self.principal.user_id)]

    def create_collection(self, name: str) -> None:
        total = _length(self.environ, "HTTP_OC_TOTAL_LENGTH")
        if total is not None:
            owner_id = self.principal.user_id
            if self.environ.get("HTTP_DESTINATION"):
                owner_id = destination_place(self.provider, self.environ, self.principal).owner_id
            with self.context.db.read() as session:
                free = available_bytes(session, owner_id, self.context.settings.default_quota_bytes)
            if free is not None and total > free:
                raise dav_error(QuotaExceeded("the upload exceeds the quota"))
            self._check_uploader_room(total)
        self.provider.purge_now_and_then()
        try:
            sessions.create_session(
                self.context.db,
                self.principal.user_id,
                name,
                total,
                self.environ.get("HTTP_DESTINATION"),
            )
        except UploadError as exc:
            raise upload_error(exc) from None

    def _check_uploader_room(self, total: int) -> None:
        """The chunks are the uploader's until assembled: they must fit in his quota too."""
        _require_room(self.context, self.principal.user_id, "the upload", lambda _session: total)


def _require_room(
    context: NextcloudContext, user_id: int, what: str, need: Callable[[Session], int]
) -> None:
    """507 unless ``need(session)`` more bytes fit in ``user_id``'s quota (a read, no lock)."""
    try:
        with context.db.read() as session:
            default_quota = context.settings.default_quota_bytes
            check_room(session, user_id, default_quota, need(session), what)
    except QuotaExceeded as exc:
        raise dav_error(exc) from None


class SessionFolder(DAVCollection):  # type: ignore[misc]
    """``/uploads/<user>/<id>/``: one session; its members are the chunks."""

    def __init__(self, path: str, environ: dict[str, Any], info: SessionInfo) -> None:
        super().__init__(path, environ)
        self.info = info
        self.context: NextcloudContext = self.provider.context

    def get_last_modified(self) -> float:
        return self.info.updated_at.timestamp()

    def get_creation_date(self) -> float:
        return self.info.created_at.timestamp()

    def _chunks(self) -> list[ChunkInfo]:
        with self.context.db.read() as session:
            return sessions.list_chunks(session, self.info.id)

    def get_member_names(self) -> list[str]:
        return [chunk.name for chunk in self._chunks()]

    def get_member_list(self) -> list[Chunk]:
        base = self.path.rstrip("/")
        return [Chunk(f"{base}/{c.name}", self.environ, self.info, c) for c in self._chunks()]

    def create_empty_resource(self, name: str) -> Chunk:
        try:
            sessions.check_name(name)
        except UploadError as exc:
            raise upload_error(exc) from None
        return Chunk(f"{self.path.rstrip('/')}/{name}", self.environ, self.info, None)

    def create_collection(self, name: str) -> None:
        raise DAVError(HTTP_FORBIDDEN, "an upload session holds chunks only")

    def support_recursive_delete(self) -> bool:
        return True

    def delete(self) -> None:
        sessions.abort(self.context.db, self.context.chain, self.info.id)

    def handle_delete(self) -> bool:
        self.delete()
        return True


class _ChunkWriter:
    """What ``begin_write`` returns: WsgiDAV hands it the body stream via ``writelines``."""

    def __init__(self, chunk: Chunk) -> None:
        self.chunk = chunk

    def writelines(self, data: Iterable[bytes]) -> None:
        environ = self.chunk.environ
        expected = _length(environ, "CONTENT_LENGTH")
        if expected is None and "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            expected = 0
        try:
            self.chunk.stored = sessions.ingest_chunk(self.chunk.context.chain, data, expected)
        except (IncompleteContentError, ChecksumMismatch) as exc:
            raise DAVError(HTTP_BAD_REQUEST, f"chunk rejected: {exc}") from None

    def close(self) -> None:
        pass


class Chunk(DAVNonCollection):  # type: ignore[misc]
    """One chunk (``info`` None: a chunk being uploaded, not recorded yet)."""

    def __init__(
        self, path: str, environ: dict[str, Any], session: SessionInfo, info: ChunkInfo | None
    ) -> None:
        super().__init__(path, environ)
        self.session = session
        self.info = info
        self.stored: StoredContent | None = None
        self.context: NextcloudContext = self.provider.context

    def get_content_length(self) -> int:
        return self.info.size if self.info is not None else 0

    def get_content_type(self) -> str:
        return "application/octet-stream"

    def get_etag(self) -> str | None:
        return self.info.manifest_hash[:32] if self.info is not None else None

    def support_etag(self) -> bool:
        return True

    def get_last_modified(self) -> float | None:
        return self.info.created_at.timestamp() if self.info is not None else None

    def get_content(self) -> Any:
        if self.info is None:
            raise DAVError(404)
        return self.context.chain.open(self.info.manifest_hash)

    def begin_write(self, *, content_type: str | None = None) -> _ChunkWriter:
        return _ChunkWriter(self)

    def check_room_before_body(self) -> None:
        """507 before the body is read when the chunk's ``Content-Length``, or what is left of
        the upload's ``OC-Total-Length`` (this request's or the session's), does not fit."""
        length = _length(self.environ, "CONTENT_LENGTH") or 0
        total = _length(self.environ, "HTTP_OC_TOTAL_LENGTH") or self.session.total_length
        replaced = self.info.size if self.info is not None else 0

        def need(session: Session) -> int:
            held = sessions.session_bytes(session, self.session.id) if total else 0
            return max(length - replaced, (total or 0) - held)

        _require_room(self.context, self.session.user_id, "the chunk", need)

    def _charge(self, session: Any, growth: int) -> None:
        default_quota = self.context.settings.default_quota_bytes
        charge_chunk(session, self.session.user_id, default_quota, growth)

    def end_write(self, *, with_errors: bool) -> None:
        if with_errors or self.stored is None:
            return
        try:
            sessions.record_chunk(
                self.context.db,
                self.context.chain,
                self.session.id,
                self.name,
                self.stored,
                check_room=self._charge,
            )
        except UploadError as exc:
            raise upload_error(exc) from None
        except QuotaExceeded as exc:
            raise dav_error(exc) from None
        self.info = ChunkInfo(self.name, self.stored.size, self.stored.manifest_hash, utcnow())

    def delete(self) -> None:
        sessions.delete_chunk(self.context.db, self.context.chain, self.session.id, self.name)

    def handle_delete(self) -> bool:
        self.delete()
        return True


class UploadsProvider(DAVProvider):  # type: ignore[misc]
    def __init__(self, context: NextcloudContext) -> None:
        super().__init__()
        self.context = context
        self.writes = WriteGate(context.db, context.settings.share_folder)
        self._next_purge = 0.0

    def purge_now_and_then(self) -> None:
        now = time.monotonic()
        if now >= self._next_purge:
            self._next_purge = now + PURGE_EVERY
            sessions.purge_stale(self.context.db, self.context.chain)

    def get_resource_inst(self, path: str | None, environ: dict[str, Any]) -> Any:
        if path is None:  # WsgiDAV asks for the parent of the root (a PUT of the root)
            return None
        parts = [part for part in path.split("/") if part]
        if not parts:
            return UploadsRoot("/", environ)
        principal = principal_of(environ)
        if not isinstance(principal, Principal) or parts[0] != principal.username:
            return None
        if len(parts) == 1:
            return UserUploads(f"/{parts[0]}/", environ, principal)
        if len(parts) > 3:
            return None
        with self.context.db.read() as session:
            info = sessions.find_session(session, principal.user_id, parts[1])
            if info is None:
                return None
            if len(parts) == 2:
                return SessionFolder(f"/{parts[0]}/{parts[1]}/", environ, info)
            if parts[2] == ASSEMBLED:
                return Chunk(path, environ, info, None)
            chunk = sessions.find_chunk(session, info.id, parts[2])
        return None if chunk is None else Chunk(path, environ, info, chunk)

    def _chunk_for_put(self, path: str, environ: dict[str, Any]) -> Chunk | None:
        """The chunk a PUT writes: the existing one, or a new one of an existing session."""
        found = self.get_resource_inst(path, environ)
        if found is not None:
            return found if isinstance(found, Chunk) else None
        parent = self.get_resource_inst(path.rstrip("/").rsplit("/", 1)[0] + "/", environ)
        if isinstance(parent, SessionFolder):
            return Chunk(path, environ, parent.info, None)
        return None

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Any
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method in ("MOVE", "COPY"):
            if method == "MOVE" and environ["PATH_INFO"].rstrip("/").endswith("/" + ASSEMBLED):
                return finish_upload(self, environ, start_response)
            raise DAVError(HTTP_FORBIDDEN, "only MOVE of .file is allowed here")
        if method == "PUT":  # the quota, before WsgiDAV starts reading the body
            chunk = self._chunk_for_put(environ["PATH_INFO"], environ)
            if chunk is not None:
                chunk.check_room_before_body()
        result: Iterable[bytes] = default_handler(environ, start_response)
        return result
