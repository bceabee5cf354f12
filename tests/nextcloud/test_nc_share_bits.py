"""Shares exactly as people mean them (issue 25), over real HTTP: permission bits one by one,
reshares tied to the resharer's grant, no existence oracle, nobody else's home.

Every share here is made through the OCS Share API and used through the recipient's mounts
(``/remote.php/dav/files/<self>/<name>``), as a Nextcloud client does. One server per test
(and backend); each test checks many cells.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlalchemy import update

from oxidav.db import utcnow
from oxidav.db.models.authz import Grant
from tests.support.live import LiveServer
from tests.support.nextcloud import ocs
from tests.support.share_bits import DAV, LOCKINFO, SHARES, add_users, dav, share, status

READ, UPDATE, CREATE, DELETE, SHARE = 1, 2, 4, 8, 16
#: Each bit alone and the common sums.
BITS = (1, 2, 4, 8, 16, 3, 5, 9, 15, 17, 31)
PROPPATCH = (
    '<?xml version="1.0"?><d:propertyupdate xmlns:d="DAV:" xmlns:x="urn:x">'
    "<d:set><d:prop><x:note>hi</x:note></d:prop></d:set></d:propertyupdate>"
)
FAVORITE = (
    '<?xml version="1.0"?><d:propertyupdate xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    "<d:set><d:prop><oc:favorite>1</oc:favorite></d:prop></d:set></d:propertyupdate>"
)
FILTER_FAVORITES = (
    '<?xml version="1.0"?><oc:filter-files xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    "<d:prop><d:getetag/></d:prop><oc:filter-rules><oc:favorite>1</oc:favorite>"
    "</oc:filter-rules></oc:filter-files>"
)


def dest(user: str, path: str) -> str:
    return f"{DAV}/{user}{path}"


def test_each_bit_allows_exactly_its_actions(live_server: LiveServer) -> None:
    server = add_users(live_server, "carol")
    failures: list[str] = []
    for bits in BITS:
        top = f"/T{bits}"
        assert status(server, "alice", "MKCOL", top) == 201
        for name in ("f.txt", "r.txt", "out.txt", "d.txt", "l.txt"):
            assert status(server, "alice", "PUT", f"{top}/{name}", b"alice") == 201
        assert status(server, "bob", "PUT", f"/own{bits}.txt", b"bob") == 201
        code, doc = share(server, "alice", top, "bob", bits)
        if not bits & READ:
            # Read is required for a user share, as in Nextcloud: nothing is granted.
            assert code == 400, (bits, doc)
            assert status(server, "bob", "GET", f"{top}/f.txt") == 404
            assert status(server, "bob", "PUT", f"{top}/new.txt", b"x") in (404, 409)
            continue
        assert (code, doc["data"]["permissions"]) == (200, bits), bits
        # Reported as stored, to the sharer and to the recipient.
        _, mine = ocs(server, "GET", f"{SHARES}/{doc['data']['id']}", "alice")
        _, theirs = ocs(server, "GET", SHARES, "bob", query="format=json&shared_with_me=true")
        seen = {s["path"]: s["permissions"] for s in theirs["data"]}
        assert (mine["data"][0]["permissions"], seen[top]) == (bits, bits), bits

        def allowed(bit: int, yes: int) -> int:
            return yes if bits & bit else 403  # noqa: B023

        cells = {
            "read": (status(server, "bob", "GET", f"{top}/f.txt"), 200),
            "list": (status(server, "bob", "PROPFIND", f"{top}/", Depth="1"), 207),
            "create": (
                status(server, "bob", "PUT", f"{top}/new.txt", b"x"),
                allowed(CREATE, 201),
            ),
            "mkcol": (status(server, "bob", "MKCOL", f"{top}/dir"), allowed(CREATE, 201)),
            "overwrite": (
                status(server, "bob", "PUT", f"{top}/f.txt", b"x"),
                allowed(UPDATE, 204),
            ),
            "rename": (
                status(
                    server, "bob", "MOVE", f"{top}/r.txt", Destination=dest("bob", f"{top}/r2.txt")
                ),
                allowed(UPDATE, 201),
            ),
            "move in": (
                status(
                    server,
                    "bob",
                    "MOVE",
                    f"/own{bits}.txt",
                    Destination=dest("bob", f"{top}/in.txt"),
                ),
                allowed(CREATE, 201),
            ),
            "move out": (
                status(
                    server,
                    "bob",
                    "MOVE",
                    f"{top}/out.txt",
                    Destination=dest("bob", f"/out{bits}.txt"),
                ),
                allowed(DELETE, 201),
            ),
            "delete": (status(server, "bob", "DELETE", f"{top}/d.txt"), allowed(DELETE, 204)),
            "lock": (
                status(server, "bob", "LOCK", f"{top}/l.txt", LOCKINFO, Timeout="Second-60"),
                allowed(UPDATE, 200),
            ),
            "proppatch": (
                status(server, "bob", "PROPPATCH", f"{top}/f.txt", PROPPATCH),
                allowed(UPDATE, 207),
            ),
            "reshare": (
                share(server, "bob", top, "carol", READ)[0],
                allowed(SHARE, 200),
            ),
            "reshare more": (
                share(server, "bob", top, "carol", bits | UPDATE | CREATE | DELETE)[0],
                200 if bits & SHARE and bits & 14 == 14 else 403,
            ),
            "link": (
                ocs(server, "POST", SHARES, "bob", {"path": top, "shareType": 3})[0],
                allowed(SHARE, 200),
            ),
            "owner url": (
                int(server.request("GET", f"{DAV}/alice{top}/f.txt", user="bob").status),
                404,
            ),
        }
        for action, (got, want) in cells.items():
            if got != want:
                failures.append(f"bits {bits:2} {action:12} want {want} got {got}")
        # alice's tree says what really happened.
        kept = server.request("GET", f"{DAV}/alice{top}/f.txt").body
        if (kept == b"alice") == bool(bits & UPDATE):
            failures.append(f"bits {bits:2} overwrite left {kept!r}")
        gone = server.request("GET", f"{DAV}/alice{top}/d.txt").status
        if (gone == 404) != bool(bits & DELETE):
            failures.append(f"bits {bits:2} delete left status {gone}")
    assert not failures, "\n".join(failures)


def test_file_share_bits_as_nextcloud(live_server: LiveServer) -> None:
    """A file share never carries create or delete; update is the file's own write."""
    server = live_server
    assert status(server, "alice", "PUT", "/one.txt", b"a") == 201
    assert status(server, "alice", "PUT", "/two.txt", b"a") == 201
    _, doc = share(server, "alice", "/one.txt", "bob", 17)
    assert doc["data"]["permissions"] == 17
    assert status(server, "bob", "PUT", "/one.txt", b"b") == 403
    _, doc = share(server, "alice", "/two.txt", "bob", 31)
    assert doc["data"]["permissions"] == 19
    assert status(server, "bob", "PUT", "/two.txt", b"b") == 204


