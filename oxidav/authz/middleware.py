"""Authorization middleware: asks ``oxidav.authz.policy`` about every request after login.

It sits after authentication and before the Nextcloud layer and the request resolver, so no
handler below it sees a request it may not serve. Every denial writes one structured audit
line (who, method, path, why) to the ``oxidav.audit`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from wsgidav.dav_error import DAVError
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.authz.policy import decide, destination_path

audit = logging.getLogger("oxidav.audit")


class AuthzMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        username = environ.get("wsgidav.auth.user_name") or ""
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        destination = environ.get("HTTP_DESTINATION")
        decision = decide(username, path, destination_path(destination) if destination else None)
        if not decision.allowed:
            audit.info(
                "deny user=%r method=%s path=%r destination=%r reason=%r status=%d",
                username,
                environ.get("REQUEST_METHOD"),
                path,
                destination,
                decision.reason,
                decision.status,
            )
            raise DAVError(decision.status)
        result: Iterable[bytes] = self.next_app(environ, start_response)
        return result
