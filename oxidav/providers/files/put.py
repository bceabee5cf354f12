"""PUT of a file (RFC 9110 §9.3.4, RFC 4918 §9.7): streamed into the blob chain, then committed.

WsgiDAV's own PUT creates an empty file before reading the body, commits a body shorter than
Content-Length, and ignores If-Match on a missing target (docs/wsgidav.md#put). This handler:

1. evaluates the preconditions: If-Match on a missing target is 412; If-None-Match: * on an
   existing one is 412 (§13.1.1, §13.1.2); locks are checked with WsgiDAV's rules, in one
   query (``DbLockManager``: the target, its ancestors' depth-infinity locks and, for a new
   member, its parent's own locks);
2. refuses a declared length that exceeds the quota with 507 before reading the body;
3. streams the body into ``BlobChain.ingest`` with the declared length (chunked bodies have
   none), so a short body raises and no manifest becomes visible; under cheroot the ingest
   receives straight from the socket into its buffer (``files_body``);
4. commits the node row in one transaction that re-checks the preconditions and the quota and
   takes the content reference (``oxidav.tree.write_file``); the ingest left the manifest row
   to this transaction (``PendingContent``: its chunks are already synced), so manifest and
   node become visible in one commit; a content that is one chunk of at most
   ``blob_inline_max`` bytes was not written to the store at all, and this transaction keeps
   it in its chunk's row, which names it — no manifest row (``oxidav.blobs.inline``).

A body declared longer than ``ONE_TRANSACTION_MAX`` (or of unknown length) takes these steps
in this order (``_Put.checked_first``): nothing is read before a 412 or 423, and the write
stays marked in WsgiDAV's lock manager until step 4 has committed. A smaller one — most PUTs —
is read first, and steps 1 and 4 share one transaction (``_Put.in_one_transaction``): the nodes
the checks look at are the rows the write reads anyway, and the locks are read inside it too,
so no other request or process can lock or change the target between the check and the
commit. (A refused small body was still ingested: kept in memory when it is one inline chunk,
else written to the store as unreferenced chunks that gc collects.)

Nothing is created before step 4, so a failure at any point leaves the previous version — or
no file at all, never an empty placeholder.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CONFLICT,
    HTTP_CREATED,
    HTTP_METHOD_NOT_ALLOWED,
    HTTP_NO_CONTENT,
    HTTP_NOT_FOUND,
    HTTP_NOT_IMPLEMENTED,
    HTTP_PRECONDITION_FAILED,
    DAVError,
)

from oxidav.authz.grants.views import view_for
from oxidav.blobs import IncompleteContentError
from oxidav.blobs.ingest import PendingContent, StoredContent
from oxidav.db import Transaction
from oxidav.environ import ENVIRON_NODE
from oxidav.providers.files.body import request_body
from oxidav.providers.files.context import Target, dav_error, forget
from oxidav.providers.files.get import http_date_now
from oxidav.providers.files.locks import DbLockManager
from oxidav.tree import (
    QuotaExceeded,
    TreeError,
    WriteContext,
    WriteResult,
    read_write_context,
    write_file,
)
from oxidav.tree.drops import MAX_DROP_DEPTH, place_drop
from oxidav.tree.names import parent_path

#: Bodies declared longer than this are checked against the quota before they are read;
#: every write is checked again when it commits.
QUOTA_PRECHECK = 1 << 20
#: A body declared at most this long is read before the checks, which then run in the write's
#: own transaction (one transaction instead of two reads and a write).
ONE_TRANSACTION_MAX = 64 << 10
_CHECKSUM = re.compile(r"^[A-Za-z0-9]+:[0-9A-Fa-f]+$")
_CREATED = util.get_http_status_string(HTTP_CREATED)
_NO_CONTENT = util.get_http_status_string(HTTP_NO_CONTENT)


def _content_length(environ: dict[str, Any]) -> int | None:
    raw = environ.get("CONTENT_LENGTH", "").strip()
    if raw == "":
        if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            return None
        return 0
    if not raw.isdigit():
        raise DAVError(HTTP_BAD_REQUEST, "invalid Content-Length")
    return int(raw)


def _mtime(environ: dict[str, Any]) -> datetime | None:
    """Nextcloud's X-OC-Mtime: seconds since the epoch (integer or decimal)."""
    raw = environ.get("HTTP_X_OC_MTIME")
    if raw is None:
        return None
    try:
        seconds = float(raw.strip())
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        raise DAVError(HTTP_BAD_REQUEST, "invalid X-OC-Mtime") from None


def _checksum(environ: dict[str, Any]) -> str | None:
    raw = environ.get("HTTP_OC_CHECKSUM", "").strip()
    return raw if _CHECKSUM.match(raw) else None


