"""Shares with Nextcloud permission bits for the tests: users, an OCS share call, WebDAV requests
as one user, the status of an answer."""

from __future__ import annotations

from typing import Any

from oxidav.authz.authn import accounts
from tests.support.live import LiveServer, Response
from tests.support.nextcloud import ocs

SHARES = "/ocs/v2.php/apps/files_sharing/api/v1/shares"


DAV = "/remote.php/dav/files"


LOCKINFO = (
    '<?xml version="1.0" encoding="utf-8"?><d:lockinfo xmlns:d="DAV:">'
    "<d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype>"
    "<d:owner>bob</d:owner></d:lockinfo>"
)


def add_users(server: LiveServer, *names: str) -> LiveServer:
    assert server.services is not None
    for name in names:
        accounts.create_user(server.services.db, name, "secret", email=f"{name}@example.org")
        server.users[name] = "secret"
    return server


def dav(
    server: LiveServer, user: str, method: str, path: str, body: Any = None, **headers: str
) -> Response:
    return server.request(method, f"{DAV}/{user}{path}", body, headers=headers, user=user)


def status(
    server: LiveServer, user: str, method: str, path: str, body: Any = None, **h: str
) -> int:
    return int(dav(server, user, method, path, body, **h).status)


def share(
    server: LiveServer, user: str, path: str, to: str, bits: int, **more: Any
) -> tuple[int, dict[str, Any]]:
    params = {"path": path, "shareType": 0, "shareWith": to, "permissions": bits, **more}
    return ocs(server, "POST", SHARES, user, params)
