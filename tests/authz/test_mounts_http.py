"""What a recipient sees: shares mounted in bob's own tree, over real HTTP, on both backends.

alice shares parts of her tree with bob; bob (like every Nextcloud client) only uses his own
URLs, ``/remote.php/dav/files/bob/…`` and ``/remote.php/webdav/…``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from hashlib import md5
from pathlib import Path

import pytest
from sqlalchemy import update

from oxidav.authz.grants.groups import add_member, create_group
from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant, revoke
from oxidav.authz.grants.targets import resolve_target, user_id
from oxidav.db.models.users import User
from oxidav.settings import SettingsError, load_settings
from oxidav.tree import used_bytes
from tests.support.engine_events import recorded_selects
from tests.support.live import LiveServer, in_process_server, make_settings

ALICE = "/remote.php/dav/files/alice"
BOB = "/remote.php/dav/files/bob"
LEGACY = "/remote.php/webdav"
PERMS = (
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    "<d:prop><d:getetag/><oc:permissions/><oc:owner-id/><oc:share-types/><oc:size/>"
    "</d:prop></d:propfind>"
)

ETAGS = '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>'


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """alice's tree: /Shared/{a.txt,b.txt,sub/c.txt}, /Other/a.txt and /secret.txt."""
    _alice_tree(live_server)
    return live_server


def _alice_tree(server: LiveServer) -> None:
    for method, path, body in (
        ("MKCOL", "/Shared", None),
        ("MKCOL", "/Shared/sub", None),
        ("PUT", "/Shared/a.txt", b"alpha"),
        ("PUT", "/Shared/b.txt", b"beta"),
        ("PUT", "/Shared/sub/c.txt", b"gamma"),
        ("MKCOL", "/Other", None),
        ("PUT", "/Other/a.txt", b"other"),
        ("PUT", "/secret.txt", b"secret"),
    ):
        assert server.request(method, ALICE + path, body).status == 201


def share(server: LiveServer, spec: str, role: Role) -> int:
    assert server.services is not None
    with server.services.db.write() as session:
        resource = resolve_target(session, spec)
        return grant(session, Subject.user(user_id(session, "bob")), resource, role)


def bob(server: LiveServer, method: str, path: str, body: bytes | None = None, **h: str) -> int:
    return server.request(method, path, body, headers=h, user="bob").status


def listing(server: LiveServer, path: str, user: str = "bob") -> dict[str, dict[str, str]]:
    """href -> {property local name: text} of a Depth 1 PROPFIND."""
    got = server.request("PROPFIND", path, PERMS, headers={"Depth": "1"}, user=user)
    assert got.status == 207, got.text
    found: dict[str, dict[str, str]] = {}
    for response in re.findall(r"<D:response.*?</D:response>", got.text, re.S):
        href = re.search(r"<D:href>(.*?)</D:href>", response)
        assert href is not None
        props = dict(re.findall(r"<(?:\w+:)?([\w-]+)(?: [^>]*)?>([^<]*)</", response))
        types = re.findall(r"share-type>(\d)<", response)
        props["share-types"] = ",".join(types)
        found[href.group(1)] = props
    return found


