"""Helpers of the Nextcloud tests: bulk bodies, tree reads through the blob chain, a share,
the OCS Share API and the tree its tests share."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import select

from oxidav.authz.authn import accounts
from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant
from oxidav.authz.grants.targets import resolve_target
from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.tree import resolve, used_bytes
from oxidav.tree.types import NodeInfo
from tests.support.live import LiveServer

BOUNDARY = "boundary_.oOo._abc123"
SHARES_V2 = "/ocs/v2.php/apps/files_sharing/api/v1/shares"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def bulk_part(
    path: str,
    data: bytes,
    md5: str | None = None,
    mtime: int | None = 1700000000,
    length: int | None = None,
) -> bytes:
    lines = [f"--{BOUNDARY}"]
    lines.append(f"Content-Length: {len(data) if length is None else length}")
    lines.append("Content-Type: application/octet-stream")
    lines.append(f"X-File-MD5: {hashlib.md5(data).hexdigest() if md5 is None else md5}")
    if mtime is not None:
        lines.append(f"X-File-Mtime: {mtime}")
    lines.append(f"X-File-Path: {path}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + data + b"\r\n"


def bulk_body(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


BULK_HEADERS = {"Content-Type": f'multipart/related; boundary="{BOUNDARY}"'}


def user_id(db: Database, name: str) -> int:
    with db.read() as session:
        return int(session.scalar(select(User.id).where(User.username == name)) or 0)


def node_at(db: Database, uid: int, path: str) -> NodeInfo | None:
    with db.read() as session:
        return resolve(session, uid, path)


def content_of(chain: BlobChain, node: NodeInfo) -> bytes:
    if node.manifest_hash is None:
        return b""
    with chain.open(node.manifest_hash) as reader:
        return reader.read()


def share_photos(live: LiveServer, role: Role) -> tuple[int, int]:
    """alice's /Photos (a.txt, sub/) shared with bob as ``role``: (alice's id, bob's id)."""
    assert live.services is not None
    for method, path, data in (
        ("MKCOL", "/Photos", None),
        ("MKCOL", "/Photos/sub", None),
        ("PUT", "/Photos/a.txt", b"alpha"),
    ):
        assert live.request(method, "/remote.php/dav/files/alice" + path, data).status == 201
    db = live.services.db
    alice, bob = user_id(db, "alice"), user_id(db, "bob")
    with db.write() as session:
        grant(session, Subject.user(bob), resolve_target(session, "files/alice/Photos"), role)
    return alice, bob


def used(db: Database, uid: int) -> int:
    with db.read() as session:
        return used_bytes(session, uid)


def ocs(
    server: LiveServer,
    method: str,
    url: str,
    user: str = "alice",
    params: dict[str, Any] | None = None,
    query: str = "format=json",
) -> tuple[int, dict[str, Any]]:
    """An OCS call with a form body: (HTTP status, the ``ocs`` object of the JSON answer)."""
    body = urlencode(params) if params is not None else None
    resp = server.request(method, f"{url}?{query}", body, headers=FORM, user=user)
    return resp.status, json.loads(resp.body)["ocs"]


def sharing_tree(server: LiveServer) -> LiveServer:
    """alice has /Shared/{a.txt,sub/} and /other.txt; carol exists too."""
    for method, path, body in (
        ("MKCOL", "/Shared", None),
        ("MKCOL", "/Shared/sub", None),
        ("PUT", "/Shared/a.txt", b"alpha"),
        ("PUT", "/other.txt", b"other"),
    ):
        assert server.request(method, "/remote.php/dav/files/alice" + path, body).status == 201
    assert server.services is not None
    accounts.create_user(server.services.db, "carol", "secret", email="carol@example.org")
    server.users["carol"] = "secret"
    return server