def handle_put(
    provider: Any, server: Any, environ: dict[str, Any], start_response: Any
) -> list[bytes]:
    path = environ["PATH_INFO"]
    target = provider.locate(path, environ)
    if target is None and (reason := provider.name_error(path)) is not None:
        raise DAVError(HTTP_BAD_REQUEST, reason)
    if not isinstance(target, Target):
        raise DAVError(HTTP_NOT_FOUND if target is None else HTTP_METHOD_NOT_ALLOWED)
    if "HTTP_CONTENT_ENCODING" in environ:
        raise DAVError(HTTP_NOT_IMPLEMENTED, "Content-Encoding is not supported")
    if "HTTP_CONTENT_RANGE" in environ:
        raise DAVError(HTTP_BAD_REQUEST, "Content-Range is not allowed on PUT")
    length = _content_length(environ)
    mtime = _mtime(environ)
    put = _Put(provider, server, environ, path, target, mtime)
    viewed = view_for(environ, provider.share_path + path)
    try:
        if viewed is not None and viewed[0].drop:
            result = put.dropped(length, viewed[0].tree_root)
        elif (
            length is not None
            and length <= ONE_TRANSACTION_MAX
            and target.tree_path != ""
            and isinstance(provider.lock_manager, DbLockManager)
        ):
            result = put.in_one_transaction(length)
        else:
            result = put.checked_first(length)
    except TreeError as exc:
        raise dav_error(exc) from None
    forget(environ)
    environ[ENVIRON_NODE] = result.node
    headers = [("ETag", f'"{result.node.etag}"')]
    if mtime is not None:
        headers.append(("X-OC-MTime", "accepted"))
    # No body, 201 included (WsgiDAV's would be an HTML page built per request; Nextcloud
    # answers a PUT with an empty 201 too).
    status = _CREATED if result.created else _NO_CONTENT
    start_response(status, [("Content-Length", "0"), ("Date", http_date_now()), *headers])
    return [b""]


@dataclass(frozen=True)
class _Checked:
    """What the checks of a PUT found: the current resource (None: a new member) and the
    preconditions its transaction re-checks."""

    res: Any
    require_etag: str | None
    require_absent: bool


