"""Grants over real HTTP: bob works in a folder (or file) of alice's that she shared with him.

bob reaches a share through his mount (``/remote.php/dav/files/bob/Shared``): since issue 25
another user's home answers 404 whatever grants exist, as in Nextcloud.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from sqlalchemy import update

from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant, revoke
from oxidav.authz.grants.targets import resolve_target, user_id
from oxidav.db import utcnow
from oxidav.db.models.authz import Grant
from oxidav.tree import used_bytes
from tests.support.live import LiveServer

ALICE = "/remote.php/dav/files/alice"
BOB = "/remote.php/dav/files/bob"
#: alice's /Shared as bob sees it: his mount point of the same name.
MOUNT = BOB + "/Shared"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """alice's tree: /Shared/{a.txt,b.txt,sub/c.txt} and /secret.txt."""
    for method, path, body in (
        ("MKCOL", "/Shared", None),
        ("MKCOL", "/Shared/sub", None),
        ("PUT", "/Shared/a.txt", b"alpha"),
        ("PUT", "/Shared/b.txt", b"beta"),
        ("PUT", "/Shared/sub/c.txt", b"gamma"),
        ("PUT", "/secret.txt", b"secret"),
    ):
        assert live_server.request(method, ALICE + path, body).status == 201
    return live_server


def share(server: LiveServer, spec: str, role: Role, **kwargs: object) -> int:
    assert server.services is not None
    with server.services.db.write() as session:
        resource = resolve_target(session, spec)
        bob = user_id(session, "bob")
        return grant(session, Subject.user(bob), resource, role, **kwargs)  # type: ignore[arg-type]


def bob(
    server: LiveServer, method: str, path: str, body: bytes | None = None, /, **headers: str
) -> int:
    return server.request(method, path, body, headers=headers, user="bob").status


def test_viewer_reads_inside_and_is_refused_writes(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    listing = server.request("PROPFIND", MOUNT + "/", headers={"Depth": "1"}, user="bob")
    assert listing.status == 207
    assert f"{MOUNT}/a.txt" in listing.text and f"{MOUNT}/sub/" in listing.text
    got = server.request("GET", MOUNT + "/sub/c.txt", user="bob")
    assert (got.status, got.body) == (200, b"gamma")
    caplog.set_level(logging.INFO, logger="oxidav.audit")
    for method, path, body, headers in (
        ("PUT", "/a.txt", b"x", {}),
        ("PUT", "/new.txt", b"x", {}),
        ("DELETE", "/a.txt", None, {}),
        ("MKCOL", "/dir", None, {}),
        ("MOVE", "/a.txt", None, {"Destination": MOUNT + "/z.txt"}),
    ):
        caplog.clear()
        assert bob(server, method, MOUNT + path, body, **headers) == 403, (method, path)
        denials = [r for r in caplog.records if r.name == "oxidav.audit"]
        assert len(denials) == 1, (method, path)
    got = server.request("GET", ALICE + "/Shared/a.txt", user="alice")
    assert got.body == b"alpha"


def test_viewer_gets_404_outside_the_share(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "GET", ALICE + "/secret.txt") == 404
    assert bob(server, "PROPFIND", ALICE + "/", Depth="1") == 404
    assert bob(server, "DELETE", ALICE + "/secret.txt") == 404
    assert bob(server, "GET", ALICE + "/Shared/missing.txt") == 404
    assert bob(server, "GET", "/remote.php/dav/files/nobody/x") == 404
    assert bob(server, "PROPFIND", "/remote.php/dav/uploads/alice/", Depth="1") == 404
    assert bob(server, "PROPFIND", "/remote.php/dav/trashbin/alice/trash/", Depth="1") == 404


def test_direct_file_grant_does_not_reach_siblings(server: LiveServer) -> None:
    share(server, "files/alice/Shared/a.txt", Role.EDITOR)
    assert bob(server, "GET", BOB + "/a.txt") == 200  # the file's mount
    assert bob(server, "PROPFIND", BOB + "/a.txt", Depth="0") == 207
    assert bob(server, "GET", BOB + "/b.txt") == 404
    assert bob(server, "PROPFIND", MOUNT + "/", Depth="1") == 404
    assert bob(server, "PUT", BOB + "/a.txt", b"edited") == 204
    assert server.request("GET", ALICE + "/Shared/a.txt").body == b"edited"


def test_editor_writes_land_in_the_owners_tree(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.EDITOR)
    assert server.services is not None
    with server.services.db.read() as session:
        alice_id, bob_id = user_id(session, "alice"), user_id(session, "bob")
        alice_before = used_bytes(session, alice_id)
    assert bob(server, "PUT", MOUNT + "/new.txt", b"0123456789") == 201
    assert server.request("GET", ALICE + "/Shared/new.txt").body == b"0123456789"
    assert bob(server, "GET", BOB + "/new.txt") == 404
    with server.services.db.read() as session:
        assert used_bytes(session, alice_id) == alice_before + 10
        assert used_bytes(session, bob_id) == 0
    assert bob(server, "MKCOL", MOUNT + "/dir") == 201
    move = {"Destination": MOUNT + "/dir/moved.txt"}
    assert bob(server, "MOVE", MOUNT + "/new.txt", **move) == 201
    assert bob(server, "DELETE", MOUNT + "/b.txt") == 204
    assert server.request("GET", ALICE + "/Shared/b.txt").status == 404
    # Out of the shared folder: still nothing, and the shared folder itself stays put (a MOVE
    # of the mount point renames bob's mount only).
    assert bob(server, "PUT", ALICE + "/outside.txt", b"x") == 404
    assert bob(server, "MOVE", MOUNT, Destination=BOB + "/Elsewhere") == 201
    assert server.request("GET", ALICE + "/Shared/a.txt").status == 200
    assert server.request("GET", ALICE + "/Elsewhere").status == 404
    assert bob(server, "MOVE", BOB + "/Elsewhere", Destination=MOUNT) == 201
    out = {"Destination": ALICE + "/moved.txt"}
    assert bob(server, "MOVE", MOUNT + "/a.txt", **out) == 404
    # Between two users' trees: the rows cross over (a root folder never moves).
    assert bob(server, "COPY", MOUNT + "/a.txt", Destination=BOB + "/a.txt") == 201
    assert server.request("GET", BOB + "/a.txt", user="bob").body == b"alpha"
    assert bob(server, "COPY", BOB + "/", Destination=MOUNT + "/x") == 403
    assert bob(server, "COPY", BOB + "/a.txt", Destination=ALICE + "/secret2.txt") == 404


def test_revoked_grant_stops_the_next_request(server: LiveServer) -> None:
    grant_id = share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "GET", MOUNT + "/a.txt") == 200
    assert server.services is not None
    with server.services.db.write() as session:
        revoke(session, grant_id)
    assert bob(server, "GET", MOUNT + "/a.txt") == 404