def _shared_with_me(server: LiveServer, user: str) -> dict[str, dict[str, Any]]:
    _, doc = ocs(server, "GET", SHARES, user, query="format=json&shared_with_me=true")
    return {s["path"]: s for s in doc["data"]}


def test_reshare_chain_revoke_reduce_expire(live_server: LiveServer) -> None:
    server = add_users(live_server, "carol", "dave")
    assert status(server, "alice", "MKCOL", "/Team") == 201
    assert status(server, "alice", "PUT", "/Team/a.txt", b"alpha") == 201

    def chain(bob_bits: int = 31, carol_bits: int = 31, **bob_more: Any) -> tuple[str, str, str]:
        code, to_bob = share(server, "alice", "/Team", "bob", bob_bits, **bob_more)
        assert code == 200, to_bob
        # bob names the folder by his own mount: /Team in his tree.
        code, to_carol = share(server, "bob", "/Team", "carol", carol_bits)
        assert code == 200, to_carol
        code, to_dave = share(server, "carol", "/Team", "dave", READ)
        assert code == 200, to_dave
        for user in ("bob", "carol", "dave"):
            assert status(server, user, "GET", "/Team/a.txt") == 200, user
        return to_bob["data"]["id"], to_carol["data"]["id"], to_dave["data"]["id"]

    # Revoking the first link takes the whole chain down on the next request.
    bob_id, carol_id, _ = chain()
    assert ocs(server, "DELETE", f"{SHARES}/{bob_id}", "alice")[0] == 200
    for user in ("bob", "carol", "dave"):
        assert status(server, user, "GET", "/Team/a.txt") == 404, user
        assert status(server, user, "PROPFIND", "/Team/", Depth="1") == 404, user
    _, listed = ocs(server, "GET", SHARES, "alice", query="format=json&path=/Team&reshares=true")
    assert listed["data"] == []  # the reshares went with the grant they were made through

    # Revoking the middle link: bob keeps his, carol and dave lose theirs.
    bob_id, carol_id, _ = chain()
    assert ocs(server, "DELETE", f"{SHARES}/{carol_id}", "bob")[0] == 200
    assert status(server, "bob", "GET", "/Team/a.txt") == 200
    assert status(server, "carol", "GET", "/Team/a.txt") == 404
    assert status(server, "dave", "GET", "/Team/a.txt") == 404

    # Reducing: carol's reshare is worth at most what bob holds now.
    code, _ = share(server, "bob", "/Team", "carol", 31)
    assert code == 200
    assert status(server, "carol", "PUT", "/Team/c.txt", b"c") == 201
    assert ocs(server, "PUT", f"{SHARES}/{bob_id}", "alice", {"permissions": 17})[0] == 200
    assert status(server, "carol", "PUT", "/Team/c2.txt", b"c") == 403
    assert status(server, "carol", "GET", "/Team/a.txt") == 200
    assert _shared_with_me(server, "carol")["/Team"]["permissions"] == 17
    # Without the share bit bob cannot have reshared: carol's share is gone.
    assert ocs(server, "PUT", f"{SHARES}/{bob_id}", "alice", {"permissions": 15})[0] == 200
    assert status(server, "carol", "GET", "/Team/a.txt") == 404
    assert status(server, "bob", "PUT", "/Team/b.txt", b"b") == 201
    assert share(server, "bob", "/Team", "carol", READ)[0] == 403

    # Expiry: a reshare never outlives its maker's grant.
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    later = (date.today() + timedelta(days=30)).isoformat()
    assert ocs(server, "DELETE", f"{SHARES}/{bob_id}", "alice")[0] == 200
    bob_id, carol_id, _ = chain(expireDate=tomorrow)
    _, got = ocs(server, "GET", f"{SHARES}/{carol_id}", "bob")
    assert got["data"][0]["expiration"] == f"{tomorrow} 00:00:00"
    code, got = ocs(server, "PUT", f"{SHARES}/{carol_id}", "bob", {"expireDate": later})
    assert (code, got["data"]["expiration"]) == (200, f"{tomorrow} 00:00:00")
    assert server.services is not None
    with server.services.db.write() as session:  # bob's grant runs out
        past = utcnow() - timedelta(seconds=1)
        session.execute(update(Grant).where(Grant.id == int(bob_id)).values(expires_at=past))
    for user in ("bob", "carol", "dave"):
        assert status(server, user, "GET", "/Team/a.txt") == 404, user

    # bob leaves the share (DELETE of his mount point): what he reshared goes with him.
    chain()
    assert status(server, "bob", "DELETE", "/Team") == 204
    for user in ("bob", "carol", "dave"):
        assert status(server, user, "GET", "/Team/a.txt") == 404, user
    _, listed = ocs(server, "GET", SHARES, "alice", query="format=json&path=/Team&reshares=true")
    assert listed["data"] == []


