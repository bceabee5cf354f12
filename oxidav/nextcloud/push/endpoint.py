"""``POST /remote.php/dav/push/v1/{need,chunks,commit}`` (docs/push-protocol.md): dispatch,
the per-user in-flight budget, the answers.

Back-pressure: a ``chunks`` or ``commit`` body is admitted only while the bytes of the
caller's requests under way, this one included, stay within ``push_inflight_bytes`` (one
request alone is always admitted); otherwise 429 with ``Retry-After`` before the body is read.
The budget is per process: each process behind a balancer bounds its own memory.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import blake3
from wsgidav.dav_error import HTTP_METHOD_NOT_ALLOWED, HTTP_NOT_FOUND, DAVError

from oxidav.authz.authn.principal import Principal
from oxidav.authz.writes import WriteGate
from oxidav.blobs.assembly import store_chunks
from oxidav.environ import principal_of
from oxidav.nextcloud.push.commit import Committer, stat_paths
from oxidav.nextcloud.push.holdings import held, record_staged, staged_after
from oxidav.nextcloud.push.protocol import (
    MAX_CHUNKS_BODY,
    MAX_COMMIT_BODY,
    MAX_COMMIT_ENTRIES,
    PUSH_ROOT,
    PushError,
    commit_entries,
    iter_frames,
    load_json,
    need_hashes,
)
from oxidav.providers.dav.writes import read_body

if TYPE_CHECKING:
    from oxidav.nextcloud.context import NextcloudContext

log = logging.getLogger("oxidav.nextcloud")

RETRY_AFTER_SECONDS = 1


class InFlight:
    """Bytes of request bodies under way, per user."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._bytes: dict[int, int] = {}

    def admit(self, user_id: int, size: int) -> bool:
        with self._lock:
            current = self._bytes.get(user_id, 0)
            if current and current + size > self.budget:
                return False
            self._bytes[user_id] = current + size
            return True

    def release(self, user_id: int, size: int) -> None:
        with self._lock:
            left = self._bytes.get(user_id, 0) - size
            if left > 0:
                self._bytes[user_id] = left
            else:
                self._bytes.pop(user_id, None)


def _json(start_response: Any, status: str, document: dict[str, Any]) -> list[bytes]:
    body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    start_response(
        status,
        [("Content-Type", "application/json; charset=utf-8"), ("Content-Length", str(len(body)))],
    )
    return [body]


def _too_large(message: str) -> Exception:
    return PushError(413, message)


class PushEndpoint:
    def __init__(self, context: NextcloudContext) -> None:
        self.context = context
        self.writes = WriteGate(context.db, context.settings.share_folder)
        self.in_flight = InFlight(context.settings.push_inflight_bytes)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            raise DAVError(HTTP_METHOD_NOT_ALLOWED, "the push protocol takes POST")
        principal = principal_of(environ)
        if not isinstance(principal, Principal):
            raise DAVError(401)
        path = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).rstrip("/")
        action = path[len(PUSH_ROOT) + 1 :] if path.startswith(PUSH_ROOT + "/") else ""
        handlers = {
            "need": self._need,
            "chunks": self._chunks,
            "commit": self._commit,
            "stat": self._stat,
        }
        handler = handlers.get(action)
        if handler is None:
            raise DAVError(HTTP_NOT_FOUND)
        try:
            answer: Iterable[bytes] = handler(environ, start_response, principal)
            return answer
        except PushError as exc:
            log.warning("push %s from user %r refused: %s", action, principal.username, exc)
            environ["wsgidav.all_input_read"] = 1
            reason = exc.reason
            return _json(start_response, f"{exc.status} {_REASONS[exc.status]}", {"error": reason})

    def _body(self, environ: dict[str, Any], limit: int) -> bytes:
        body = read_body(environ, limit, _too_large)
        environ["wsgidav.all_input_read"] = 1
        return body

    def _admitted(self, environ: dict[str, Any], start_response: Any, user_id: int) -> int | None:
        """The body size admitted under the budget; None: 429 was answered."""
        raw = str(environ.get("CONTENT_LENGTH", "")).strip()
        if not raw.isdigit():
            raise PushError(411, "a Content-Length is required")
        size = int(raw)
        if not self.in_flight.admit(user_id, size):
            start_response(
                "429 Too Many Requests",
                [
                    ("Retry-After", str(RETRY_AFTER_SECONDS)),
                    ("Content-Length", "0"),
                    ("Connection", "close"),
                ],
            )
            return None
        return size

    def _need(self, environ: dict[str, Any], start_response: Any, principal: Principal) -> Any:
        hashes = need_hashes(load_json(self._body(environ, 1 << 20)))
        cutoff = staged_after(self.context.settings.sweep_grace_seconds)
        with self.context.db.read() as session:
            have = held(session, principal.user_id, hashes, cutoff)
        return _json(start_response, "200 OK", {"need": [h for h in hashes if h not in have]})

    def _stat(self, environ: dict[str, Any], start_response: Any, principal: Principal) -> Any:
        document = load_json(self._body(environ, 4 << 20))
        paths = document.get("paths")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise PushError(400, '"paths" must be a list of paths')
        if len(paths) > MAX_COMMIT_ENTRIES:
            raise PushError(400, f"at most {MAX_COMMIT_ENTRIES} paths per request")
        writes = self.writes.request(environ, principal)
        files = stat_paths(self.context, writes, principal, paths)
        return _json(start_response, "200 OK", {"files": files})

    def _chunks(self, environ: dict[str, Any], start_response: Any, principal: Principal) -> Any:
        size = self._admitted(environ, start_response, principal.user_id)
        if size is None:
            return [b""]
        try:
            body = self._body(environ, MAX_CHUNKS_BODY)
            max_chunk = self.context.chain.chunk_params.max_size
            verified: dict[str, bytes] = {}
            refused: dict[str, str] = {}
            received = 0
            for key, data in iter_frames(body, max_chunk):
                received += 1
                if blake3.blake3(data).hexdigest() != key:
                    refused[key] = "the bytes do not hash to this BLAKE3"
                    continue
                verified[key] = bytes(data)
            del body
            stored = store_chunks(self.context.db, self.context.chain.store, verified)
            record_staged(self.context.db, principal.user_id, verified)
        finally:
            self.in_flight.release(principal.user_id, size)
        log.info(
            "push chunks from user %r: %d received, %d new, %d refused",
            principal.username,
            received,
            stored,
            len(refused),
        )
        return _json(start_response, "200 OK", {"stored": list(verified), "refused": refused})

    def _commit(self, environ: dict[str, Any], start_response: Any, principal: Principal) -> Any:
        size = self._admitted(environ, start_response, principal.user_id)
        if size is None:
            return [b""]
        try:
            folders, files = commit_entries(load_json(self._body(environ, MAX_COMMIT_BODY)))
            committer = Committer(self.context, self.writes.request(environ, principal), principal)
            folder_results = committer.folders(folders)
            file_results = committer.files(files, environ)
        finally:
            self.in_flight.release(principal.user_id, size)
        failed = sum(1 for r in file_results.values() if "error" in r)
        log.info(
            "push commit from user %r: %d folders, %d files (%d failed)",
            principal.username,
            len(folder_results),
            len(file_results),
            failed,
        )
        return _json(start_response, "200 OK", {"folders": folder_results, "files": file_results})


_REASONS = {
    400: "Bad Request",
    411: "Length Required",
    413: "Content Too Large",
    429: "Too Many Requests",
}