def test_expired_grant_allows_nothing(server: LiveServer) -> None:
    grant_id = share(
        server, "files/alice/Shared", Role.VIEWER, expires_at=utcnow() + timedelta(days=1)
    )
    assert server.services is not None
    with server.services.db.write() as session:
        past = utcnow() - timedelta(seconds=1)
        session.execute(update(Grant).where(Grant.id == grant_id).values(expires_at=past))
    assert bob(server, "GET", MOUNT + "/a.txt") == 404
    assert bob(server, "PROPFIND", MOUNT + "/", Depth="1") == 404


def test_own_paths_unchanged(server: LiveServer) -> None:
    assert bob(server, "PUT", BOB + "/mine.txt", b"m") == 201
    assert bob(server, "GET", BOB + "/mine.txt") == 200
    assert server.request("GET", BOB + "/mine.txt").status == 404  # alice, no grant


LOCKINFO = (
    '<?xml version="1.0" encoding="utf-8"?><d:lockinfo xmlns:d="DAV:">'
    "<d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype>"
    "<d:owner>bob</d:owner></d:lockinfo>"
)


def test_lock_follows_the_role(server: LiveServer) -> None:
    grant_id = share(server, "files/alice/Shared", Role.VIEWER)
    url = MOUNT + "/a.txt"
    assert server.request("LOCK", url, LOCKINFO, user="bob").status == 403
    share(server, "files/alice/Shared", Role.EDITOR)
    locked = server.request("LOCK", url, LOCKINFO, {"Timeout": "Second-60"}, user="bob")
    assert locked.status == 200
    token = locked.headers["lock-token"]
    assert server.request("PUT", ALICE + "/Shared/a.txt", b"x").status == 423  # alice, no token
    unlock = server.request("UNLOCK", url, headers={"Lock-Token": token}, user="bob")
    assert unlock.status == 204
    assert server.services is not None
    with server.services.db.write() as session:
        revoke(session, grant_id)
    # The mount is gone: bob's own tree has no /Shared folder to lock a member of.
    assert server.request("LOCK", url, LOCKINFO, user="bob").status == 409


def test_access_log_names_the_caller_not_the_owner(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    seen: list[str] = []
    logged = threading.Event()

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "/Shared/a.txt" in record.getMessage():
                seen.append(record.getMessage())
                logged.set()

    access = logging.getLogger("oxidav.access")
    handler, level = Catch(), access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    try:
        assert bob(server, "GET", MOUNT + "/a.txt") == 200
        # The line is written once the body has gone out: wait for it, not for a time.
        assert logged.wait(timeout=10)
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    # The access line: METHOD PATH STATUS TIME user=… addr=… bytes=… id=… (oxidav.access_log).
    assert " user=bob " in seen[0] and " user=alice " not in seen[0]


def test_shared_folder_with_non_ascii_name(server: LiveServer) -> None:
    folder = ALICE + "/%C3%9Cber%20uns"  # "Über uns"
    assert server.request("MKCOL", folder).status == 201
    assert server.request("PUT", folder + "/caf%C3%A9.txt", b"cafe").status == 201
    share(server, "files/alice/Über uns", Role.VIEWER)
    mounted = BOB + "/%C3%9Cber%20uns"
    got = server.request("GET", mounted + "/caf%C3%A9.txt", user="bob")
    assert (got.status, got.body) == (200, b"cafe")
    copy = {"Destination": f"http://localhost{mounted}/copy.txt"}
    assert bob(server, "COPY", mounted + "/caf%C3%A9.txt", **copy) == 403


def test_copy_into_another_tree_needs_a_share_there(server: LiveServer) -> None:
    assert bob(server, "PUT", BOB + "/mine.txt", b"m") == 201
    into_alice = {"Destination": ALICE + "/Shared/mine.txt"}
    assert bob(server, "COPY", BOB + "/mine.txt", **into_alice) == 404
    share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "COPY", BOB + "/mine.txt", **into_alice) == 404  # alice's home
    into_mount = {"Destination": MOUNT + "/mine.txt"}
    assert bob(server, "COPY", BOB + "/mine.txt", **into_mount) == 403
    share(server, "files/alice/Shared", Role.EDITOR)
    assert bob(server, "COPY", BOB + "/mine.txt", **into_mount) == 201
    assert server.request("GET", ALICE + "/Shared/mine.txt").body == b"m"