def test_no_existence_oracle_through_the_share_api(live_server: LiveServer) -> None:
    server = live_server
    assert status(server, "alice", "MKCOL", "/Private") == 201
    assert status(server, "alice", "PUT", "/Private/tax-2023.pdf", b"%PDF") == 201
    assert status(server, "alice", "MKCOL", "/Team") == 201
    assert share(server, "alice", "/Team", "bob", 1)[0] == 200

    def answers(path: str) -> list[tuple[int, Any]]:
        got = []
        for query in (f"format=json&path={path}", f"format=json&path={path}&reshares=true"):
            code, doc = ocs(server, "GET", SHARES, "bob", query=query)
            got.append((code, doc["meta"]))
        code, doc = share(server, "bob", path, "carol", 1)
        got.append((code, doc["meta"]))
        return got

    for existing, missing in (
        ("files/alice/Private/tax-2023.pdf", "files/alice/Private/none.pdf"),
        ("/Private/tax-2023.pdf", "/Private/none.pdf"),
        ("/../alice/Private/tax-2023.pdf", "/../alice/Private/none.pdf"),
        ("files/alice/Team", "files/alice/Nope"),
    ):
        assert answers(existing) == answers(missing), existing
        assert answers(existing)[0][0] == 404
    # bob's own view of his tree, mounts included, is what he can name.
    code, doc = ocs(server, "GET", SHARES, "bob", query="format=json&path=/Team")
    assert (code, doc["data"]) == (200, [])


