"""Shared state of the files provider: the backend, the request target, the per-request cache,
and the mapping of tree errors to DAV errors.

``FilesBackend`` holds what lives as long as the process (database, blob chain, options, a short
user-id cache). ``RequestCache`` lives in the WSGI environ for one request: WsgiDAV asks for the
same resource several times per request (PUT: target and parent; COPY: four lookups), and every
repeated lookup is answered from it; any write through the provider clears it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select
from wsgidav.dav_error import (
    HTTP_INSUFFICIENT_STORAGE,
    DAVError,
    DAVErrorCondition,
)

from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.db.models.users import User
from oxidav.db.prepared import PreparedRead
from oxidav.environ import ENVIRON_CACHE
from oxidav.tree import QuotaExceeded, TreeError, quota_limit, resolve
from oxidav.tree.nodes import ensure_root, resolve_many, select_live
from oxidav.tree.types import NodeInfo

USER_CACHE_SECONDS = 30.0
QUOTA_NOT_EXCEEDED = "{DAV:}quota-not-exceeded"
#: The live node at a path: the one read of a GET (``oxidav.db.prepared``).
_NODE_AT = PreparedRead(
    select_live().where(Node.user_id == bindparam("user_id"), Node.path == bindparam("path"))
)
#: Two paths at once (a PUT's target and parent): one prepared statement, no session.
_NODES_AT_TWO = PreparedRead(
    select_live().where(
        Node.user_id == bindparam("user_id"),
        Node.path.in_([bindparam("first"), bindparam("second")]),
    )
)


def dav_error(exc: TreeError) -> DAVError:
    """The DAV error for a tree error (507 carries RFC 4331's quota-not-exceeded)."""
    if isinstance(exc, QuotaExceeded):
        return DAVError(
            HTTP_INSUFFICIENT_STORAGE,
            str(exc),
            err_condition=DAVErrorCondition(QUOTA_NOT_EXCEEDED),
        )
    return DAVError(exc.status, str(exc))


@dataclass(frozen=True)
class Target:
    """A place in one user's tree: ``tree_path`` is ``""`` for the root, else ``"/a/b"``."""

    username: str
    user_id: int
    tree_path: str


@dataclass
class RequestCache:
    nodes: dict[tuple[int, str], NodeInfo | None] = field(default_factory=dict)
    quota: dict[int, tuple[int, int | None]] = field(default_factory=dict)


def request_cache(environ: dict[str, Any]) -> RequestCache:
    cache = environ.get(ENVIRON_CACHE)
    if cache is None:
        cache = environ[ENVIRON_CACHE] = RequestCache()
    assert isinstance(cache, RequestCache)
    return cache


def forget(environ: dict[str, Any]) -> None:
    """Drop the request cache after a write."""
    environ.pop(ENVIRON_CACHE, None)


class FilesBackend:
    """Database, blob chain and options of a files provider."""

    def __init__(
        self,
        db: Database,
        chain: BlobChain,
        *,
        default_quota_bytes: int = 0,
        propfind_infinity_limit: int = 0,
    ) -> None:
        self.db = db
        self.chain = chain
        self.default_quota_bytes = default_quota_bytes
        self.propfind_infinity_limit = propfind_infinity_limit
        self._users: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def user_id(self, username: str) -> int | None:
        """The id of user ``username`` (cached briefly), with their root folder ensured."""
        now = time.monotonic()
        with self._lock:
            hit = self._users.get(username)
        if hit is not None and now - hit[1] < USER_CACHE_SECONDS:
            return hit[0]
        with self.db.read() as session:
            user_id = session.scalar(select(User.id).where(User.username == username))
        if user_id is None:
            return None
        ensure_root(self.db, user_id)
        with self._lock:
            self._users[username] = (user_id, now)
        return int(user_id)

    def node(self, environ: dict[str, Any], target: Target) -> NodeInfo | None:
        """The live node at ``target``, through the request cache."""
        cache = request_cache(environ).nodes
        key = (target.user_id, target.tree_path)
        if key not in cache:
            row = _NODE_AT.first(self.db, {"user_id": target.user_id, "path": target.tree_path})
            cache[key] = None if row is None else NodeInfo.from_row(row)
        return cache[key]

    def prefetch(self, environ: dict[str, Any], target: Target, paths: list[str]) -> None:
        """Load the nodes at ``paths`` of ``target``'s tree into the request cache, one query
        (up to two paths, a PUT's target and parent: a prepared read without a session)."""
        cache = request_cache(environ).nodes
        missing = [p for p in paths if (target.user_id, p) not in cache]
        if not missing:
            return
        if len(missing) <= 2:
            params = {"user_id": target.user_id, "first": missing[0], "second": missing[-1]}
            rows = _NODES_AT_TWO.rows(self.db, params)
            found = {node.path: node for node in map(NodeInfo.from_row, rows)}
        else:
            with self.db.read() as session:
                found = resolve_many(session, target.user_id, missing)
        self.remember(environ, target.user_id, missing, found)

    @staticmethod
    def remember(
        environ: dict[str, Any], user_id: int, paths: list[str], found: dict[str, NodeInfo]
    ) -> None:
        """Put the nodes at ``paths`` of a user's tree, as read (``found``, by path; a path
        not in it has no live node), into the request cache."""
        cache = request_cache(environ).nodes
        for path in paths:
            cache[(user_id, path)] = found.get(path)

    def quota(self, environ: dict[str, Any], user_id: int) -> tuple[int, int | None]:
        """``(used bytes, available bytes or None for unlimited)`` of a user, per request."""
        cache = request_cache(environ).quota
        if user_id not in cache:
            with self.db.read() as session:
                root = resolve(session, user_id, "")
                used = root.size if root is not None else 0
                limit = quota_limit(session, user_id, self.default_quota_bytes)
            cache[user_id] = (used, None if limit is None else max(0, limit - used))
        return cache[user_id]