def test_viewer_sees_the_mount_in_his_own_tree(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    root = listing(server, BOB + "/")
    assert BOB + "/Shared/" in root
    mount = root[BOB + "/Shared/"]
    assert mount["owner-id"] == "alice"
    assert mount["permissions"] == "SMG"
    inside = listing(server, BOB + "/Shared/")
    assert set(inside) == {
        BOB + "/Shared/",
        BOB + "/Shared/a.txt",
        BOB + "/Shared/b.txt",
        BOB + "/Shared/sub/",
    }
    assert inside[BOB + "/Shared/a.txt"]["permissions"] == "SG"
    assert inside[BOB + "/Shared/sub/"]["permissions"] == "SG"
    got = server.request("GET", BOB + "/Shared/sub/c.txt", user="bob")
    assert (got.status, got.body) == (200, b"gamma")
    legacy = server.request("GET", LEGACY + "/Shared/a.txt", user="bob")
    assert (legacy.status, legacy.body) == (200, b"alpha")
    for method, path, body, headers in (
        ("PUT", "/Shared/a.txt", b"x", {}),
        ("PUT", "/Shared/new.txt", b"x", {}),
        ("DELETE", "/Shared/a.txt", None, {}),
        ("MKCOL", "/Shared/dir", None, {}),
        ("MOVE", "/Shared/a.txt", None, {"Destination": BOB + "/Shared/z.txt"}),
        ("PUT", "/Shared/sub/c.txt", b"x", {}),
    ):
        assert bob(server, method, BOB + path, body, **headers) == 403, (method, path)
    assert bob(server, "PUT", LEGACY + "/Shared/a.txt", b"x") == 403
    assert server.request("GET", ALICE + "/Shared/a.txt").body == b"alpha"
    assert bob(server, "GET", BOB + "/secret.txt") == 404


def test_editor_writes_land_in_the_owners_tree_and_quota(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.EDITOR)
    assert server.services is not None
    with server.services.db.read() as session:
        alice_id, bob_id = user_id(session, "alice"), user_id(session, "bob")
        before = used_bytes(session, alice_id)
    assert bob(server, "PUT", BOB + "/Shared/new.txt", b"0123456789") == 201
    assert server.request("GET", ALICE + "/Shared/new.txt").body == b"0123456789"
    with server.services.db.read() as session:
        assert used_bytes(session, alice_id) == before + 10
        assert used_bytes(session, bob_id) == 0
    assert bob(server, "PUT", LEGACY + "/Shared/sub/legacy.txt", b"L") == 201
    assert server.request("GET", ALICE + "/Shared/sub/legacy.txt").body == b"L"
    assert bob(server, "MKCOL", BOB + "/Shared/dir") == 201
    move = {"Destination": BOB + "/Shared/dir/moved.txt"}
    assert bob(server, "MOVE", BOB + "/Shared/new.txt", **move) == 201
    assert server.request("GET", ALICE + "/Shared/dir/moved.txt").body == b"0123456789"
    assert bob(server, "DELETE", BOB + "/Shared/b.txt") == 204
    assert server.request("GET", ALICE + "/Shared/b.txt").status == 404
    inside = listing(server, BOB + "/Shared/")
    assert inside[BOB + "/Shared/a.txt"]["permissions"] == "SGDNVW"
    assert inside[BOB + "/Shared/dir/"]["permissions"] == "SGDNVCK"
    assert inside[BOB + "/Shared/"]["permissions"] == "SMGCK"


def test_moves_across_the_mount_boundary_cross_trees(server: LiveServer) -> None:
    """As a Nextcloud client does when a file is moved into or out of a shared folder: the
    rows cross to the other owner's tree (content shared, not copied), quotas follow."""
    share(server, "files/alice/Shared", Role.EDITOR)
    assert server.services is not None
    with server.services.db.read() as session:
        alice_id, bob_id = user_id(session, "alice"), user_id(session, "bob")
        alice_before = used_bytes(session, alice_id)
    assert bob(server, "MKCOL", BOB + "/Mine") == 201
    assert bob(server, "PUT", BOB + "/Mine/m.txt", b"mine") == 201
    assert bob(server, "PUT", BOB + "/loose.txt", b"loose") == 201
    # Into the share: MOVE leaves nothing behind, COPY keeps the original.
    assert bob(server, "MOVE", BOB + "/Mine", Destination=BOB + "/Shared/Mine") == 201
    assert server.request("GET", ALICE + "/Shared/Mine/m.txt").body == b"mine"
    assert bob(server, "GET", BOB + "/Mine/m.txt") == 404
    assert bob(server, "COPY", BOB + "/loose.txt", Destination=BOB + "/Shared/l.txt") == 201
    assert server.request("GET", ALICE + "/Shared/l.txt").body == b"loose"
    assert bob(server, "GET", BOB + "/loose.txt") == 200
    with server.services.db.read() as session:
        assert used_bytes(session, alice_id) == alice_before + 4 + 5
        assert used_bytes(session, bob_id) == 5
    # Out of the share, through either of bob's URL spaces.
    assert bob(server, "MOVE", BOB + "/Shared/a.txt", Destination=BOB + "/a.txt") == 201
    assert server.request("GET", ALICE + "/Shared/a.txt").status == 404
    assert server.request("GET", BOB + "/a.txt", user="bob").body == b"alpha"
    copy_out = {"Destination": LEGACY + "/b-copy.txt"}
    assert bob(server, "COPY", LEGACY + "/Shared/b.txt", **copy_out) == 201
    assert server.request("GET", BOB + "/b-copy.txt", user="bob").body == b"beta"
    assert server.request("GET", ALICE + "/Shared/b.txt").body == b"beta"
    # Overwrite rules hold across trees too.
    no_overwrite = {"Destination": BOB + "/Shared/l.txt", "Overwrite": "F"}
    assert bob(server, "COPY", BOB + "/loose.txt", **no_overwrite) == 412
    assert bob(server, "PUT", BOB + "/loose.txt", b"newer") == 204
    assert bob(server, "COPY", BOB + "/loose.txt", Destination=BOB + "/Shared/l.txt") == 204
    assert server.request("GET", ALICE + "/Shared/l.txt").body == b"newer"
    # A mount point itself is neither moved out of the share folder nor overwritten (a
    # rename within it is the recipient's own: test_mount_names_http).
    assert bob(server, "MKCOL", BOB + "/Elsewhere") == 201
    assert bob(server, "MOVE", BOB + "/Shared", Destination=BOB + "/Elsewhere/Shared") == 403
    assert bob(server, "COPY", BOB + "/loose.txt", Destination=BOB + "/Shared") == 403
    # Within the share, as before.
    copy = {"Destination": BOB + "/Shared/sub/a-copy.txt"}
    assert bob(server, "COPY", BOB + "/Shared/b.txt", **copy) == 201
    assert server.request("GET", ALICE + "/Shared/sub/a-copy.txt").body == b"beta"


def test_a_viewer_copies_out_of_a_share_but_moves_nothing(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "PUT", BOB + "/mine.txt", b"m") == 201
    assert bob(server, "COPY", BOB + "/Shared/a.txt", Destination=BOB + "/a.txt") == 201
    assert server.request("GET", BOB + "/a.txt", user="bob").body == b"alpha"
    for method, src, dst in (
        ("MOVE", "/Shared/b.txt", "/b.txt"),
        ("MOVE", "/mine.txt", "/Shared/mine.txt"),
        ("COPY", "/mine.txt", "/Shared/mine.txt"),
    ):
        assert bob(server, method, BOB + src, Destination=BOB + dst) == 403, (method, src)
    assert server.request("GET", ALICE + "/Shared/b.txt").body == b"beta"
    assert server.request("GET", ALICE + "/Shared/mine.txt").status == 404
    assert bob(server, "GET", BOB + "/mine.txt") == 200


def test_a_move_into_a_share_counts_against_the_owners_quota(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.EDITOR)
    assert server.services is not None
    with server.services.db.write() as session:
        used = used_bytes(session, user_id(session, "alice"))
        session.execute(update(User).where(User.username == "alice").values(quota_bytes=used + 20))
    assert bob(server, "PUT", BOB + "/big.txt", b"x" * 30) == 201
    assert bob(server, "MOVE", BOB + "/big.txt", Destination=BOB + "/Shared/big.txt") == 507
    assert bob(server, "GET", BOB + "/big.txt") == 200
    assert server.request("GET", ALICE + "/Shared/big.txt").status == 404


def test_file_grant_mounts_only_that_file(server: LiveServer) -> None:
    share(server, "files/alice/Shared/a.txt", Role.EDITOR)
    root = listing(server, BOB + "/")
    assert BOB + "/a.txt" in root and BOB + "/Shared/" not in root
    assert root[BOB + "/a.txt"]["permissions"] == "SMGW"
    assert bob(server, "GET", BOB + "/a.txt") == 200
    assert bob(server, "GET", BOB + "/b.txt") == 404
    assert bob(server, "GET", BOB + "/Shared/b.txt") == 404
    assert bob(server, "PUT", BOB + "/a.txt", b"edited") == 204
    assert server.request("GET", ALICE + "/Shared/a.txt").body == b"edited"


def test_revoke_takes_effect_on_the_next_request(server: LiveServer) -> None:
    grant_id = share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 200
    assert server.services is not None
    with server.services.db.write() as session:
        revoke(session, grant_id)
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 404
    assert BOB + "/Shared/" not in listing(server, BOB + "/")


def test_delete_of_the_mount_point_leaves_the_share(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    assert bob(server, "DELETE", BOB + "/Shared") == 204
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 404
    assert server.request("GET", ALICE + "/Shared/a.txt").status == 200  # alice keeps it all


def test_group_grant_mounts(server: LiveServer) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        team = create_group(session, "team")
        add_member(session, team, user_id=user_id(session, "bob"))
        resource = resolve_target(session, "files/alice/Shared")
        grant(session, Subject.group(team), resource, Role.VIEWER)
    assert BOB + "/Shared/" in listing(server, BOB + "/")
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 200
    assert bob(server, "DELETE", BOB + "/Shared") == 403  # a group's share: not one member's
    owner_view = listing(server, ALICE + "/", user="alice")
    assert owner_view[ALICE + "/Shared/"]["share-types"] == "1"
    assert owner_view[ALICE + "/Other/"]["share-types"] == ""


def test_collisions_get_numbered_names(server: LiveServer) -> None:
    assert bob(server, "MKCOL", BOB + "/Shared") == 201
    assert bob(server, "PUT", BOB + "/Shared/mine.txt", b"m") == 201
    share(server, "files/alice/Shared", Role.VIEWER)
    share(server, "files/alice/Shared/a.txt", Role.VIEWER)
    share(server, "files/alice/Other/a.txt", Role.VIEWER)
    root = listing(server, BOB + "/")
    assert {BOB + "/Shared/", BOB + "/Shared%20(2)/", BOB + "/a.txt", BOB + "/a%20(2).txt"} <= set(
        root
    )
    assert root[BOB + "/Shared/"]["permissions"] == "RGDNVCK"  # his own folder
    assert bob(server, "GET", BOB + "/Shared/mine.txt") == 200
    got = server.request("GET", BOB + "/Shared%20(2)/b.txt", user="bob")
    assert (got.status, got.body) == (200, b"beta")
    # Deterministic: the older node gets the plain name.
    assert server.request("GET", BOB + "/a.txt", user="bob").body == b"alpha"
    assert server.request("GET", BOB + "/a%20(2).txt", user="bob").body == b"other"
    alice_shared = listing(server, ALICE + "/", user="alice")[ALICE + "/Shared/"]
    assert alice_shared["share-types"] == "0"


def test_mount_etag_rolls_up_into_bobs_root(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.VIEWER)
    before = listing(server, BOB + "/")
    assert server.request("PUT", ALICE + "/Shared/sub/c.txt", b"changed").status == 204
    after = listing(server, BOB + "/")
    assert after[BOB + "/"]["getetag"] != before[BOB + "/"]["getetag"]
    assert after[BOB + "/Shared/"]["getetag"] != before[BOB + "/Shared/"]["getetag"]
    depth0 = server.request("PROPFIND", BOB + "/", PERMS, headers={"Depth": "0"}, user="bob")
    assert after[BOB + "/"]["getetag"] in depth0.text
    # The mount point answers with alice's folder etag, size and id.
    alice = listing(server, ALICE + "/", user="alice")[ALICE + "/Shared/"]
    assert after[BOB + "/Shared/"]["getetag"] == alice["getetag"]
    assert after[BOB + "/Shared/"]["size"] == alice["size"]


@pytest.fixture
def shared_folder_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", db_url, share_folder="/Incoming")
    with in_process_server(settings) as server:
        _alice_tree(server)
        yield server


def test_share_folder_setting(shared_folder_server: LiveServer) -> None:
    server = shared_folder_server
    assert bob(server, "PUT", BOB + "/mine.txt", b"m") == 201
    root_before = listing(server, BOB + "/")
    assert BOB + "/Shared/" not in root_before
    share(server, "files/alice/Shared", Role.VIEWER)
    root = listing(server, BOB + "/")
    assert BOB + "/Incoming/" in root and BOB + "/Shared/" not in root
    incoming = listing(server, BOB + "/Incoming/")
    assert BOB + "/Incoming/Shared/" in incoming
    got = server.request("GET", BOB + "/Incoming/Shared/a.txt", user="bob")
    assert (got.status, got.body) == (200, b"alpha")
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 404
    # A change inside the share rolls up to bob's root through /Incoming.
    assert server.request("PUT", ALICE + "/Shared/a.txt", b"new").status == 204
    again = listing(server, BOB + "/")
    assert again[BOB + "/"]["getetag"] != root[BOB + "/"]["getetag"]
    assert again[BOB + "/Incoming/"]["getetag"] != root[BOB + "/Incoming/"]["getetag"]
    # A listing of etags alone (read from the fewest columns) rolls up the same.
    etags = server.request("PROPFIND", BOB + "/", ETAGS, headers={"Depth": "1"}, user="bob")
    assert etags.status == 207
    incoming = re.search(r"Incoming/</D:href>.*?<D:getetag>(.*?)</D:getetag>", etags.text)
    assert incoming is not None
    assert incoming.group(1) == again[BOB + "/Incoming/"]["getetag"]


def test_ocs_shared_with_me_gives_the_mount_path(server: LiveServer) -> None:
    assert bob(server, "MKCOL", BOB + "/Shared") == 201  # his own: the mount is "Shared (2)"
    share(server, "files/alice/Shared", Role.VIEWER)
    share(server, "files/alice/Other/a.txt", Role.EDITOR)
    url = "/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json&shared_with_me=true"
    got = server.request("GET", url, user="bob")
    assert got.status == 200
    shares = {s["item_type"]: s for s in json.loads(got.body)["ocs"]["data"]}
    assert (shares["folder"]["file_target"], shares["folder"]["path"]) == ("/Shared (2)",) * 2
    assert (shares["file"]["file_target"], shares["file"]["path"]) == ("/a.txt",) * 2
    mine = server.request("GET", url.replace("&shared_with_me=true", ""), user="alice")
    assert {s["path"] for s in json.loads(mine.body)["ocs"]["data"]} == {"/Shared", "/Other/a.txt"}


def test_mount_listing_costs_the_same_for_one_or_many_mounts(server: LiveServer) -> None:
    assert server.services is not None
    for i in range(6):
        assert server.request("PUT", f"{ALICE}/m{i}.txt", b"x" * i).status == 201
    share(server, "files/alice/m0.txt", Role.VIEWER)
    db_engine = server.services.db.engine
    listing(server, BOB + "/")  # warm: users, roots
    with recorded_selects(db_engine) as seen:
        one = listing(server, BOB + "/")
    one_mount = len(seen)
    for i in range(1, 6):
        share(server, f"files/alice/m{i}.txt", Role.EDITOR)
    listing(server, BOB + "/")
    with recorded_selects(db_engine) as seen:
        many = listing(server, BOB + "/")
    assert len(many) == len(one) + 5
    assert len(seen) == one_mount, seen


def test_a_user_without_mounts_reads_no_grants_until_a_share_reaches_him(
    server: LiveServer,
) -> None:
    """bob holds no share: once that is known his own requests make no grant or mount query;
    a share granted in this process shows on his very next request."""
    assert server.services is not None
    assert bob(server, "PUT", BOB + "/own.txt", b"mine") == 201
    assert bob(server, "GET", BOB + "/own.txt") == 200  # warm: users, roots, "no mounts"
    db_engine = server.services.db.engine
    with recorded_selects(db_engine) as seen:
        got = server.request("GET", BOB + "/own.txt", headers={"Range": "bytes=1-2"}, user="bob")
    assert (got.status, got.body) == (206, b"in")
    assert not [s for s in seen if "grant" in s or "authz" in s], seen
    share(server, "files/alice/Shared", Role.VIEWER)
    assert "/remote.php/dav/files/bob/Shared/" in listing(server, BOB + "/")
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 200
    assert bob(server, "GET", BOB + "/own.txt") == 200


@pytest.mark.parametrize("bad", ["Shared", "/a/../b", "/a\\b"])
def test_share_folder_must_be_an_absolute_folder(bad: str) -> None:
    with pytest.raises(SettingsError, match="share_folder"):
        load_settings(flags={"share_folder": bad}, env={})


def _bulk_as_bob(server: LiveServer, path: str, data: bytes) -> dict[str, object]:
    boundary = "b0undary"
    head = (
        f"--{boundary}\r\nContent-Length: {len(data)}\r\nX-File-MD5: {md5(data).hexdigest()}\r\n"
        f"X-File-Path: {path}\r\n\r\n"
    )
    body = head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Content-Type": f'multipart/related; boundary="{boundary}"'}
    got = server.request("POST", "/remote.php/dav/bulk", body, headers=headers, user="bob")
    assert got.status == 200, got.text
    entry: dict[str, object] = json.loads(got.body)[path]
    return entry


def _chunked_as_bob(server: LiveServer, transfer: str, dest: str, data: bytes) -> int:
    up = f"/remote.php/dav/uploads/bob/{transfer}"
    assert bob(server, "MKCOL", up) == 201
    assert bob(server, "PUT", f"{up}/1", data) == 201
    return bob(server, "MOVE", f"{up}/.file", Destination=dest, **{"OC-Total-Length": "3"})


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
def test_bulk_and_chunked_uploads_onto_a_file_mount(server: LiveServer, role: Role) -> None:
    """A file share mounted as bob's /a.txt: both Nextcloud upload paths write alice's file
    for an editor and are refused for a viewer, decided by ``oxidav.authz``."""
    share(server, "files/alice/Shared/a.txt", role)
    entry = _bulk_as_bob(server, "/a.txt", b"one")
    chunked = _chunked_as_bob(server, "77", BOB + "/a.txt", b"two")
    alice_a = server.request("GET", ALICE + "/Shared/a.txt").body
    if role is Role.EDITOR:
        assert entry["error"] is False, entry
        assert chunked == 204 and alice_a == b"two"
    else:
        assert entry["error"] is True and str(entry["message"]).startswith("403"), entry
        assert chunked == 403 and alice_a == b"alpha"
    assert bob(server, "GET", BOB + "/b.txt") == 404  # the sibling stays out of reach
    assert _bulk_as_bob(server, "/b.txt", b"own")["error"] is False  # bob's own /b.txt
    assert server.request("GET", ALICE + "/Shared/b.txt").body == b"beta"


def test_a_new_share_shows_on_the_next_request_after_an_empty_listing(
    server: LiveServer,
) -> None:
    """A user seen without mounts is remembered briefly; a grant made here drops that at once."""
    assert f"{BOB}/Shared/" not in listing(server, BOB + "/")
    assert bob(server, "GET", BOB + "/Shared/a.txt") == 404
    share(server, "files/alice/Shared", Role.VIEWER)
    assert f"{BOB}/Shared/" in listing(server, BOB + "/")
    assert server.request("GET", BOB + "/Shared/a.txt", user="bob").body == b"alpha"


def test_a_lock_taken_through_a_mount_refreshes_there(server: LiveServer) -> None:
    share(server, "files/alice/Shared", Role.EDITOR)
    lock = (
        '<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
        "</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
    )
    taken = server.request("LOCK", BOB + "/Shared/a.txt", lock, user="bob")
    assert taken.status == 200
    token = taken.headers["lock-token"]
    assert server.request("PUT", ALICE + "/Shared/a.txt", b"x").status == 423
    refresh = {"If": f"({token})", "Timeout": "Second-300"}
    renewed = server.request("LOCK", BOB + "/Shared/a.txt", None, refresh, user="bob")
    assert renewed.status == 200, renewed.text
    assert f"<D:href>{BOB}/Shared/a.txt</D:href>" in renewed.text.replace("ns0:", "D:")
