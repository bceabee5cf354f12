"""Stored mount names (issue 25 item 6), over real HTTP on both backends: a share keeps the name
it got in its recipient's tree — a later share with the same name never takes it over — and the
recipient may rename it for himself alone (Nextcloud's per-recipient ``file_target``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from sqlalchemy import select

from oxidav.authz.authn import accounts
from oxidav.authz.grants.groups import add_member, create_group
from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant
from oxidav.authz.grants.targets import resolve_target, user_id
from oxidav.db.models.mount_names import MountName
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud import ocs

SHARES = "/ocs/v2.php/apps/files_sharing/api/v1/shares"
FILES = "/remote.php/dav/files"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """alice, bob, carol and dave."""
    assert live_server.services is not None
    for name in ("carol", "dave"):
        accounts.create_user(live_server.services.db, name, "secret")
        live_server.users[name] = "secret"
    return live_server


def dav(server: LiveServer, user: str, method: str, path: str, body: bytes | None = None,
        **headers: str) -> int:  # fmt: skip
    url = f"{FILES}/{user}{quote(path)}"
    return server.request(method, url, body, headers=headers, user=user).status


def share(server: LiveServer, owner: str, path: str, with_: str, share_type: int = 0) -> None:
    params = {"path": path, "shareType": share_type, "shareWith": with_, "permissions": 15}
    status, doc = ocs(server, "POST", SHARES, owner, params)
    assert status == 200, doc


def targets(server: LiveServer, user: str) -> dict[str, str]:
    """OCS ``shared_with_me``: file_target -> the sharer."""
    status, doc = ocs(server, "GET", SHARES, user, query="format=json&shared_with_me=true")
    assert status == 200, doc
    data: list[dict[str, Any]] = doc["data"]
    return {s["file_target"]: s["uid_owner"] for s in data}


def names(server: LiveServer, user: str) -> set[str]:
    """The members of the user's root folder, as PROPFIND lists them."""
    got = server.request("PROPFIND", f"{FILES}/{user}/", headers={"Depth": "1"}, user=user)
    assert got.status == 207, got.text
    hrefs = re.findall(r"<D:href>(.*?)</D:href>", got.text)
    prefix = f"{FILES}/{user}/"
    return {unquote(h[len(prefix) :].strip("/")) for h in hrefs if h != prefix}


def body(server: LiveServer, user: str, path: str) -> bytes:
    got = server.request("GET", f"{FILES}/{user}{quote(path)}", user=user)
    assert got.status == 200, (user, path, got.status)
    return got.body


def test_a_later_share_never_takes_a_mount_name_over(server: LiveServer) -> None:
    # carol's /Proj is the older node: by (name, node id) order it would win "Proj".
    assert dav(server, "carol", "MKCOL", "/Proj") == 201
    assert dav(server, "carol", "PUT", "/Proj/c.txt", b"carol") == 201
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    assert dav(server, "alice", "PUT", "/Proj/a.txt", b"alice") == 201
    share(server, "alice", "/Proj", "bob")
    assert dav(server, "bob", "PUT", "/Proj/up1.txt", b"one") == 201
    assert body(server, "alice", "/Proj/up1.txt") == b"one"
    share(server, "carol", "/Proj", "bob")
    # bob's /Proj is still alice's; carol's shows as "Proj (2)".
    assert names(server, "bob") >= {"Proj", "Proj (2)"}
    assert body(server, "bob", "/Proj/a.txt") == b"alice"
    assert body(server, "bob", "/Proj (2)/c.txt") == b"carol"
    assert targets(server, "bob") == {"/Proj": "alice", "/Proj (2)": "carol"}
    # The client's next queued upload lands in alice's tree, not carol's.
    assert dav(server, "bob", "PUT", "/Proj/up2.txt", b"two") == 201
    assert body(server, "alice", "/Proj/up2.txt") == b"two"
    assert dav(server, "carol", "GET", "/Proj/up2.txt") == 404


