"""Writes that bypass the files provider: where each file lands, and whether it may.

The Nextcloud bulk upload (``POST /remote.php/dav/bulk``: many files, each named by a path
relative to the uploader's root) and the chunked-upload assembly (``MOVE uploads/…/.file``
onto a ``Destination`` in the uploader's files) write with ``oxidav.tree`` directly. Each asks
``WriteGate.request(environ, principal).place(url_path)`` for every file: the answer is
``policy.authorize_write``'s ``WritePlace`` — a PUT's decision, and the owner's tree and path
that receive the file (alice's, when the path lies below a share mounted in bob's tree), so
the file counts against the owner's quota and rolls up the owner's etags.

**Cost.** A path of the caller's own tree that cannot lie below a mount point
(``mounts.involves_mounts``) is placed without any query. Otherwise the request's
``RequestAuthz`` and mount table are read once per request — reused from the environ when
the authz middleware already made them — and each place costs the node lookups of its
decision (the engine memoises folder roles per request). Denials not audited by the engine
are audited here, one line each.
"""

from __future__ import annotations

import logging
from typing import Any

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.decision import ALLOW, Decision
from oxidav.authz.grants.engine import GrantEngine, RequestAuthz
from oxidav.authz.grants.mounts import MountService, MountTable, involves_mounts
from oxidav.authz.policy import Verdict, WritePlace, authorize_write
from oxidav.db import Database
from oxidav.environ import ENVIRON_AUTHZ, ENVIRON_MOUNTS
from oxidav.tree import InvalidName, normalize_path
from oxidav.urls import FILES, LEGACY_WEBDAV

__all__ = ["RequestWrites", "WriteGate", "WritePlace"]

audit = logging.getLogger("oxidav.audit")


class WriteGate:
    """The process-wide part: a grant engine and the mount service (``share_folder``)."""

    def __init__(self, db: Database, share_folder: str = "") -> None:
        self.db = db
        self.engine = GrantEngine(db)
        self.mounts = MountService(db, share_folder)

    def request(self, environ: dict[str, Any], principal: Principal) -> RequestWrites:
        """The write decisions of one request of ``principal``."""
        return RequestWrites(self, environ, principal)


class RequestWrites:
    """One request's write places; the grant context and mount table are read at most once."""

    def __init__(self, gate: WriteGate, environ: dict[str, Any], principal: Principal) -> None:
        self.gate = gate
        self.environ = environ
        self.principal = principal
        self._authz: RequestAuthz | None = None
        self._mounts: MountTable | None = None
        self._mounts_read = False

    def place(self, url_path: str) -> WritePlace:
        """Where the file at decoded files URL ``url_path`` lands, and whether it may."""
        me = self.principal
        own = _own_tree_path(url_path, me.username)
        if own is not None and not involves_mounts(self.gate.mounts.folder, own):
            return WritePlace(Verdict(ALLOW), me.username, me.user_id, own)  # no query
        authz = self.authz()
        mounts = self.mount_table(authz) if own is not None else None
        if own is not None and mounts is None:
            return WritePlace(Verdict(ALLOW), me.username, me.user_id, own)
        with self.gate.db.read() as session:
            placed = authorize_write(authz, session, url_path, mounts)
        decision = placed.verdict.decision
        if not decision.allowed and not placed.verdict.audited:
            self._audit(url_path, decision)
        return placed

    def authz(self) -> RequestAuthz:
        """The request's grant context: the authz middleware's, or one made (and left) here."""
        if self._authz is None:
            found = self.environ.get(ENVIRON_AUTHZ)
            if (
                isinstance(found, RequestAuthz)
                and found.principal.user_id == self.principal.user_id
            ):
                self._authz = found
            else:
                self._authz = self.gate.engine.request(self.principal)
                self.environ[ENVIRON_AUTHZ] = self._authz
        return self._authz

    def mount_table(self, authz: RequestAuthz) -> MountTable | None:
        """The caller's mounts (None: they have none), read once per request."""
        if not self._mounts_read:
            found = self.environ.get(ENVIRON_MOUNTS)
            table = found if isinstance(found, MountTable) else self.gate.mounts.table(authz)
            if table.mounts:
                self._mounts = table
                self.environ[ENVIRON_MOUNTS] = table
            self._mounts_read = True
        return self._mounts

    def _audit(self, url_path: str, decision: Decision) -> None:
        audit.info(
            "deny user=%r method=%s path=%r reason=%r status=%d",
            self.principal.username,
            self.environ.get("REQUEST_METHOD"),
            url_path,
            decision.reason,
            decision.status,
        )


def _own_tree_path(url_path: str, username: str) -> str | None:
    """The caller's tree path of a URL in their own files (None: not theirs, or invalid)."""
    for prefix in (f"{FILES}/{username}", LEGACY_WEBDAV):
        if url_path == prefix or url_path.startswith(prefix + "/"):
            try:
                return normalize_path(url_path[len(prefix) :])
            except InvalidName:
                return None
    return None
