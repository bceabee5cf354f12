"""Authorization middleware: asks ``oxidav.authz.policy`` about every request after login.

It sits after authentication and before the Nextcloud layer and the request resolver, so no
handler below it sees a request it may not serve. Each request gets one ``RequestAuthz`` (the
grant engine's per-request context, also left in ``environ["oxidav.authz"]`` for the layers
below). Every denial writes exactly one structured audit line to the ``oxidav.audit`` logger:
the engine's own line for a grant denial, the line written here for any other.

Another user's home answers 404 (``policy``): shares are reached through the caller's mounts.
``ENVIRON_ACTING_FOR`` is no longer set by this layer (a request never acts in another user's
tree by that user's URL); the files provider still honours it if a trusted caller sets it.

A request in the caller's own file tree that may involve their mounts (shares shown in their
tree, ``grants.mounts``) reads the caller's mount table first: a path below a mount point
is decided like the owner's URL and served through the ``TreeView`` left in
``environ[ENVIRON_VIEWS]``; the table itself goes to ``environ[ENVIRON_MOUNTS]`` so that
listings show the mount points. Own-tree requests that cannot involve a mount (and every
request of a user without file or folder grants) make no grant query; those of a user the mount
service remembers as holding no mount (``MountService.known_without_mounts``) do not even build
the request's ``RequestAuthz``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from wsgidav.dav_error import DAVError
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.decision import ALLOW, Decision
from oxidav.authz.grants.engine import GrantEngine
from oxidav.authz.grants.mount_names import rename
from oxidav.authz.grants.mounts import Mount, MountService, MountTable, involves_mounts
from oxidav.authz.grants.reshares import settle_reshares
from oxidav.authz.grants.store import GrantError, revoke
from oxidav.authz.policy import Verdict, authorize, decide
from oxidav.db.models.authz import Grant
from oxidav.environ import (
    ENVIRON_AUTHZ,
    ENVIRON_MOUNTS,
    ENVIRON_PRINCIPAL,
    ENVIRON_VIEWS,
    principal_of,
)
from oxidav.tree import InvalidName, normalize_path
from oxidav.urls import FILES, LEGACY_WEBDAV, destination_path

audit = logging.getLogger("oxidav.audit")


_ALLOWED = Verdict(ALLOW)


def _verdict_of(decision: Decision) -> Verdict:
    """``Verdict(decision)``; the common allowed one is built once (a verdict is frozen)."""
    return _ALLOWED if decision is ALLOW else Verdict(decision)


class AuthzMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        services = (config.get("oxidav") or {}).get("services")
        self.engine = GrantEngine(services.db) if services is not None else None
        self.mounts = (
            MountService(services.db, services.settings.share_folder)
            if services is not None
            else None
        )

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        destination = environ.get("HTTP_DESTINATION")
        dest_path = destination_path(destination) if destination else None
        verdict = self._verdict(environ, path, dest_path)
        decision = verdict.decision
        if not decision.allowed:
            if not verdict.audited:
                audit.info(
                    "deny user=%r method=%s path=%r destination=%r reason=%r status=%d",
                    environ.get("wsgidav.auth.user_name") or "",
                    environ.get("REQUEST_METHOD"),
                    path,
                    destination,
                    decision.reason,
                    decision.status,
                )
            raise DAVError(decision.status)
        if verdict.unshare is not None:
            return self._unshare(environ, start_response, verdict.unshare)
        if verdict.rename_mount is not None:
            return self._rename_mount(environ, start_response, *verdict.rename_mount)
        if verdict.views:
            environ[ENVIRON_VIEWS] = verdict.views
        result: Iterable[bytes] = self.next_app(environ, start_response)
        return result

    def _verdict(self, environ: dict[str, Any], path: str, dest_path: str | None) -> Verdict:
        principal = principal_of(environ)
        username = environ.get("wsgidav.auth.user_name") or ""
        own = decide(username, path, dest_path)
        if self.engine is None or not isinstance(principal, Principal):
            return _verdict_of(own)
        with_mounts = self._involves_mounts(username, path) or (
            dest_path is not None and self._involves_mounts(username, dest_path)
        )
        if own.allowed and not with_mounts:
            return _verdict_of(own)  # own paths: the fast path, no grant query
        if (
            own.allowed
            and self.mounts is not None
            and self.mounts.known_without_mounts(principal.user_id)
        ):
            return _verdict_of(own)  # own paths of a user known to hold no mount
        authz = self.engine.request(principal)
        environ[ENVIRON_AUTHZ] = authz
        mounts: MountTable | None = None
        if with_mounts and self.mounts is not None:
            mounts = self.mounts.table(authz)
            if mounts.mounts:
                environ[ENVIRON_MOUNTS] = mounts
            else:
                mounts = None
            if own.allowed and mounts is None:
                return _verdict_of(own)
        with self.engine.db.read() as session:
            return authorize(
                authz,
                session,
                environ.get("REQUEST_METHOD", "GET"),
                path,
                dest_path,
                environ.get("HTTP_DEPTH", "infinity"),
                mounts,
            )

    def _involves_mounts(self, username: str, path: str) -> bool:
        """Whether ``path`` is in the caller's own file tree where mounts may show."""
        if self.mounts is None or not username:
            return False
        own = f"{FILES}/{username}"
        if path == own or path.startswith(own + "/"):
            rest = path[len(own) :]
        elif path == LEGACY_WEBDAV or path.startswith(LEGACY_WEBDAV + "/"):
            rest = path[len(LEGACY_WEBDAV) :]
        else:
            return False
        try:
            return involves_mounts(self.mounts.folder, normalize_path(rest))
        except InvalidName:
            return False

    def _unshare(
        self, environ: dict[str, Any], start_response: Any, grant_id: int
    ) -> Iterable[bytes]:
        """DELETE of a mount point: the caller leaves the share (their grant is revoked)."""
        assert self.engine is not None
        try:
            with self.engine.db.write() as session:
                owner_id = session.scalar(select(Grant.owner_id).where(Grant.id == grant_id))
                revoke(session, grant_id)
                if owner_id is not None:  # the reshares made through it go too
                    settle_reshares(session, self.engine.db, int(owner_id))
        except GrantError:  # revoked by a concurrent request
            raise DAVError(404, "no such share") from None
        audit.info(
            "unshare user=%r grant=%d path=%r",
            environ.get("wsgidav.auth.user_name") or "",
            grant_id,
            environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
        )
        start_response("204 No Content", [("Content-Length", "0")])
        return [b""]

    def _rename_mount(
        self, environ: dict[str, Any], start_response: Any, mount: Mount, name: str
    ) -> Iterable[bytes]:
        """MOVE of a mount point within the share folder: the caller's name for it changes."""
        assert self.engine is not None and self.mounts is not None
        principal = environ[ENVIRON_PRINCIPAL]
        try:
            rename(self.engine.db, principal.user_id, mount.node.id, mount.node.user_id, name)
        except IntegrityError:  # a concurrent rename stored its row first
            raise DAVError(409, "the mount point was renamed concurrently") from None
        audit.info(
            "rename mount user=%r node=%d from=%r to=%r",
            environ.get("wsgidav.auth.user_name") or "",
            mount.node.id,
            mount.name,
            name,
        )
        start_response("201 Created", [("Content-Length", "0")])
        return [b""]