def test_the_recipient_renames_a_mount_for_himself(server: LiveServer) -> None:
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    assert dav(server, "alice", "PUT", "/Proj/a.txt", b"alice") == 201
    share(server, "alice", "/Proj", "bob")
    share(server, "alice", "/Proj", "carol")
    assert dav(server, "bob", "PUT", "/mine.txt", b"mine") == 201
    assert dav(server, "bob", "MOVE", "/Proj", Destination=f"{FILES}/bob/Work") == 201
    assert body(server, "bob", "/Work/a.txt") == b"alice"
    assert dav(server, "bob", "GET", "/Proj/a.txt") == 404
    assert targets(server, "bob") == {"/Work": "alice"}
    # The owner's folder and the other recipient's name are untouched.
    assert body(server, "alice", "/Proj/a.txt") == b"alice"
    assert dav(server, "alice", "GET", "/Work/a.txt") == 404
    assert body(server, "carol", "/Proj/a.txt") == b"alice"
    assert targets(server, "carol") == {"/Proj": "alice"}
    # Writes through the new name land in alice's tree.
    assert dav(server, "bob", "PUT", "/Work/b.txt", b"bob") == 201
    assert body(server, "alice", "/Proj/b.txt") == b"bob"
    # Stored: the row holds it, and the owner's rename does not move it.
    assert server.services is not None
    with server.services.db.read() as session:
        bob_id = user_id(session, "bob")
        stored = session.scalars(select(MountName.name).where(MountName.user_id == bob_id))
        assert list(stored) == ["Work"]
    assert dav(server, "alice", "MOVE", "/Proj", Destination=f"{FILES}/alice/Renamed") == 201
    assert body(server, "bob", "/Work/a.txt") == b"alice"
    assert body(server, "carol", "/Proj/a.txt") == b"alice"
    # A mount never replaces anything, nor leaves the share folder's level.
    assert dav(server, "bob", "MOVE", "/Work", Destination=f"{FILES}/bob/mine.txt") == 403
    assert dav(server, "bob", "MKCOL", "/Dir") == 201
    assert dav(server, "bob", "MOVE", "/Work", Destination=f"{FILES}/bob/Dir/Work") == 403
    assert body(server, "bob", "/mine.txt") == b"mine"
    assert body(server, "bob", "/Work/a.txt") == b"alice"


def test_a_mount_keeps_its_name_against_a_new_own_node(server: LiveServer) -> None:
    """The path names the mount, so the recipient cannot make an own node of that name."""
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    share(server, "alice", "/Proj", "bob")
    assert dav(server, "bob", "MKCOL", "/Proj") == 405
    assert dav(server, "bob", "PUT", "/loose.txt", b"x") == 201
    assert dav(server, "bob", "MOVE", "/loose.txt", Destination=f"{FILES}/bob/Proj") == 403
    assert targets(server, "bob") == {"/Proj": "alice"}
    assert dav(server, "alice", "GET", "/Proj/loose.txt") == 404


def test_group_members_each_get_their_own_name(server: LiveServer) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        group = create_group(session, "team")
        for member in ("bob", "carol"):
            add_member(session, group, user_id=user_id(session, member))
    assert dav(server, "bob", "MKCOL", "/Team") == 201  # bob's own folder keeps its name
    assert dav(server, "alice", "MKCOL", "/Team") == 201
    assert dav(server, "alice", "PUT", "/Team/t.txt", b"team") == 201
    share(server, "alice", "/Team", "team", share_type=1)
    assert targets(server, "bob") == {"/Team (2)": "alice"}
    assert targets(server, "carol") == {"/Team": "alice"}
    assert body(server, "bob", "/Team (2)/t.txt") == b"team"
    assert body(server, "carol", "/Team/t.txt") == b"team"
    # bob renames his; carol's stays.
    assert dav(server, "bob", "MOVE", "/Team (2)", Destination=f"{FILES}/bob/Alice") == 201
    assert targets(server, "bob") == {"/Alice": "alice"}
    assert targets(server, "carol") == {"/Team": "alice"}
    assert body(server, "bob", "/Alice/t.txt") == b"team"
    # dave joins later and gets his own name on first sight.
    assert dav(server, "dave", "MKCOL", "/Team") == 201
    with server.services.db.write() as session:
        add_member(session, group, user_id=user_id(session, "dave"))
    assert targets(server, "dave") == {"/Team (2)": "alice"}
    assert names(server, "dave") >= {"Team", "Team (2)"}


