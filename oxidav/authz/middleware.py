"""Authorization middleware: asks ``oxidav.authz.policy`` about every request after login.

It sits after authentication and before the Nextcloud layer and the request resolver, so no
handler below it sees a request it may not serve. Each request gets one ``RequestAuthz`` (the
grant engine's per-request context, also left in ``environ["oxidav.authz"]`` for the layers
below). Every denial writes exactly one structured audit line to the ``oxidav.audit`` logger:
the engine's own line for a grant denial, the line written here for any other.

A request allowed into another user's file tree (a share) is served *in the owner's tree*: the
owner's name goes to ``environ["oxidav.authz.acting_for"]``, which the files provider honours,
so writes land in the owner's tree and count against the owner's quota, while the caller stays
the authenticated user everywhere else (locks are taken in the caller's name, the access log
names the caller).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from wsgidav.dav_error import DAVError
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.authz.credential_cache import Principal
from oxidav.authz.domain_controller import ENVIRON_PRINCIPAL
from oxidav.authz.engine import GrantEngine
from oxidav.authz.policy import Verdict, authorize, decide, destination_path

audit = logging.getLogger("oxidav.audit")

ENVIRON_AUTHZ = "oxidav.authz"
ENVIRON_ACTING_FOR = "oxidav.authz.acting_for"


class AuthzMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        services = (config.get("oxidav") or {}).get("services")
        self.engine = GrantEngine(services.db) if services is not None else None

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
        if verdict.acting_owner is not None:
            environ[ENVIRON_ACTING_FOR] = verdict.acting_owner
        result: Iterable[bytes] = self.next_app(environ, start_response)
        return result

    def _verdict(self, environ: dict[str, Any], path: str, dest_path: str | None) -> Verdict:
        principal = environ.get(ENVIRON_PRINCIPAL)
        username = environ.get("wsgidav.auth.user_name") or ""
        own = decide(username, path, dest_path)
        if own.allowed or self.engine is None or not isinstance(principal, Principal):
            return Verdict(own)  # own paths: the fast path, no grant query
        authz = self.engine.request(principal)
        environ[ENVIRON_AUTHZ] = authz
        with self.engine.db.read() as session:
            return authorize(
                authz,
                session,
                environ.get("REQUEST_METHOD", "GET"),
                path,
                dest_path,
                environ.get("HTTP_DEPTH", "infinity"),
            )