def test_only_ones_own_home(live_server: LiveServer) -> None:
    server = live_server
    assert status(server, "alice", "MKCOL", "/Team") == 201
    assert status(server, "alice", "PUT", "/Team/a.txt", b"a") == 201
    assert status(server, "alice", "MKCOL", "/Secret-Name") == 201
    assert share(server, "alice", "/Team", "bob", 31)[0] == 200
    assert status(server, "bob", "GET", "/Team/a.txt") == 200
    for method, path, extra in (
        ("GET", "/Team/a.txt", {}),
        ("PROPFIND", "/", {"Depth": "1"}),
        ("PROPFIND", "/Team/", {"Depth": "1"}),
        ("PROPFIND", "/Secret-Name/", {"Depth": "0"}),
        ("PUT", "/Team/new.txt", {}),
        ("DELETE", "/Team/a.txt", {}),
        ("MOVE", "/Team/a.txt", {"Destination": dest("bob", "/stolen.txt")}),
    ):
        got = server.request(method, f"{DAV}/alice{path}", b"", headers=extra, user="bob")
        assert got.status == 404, (method, path)
    copy = {"Destination": dest("alice", "/Team/b.txt")}
    assert status(server, "bob", "COPY", "/Team/a.txt", **copy) == 404
    assert server.request("GET", f"{DAV}/alice/Team/new.txt").status == 404


def test_can_edit_and_favourites_are_the_callers(live_server: LiveServer) -> None:
    server = live_server
    assert status(server, "alice", "MKCOL", "/Team") == 201
    for name in ("a.txt", "b.txt"):
        assert status(server, "alice", "PUT", f"/Team/{name}", b"x") == 201
    assert status(server, "alice", "PROPPATCH", "/Team/a.txt", FAVORITE) == 207
    assert share(server, "alice", "/Team", "bob", 31)[0] == 200
    mine = _shared_with_me(server, "bob")["/Team"]
    assert (mine["can_edit"], mine["permissions"]) == (False, 31)
    _, sharer = ocs(server, "GET", SHARES, "alice")
    assert sharer["data"][0]["can_edit"] is True

    def favourites(user: str, path: str) -> str:
        got = dav(server, user, "REPORT", path, FILTER_FAVORITES, Depth="infinity")
        assert got.status == 207
        return str(got.text)

    assert "a.txt" not in favourites("bob", "/Team/")
    assert "a.txt" not in favourites("bob", "/")
    assert status(server, "bob", "PROPPATCH", "/Team/b.txt", FAVORITE) == 207
    assert f"{DAV}/bob/Team/b.txt" in favourites("bob", "/Team/")
    assert f"{DAV}/bob/Team/b.txt" in favourites("bob", "/")
    alice_sees = favourites("alice", "/")
    assert "a.txt" in alice_sees and "b.txt" not in alice_sees


def test_link_bits_are_never_widened(live_server: LiveServer) -> None:
    """Links: 1 read, 4 file drop, 15 read-write, as Nextcloud; other sums are refused."""
    server = live_server
    assert status(server, "alice", "MKCOL", "/Drop") == 201
    for bits, want in ((1, 1), (4, 4), (15, 15), (17, 1), (31, 15)):
        params = {"path": "/Drop", "shareType": 3, "permissions": bits}
        code, doc = ocs(server, "POST", SHARES, "alice", params)
        assert (code, doc["data"]["permissions"]) == (200, want), bits
    for bits in (3, 5, 7, 9, 13):
        params = {"path": "/Drop", "shareType": 3, "permissions": bits}
        assert ocs(server, "POST", SHARES, "alice", params)[0] == 400, bits
    _, listed = ocs(server, "GET", SHARES, "alice")
    assert len(listed["data"]) == 5