def test_first_sight_names_by_the_former_rule(server: LiveServer) -> None:
    """Shares made before names were stored (or before the recipient's first request) are
    named as before — in (name, node id) order — so nothing changes at upgrade."""
    assert dav(server, "carol", "MKCOL", "/Proj") == 201
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    assert dav(server, "bob", "PUT", "/Proj", b"own file") == 201
    assert server.services is not None
    with server.services.db.write() as session:  # as before the upgrade: no name stored
        bob_id = user_id(session, "bob")
        for owner in ("alice", "carol"):
            grant(session, Subject.user(bob_id), resolve_target(session, f"files/{owner}/Proj"),
                  Role.EDITOR)  # fmt: skip
    assert targets(server, "bob") == {"/Proj (2)": "carol", "/Proj (3)": "alice"}
    assert names(server, "bob") >= {"Proj", "Proj (2)", "Proj (3)"}
    assert body(server, "bob", "/Proj") == b"own file"


def test_a_share_is_named_when_it_is_made(server: LiveServer) -> None:
    """bob makes no request between the two shares: the first one made still keeps "Proj"."""
    assert dav(server, "carol", "MKCOL", "/Proj") == 201  # the older node
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    assert dav(server, "alice", "PUT", "/Proj/a.txt", b"alice") == 201
    params = {"path": "/Proj", "shareType": 0, "shareWith": "bob", "permissions": 15}
    status, doc = ocs(server, "POST", SHARES, "alice", params)
    assert (status, doc["data"]["file_target"]) == (200, "/Proj")
    status, doc = ocs(server, "POST", SHARES, "carol", params)
    assert (status, doc["data"]["file_target"]) == (200, "/Proj (2)")
    assert targets(server, "bob") == {"/Proj": "alice", "/Proj (2)": "carol"}
    assert body(server, "bob", "/Proj/a.txt") == b"alice"


@pytest.fixture
def incoming_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", db_url, share_folder="/Incoming")
    with in_process_server(settings) as server:
        yield server


def test_renaming_within_the_share_folder(incoming_server: LiveServer) -> None:
    server = incoming_server
    assert dav(server, "alice", "MKCOL", "/Proj") == 201
    assert dav(server, "alice", "PUT", "/Proj/a.txt", b"alice") == 201
    share(server, "alice", "/Proj", "bob")
    assert targets(server, "bob") == {"/Incoming/Proj": "alice"}
    incoming = f"{FILES}/bob/Incoming"
    # Out of the share folder: refused; within it: renamed.
    assert dav(server, "bob", "MOVE", "/Incoming/Proj", Destination=f"{FILES}/bob/Proj") == 403
    assert dav(server, "bob", "MOVE", "/Incoming/Proj", Destination=f"{incoming}/Work") == 201
    assert body(server, "bob", "/Incoming/Work/a.txt") == b"alice"
    assert targets(server, "bob") == {"/Incoming/Work": "alice"}
    legacy = {"Destination": "/remote.php/webdav/Incoming/Again"}
    got = server.request("MOVE", "/remote.php/webdav/Incoming/Work", headers=legacy, user="bob")
    assert got.status == 201
    assert body(server, "bob", "/Incoming/Again/a.txt") == b"alice"