@dataclass(frozen=True)
class _Put:
    """One PUT request, written by one of two orders of the same steps (module docstring)."""

    provider: Any
    server: Any
    environ: dict[str, Any]
    path: str
    target: Target
    mtime: datetime | None

    @property
    def backend(self) -> Any:
        return self.provider.backend

    def check(self) -> _Checked:
        """Step 1 of the module docstring, locks aside: 405 for a collection, 409 without a
        parent collection, 412 for a failed precondition."""
        provider, environ = self.provider, self.environ
        res = provider.get_resource_inst(self.path, environ)
        if res is not None and res.is_collection:
            raise DAVError(HTTP_METHOD_NOT_ALLOWED, "cannot PUT to a collection")
        parent = provider.get_resource_inst(util.get_uri_parent(self.path), environ)
        if self.target.tree_path == "" or parent is None or not parent.is_collection:
            raise DAVError(HTTP_CONFLICT, "the parent must be an existing collection")
        if res is None and "HTTP_IF_MATCH" in environ:
            raise DAVError(HTTP_PRECONDITION_FAILED, "If-Match on a missing resource")
        self.server._evaluate_if_headers(res, environ)
        lock_manager = provider.lock_manager
        if res is None and lock_manager is not None and not isinstance(lock_manager, DbLockManager):
            # A new member changes its parent: a depth-0 lock on the parent conflicts.
            self.server._check_write_permission(parent, "0", environ)
        return _Checked(
            res,
            res.get_etag() if res is not None and "HTTP_IF_MATCH" in environ else None,
            res is None and environ.get("HTTP_IF_NONE_MATCH", "").strip() == "*",
        )

    def checked_first(self, length: int | None) -> WriteResult:
        """Check, then stream the body into the blob chain, then commit the node."""
        target = self.target
        if target.tree_path:
            self.backend.prefetch(
                self.environ, target, [target.tree_path, parent_path(target.tree_path)]
            )
        checked = self.check()
        res = checked.res
        lock_url = self.provider.ref_url(target, False)
        with _write_locked(self.provider.lock_manager, self.environ, lock_url, res is None):
            if length is not None and length > QUOTA_PRECHECK:
                _used, available = self.backend.quota(self.environ, target.user_id)
                growth = length - (res.get_content_length() if res is not None else 0)
                if available is not None and growth > available:
                    raise dav_error(QuotaExceeded(f"{length} bytes exceed the quota"))
            stored = _ingest(self.backend, self.environ, length)
            # A Core connection, not an ORM session: the node write is Core statements only.
            with self.backend.db.write_core() as transaction:
                return self.write(transaction, stored, checked, None)

    def in_one_transaction(self, length: int) -> WriteResult:
        """A small body: read it first, then check and write in one transaction — the nodes
        the checks need are the ones the write reads (``read_write_context``), and the locks
        are read in the same transaction (``DbLockManager.check_put_in``)."""
        target, environ = self.target, self.environ
        stored = _ingest(self.backend, environ, length)
        with self.backend.db.write_core() as transaction:
            context = read_write_context(transaction, target.user_id, target.tree_path)
            paths = [target.tree_path, parent_path(target.tree_path)]
            self.backend.remember(environ, target.user_id, paths, context.found)
            checked = self.check()
            self.provider.lock_manager.check_put_in(
                transaction,
                url=self.provider.ref_url(target, False),
                token_list=environ["wsgidav.ifLockTokenList"],
                principal=environ["wsgidav.user_name"],
                new_member=checked.res is None,
            )
            return self.write(transaction, stored, checked, context)

    def dropped(self, length: int | None, drop_root: str) -> WriteResult:
        """A PUT through a file drop (``TreeView.drop``): the file lands under the first free
        name at its place (``oxidav.tree.drops``), chosen in the write's transaction under the
        tree lock, so the answer — 201 — is the same whatever the folder holds. The target's
        state is never looked at: If-Match is 412 (the new file never existed), If-None-Match
        and If are ignored (what they would test is never overwritten), and so are lock tokens:
        a lock held in the folder (never the dropper's) refuses the drop with 423."""
        target, environ = self.target, self.environ
        if "HTTP_IF_MATCH" in environ:
            raise DAVError(HTTP_PRECONDITION_FAILED, "If-Match: a dropped file is always new")
        below = target.tree_path[len(drop_root) :]
        if target.tree_path == drop_root or not target.tree_path.startswith(drop_root + "/"):
            raise DAVError(HTTP_METHOD_NOT_ALLOWED, "cannot PUT to a collection")
        if below.count("/") > MAX_DROP_DEPTH:
            raise DAVError(HTTP_BAD_REQUEST, f"a drop is at most {MAX_DROP_DEPTH} names deep")
        if length is not None and length > QUOTA_PRECHECK:
            _used, available = self.backend.quota(environ, target.user_id)
            if available is not None and length > available:
                raise dav_error(QuotaExceeded(f"{length} bytes exceed the quota"))
        stored = _ingest(self.backend, environ, length)
        with self.backend.db.write_core() as transaction:
            path = place_drop(transaction, target.user_id, drop_root, below)
            placed = Target(target.username, target.user_id, path)
            lock_manager = self.provider.lock_manager
            if isinstance(lock_manager, DbLockManager):
                lock_manager.check_put_in(
                    transaction,
                    url=self.provider.ref_url(placed, False),
                    token_list=[],
                    principal=environ.get("wsgidav.user_name", ""),
                    new_member=True,
                )
            checked = _Checked(None, None, require_absent=True)
            return replace(self, target=placed).write(transaction, stored, checked, None)

    def write(
        self,
        transaction: Transaction,
        stored: StoredContent | None,
        checked: _Checked,
        context: WriteContext | None,
    ) -> WriteResult:
        """Step 4: the node row, re-checking the preconditions and the quota."""
        result: WriteResult = write_file(
            transaction,
            stored if isinstance(stored, PendingContent) else self.backend.chain,
            self.target.user_id,
            self.target.tree_path,
            stored,
            mtime=self.mtime,
            checksums=_checksum(self.environ),
            require_etag=checked.require_etag,
            require_absent=checked.require_absent,
            default_quota_bytes=self.backend.default_quota_bytes,
            context=context,
            expire_trash=True,
        )
        return result


def _write_locked(
    lock_manager: Any, environ: dict[str, Any], ref_url: str, new_member: bool
) -> AbstractContextManager[None]:
    """WsgiDAV's write transaction of the target (a conflicting lock is 423), held from before
    the body is read until the new version is committed. ``DbLockManager`` also checks a new
    member's parent in the same query; another manager's caller has checked it already."""
    if lock_manager is None:
        return nullcontext()
    token_list = environ["wsgidav.ifLockTokenList"]
    principal = environ["wsgidav.user_name"]
    if isinstance(lock_manager, DbLockManager):
        return lock_manager.put_transaction(
            url=ref_url, token_list=token_list, principal=principal, new_member=new_member
        )
    manager: AbstractContextManager[None] = lock_manager.write_transaction(
        url=ref_url, token_list=token_list, principal=principal
    )
    return manager


def _ingest(backend: Any, environ: dict[str, Any], length: int | None) -> StoredContent | None:
    if length == 0:
        environ["wsgidav.all_input_read"] = 1
        return None
    try:
        stored: StoredContent = backend.chain.ingest(
            request_body(environ, length), expected_length=length, publish=False
        )
    except IncompleteContentError as exc:
        environ["wsgidav.all_input_read"] = 1
        raise DAVError(HTTP_BAD_REQUEST, f"incomplete body: {exc}") from None
    environ["wsgidav.all_input_read"] = 1
    return stored
