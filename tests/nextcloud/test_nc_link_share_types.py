"""``oc:share-types`` 3 for items with a live public link, over real HTTP on both backends."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import update

from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant
from oxidav.authz.grants.targets import resolve_target, user_id
from oxidav.authz.links.store import create_link, delete_link
from oxidav.db import utcnow
from oxidav.db.models.links import PublicLink
from oxidav.tree import resolve
from tests.support.engine_events import recorded_selects
from tests.support.live import LiveServer

ALICE = "/remote.php/dav/files/alice"
BOB = "/remote.php/dav/files/bob"
SHARE_TYPES = (
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    "<d:prop><oc:share-types/></d:prop></d:propfind>"
)


def share_types(server: LiveServer, path: str, user: str = "alice") -> dict[str, str]:
    """href -> comma-joined share types of a Depth 1 PROPFIND."""
    got = server.request("PROPFIND", path, SHARE_TYPES, headers={"Depth": "1"}, user=user)
    assert got.status == 207, got.text
    found: dict[str, str] = {}
    for response in re.findall(r"<D:response.*?</D:response>", got.text, re.S):
        href = re.search(r"<D:href>(.*?)</D:href>", response)
        assert href is not None
        found[href.group(1)] = ",".join(re.findall(r"share-type>(\d)<", response))
    return found


def _link(server: LiveServer, path: str) -> str:
    assert server.services is not None
    with server.services.db.write() as session:
        node = resolve(session, user_id(session, "alice"), path)
        assert node is not None
        return create_link(session, node).token


def test_live_links_show_as_share_type_3(live_server: LiveServer) -> None:
    server = live_server
    assert server.services is not None
    for method, path in (
        ("MKCOL", "/Linked"),
        ("MKCOL", "/Plain"),
        ("PUT", "/doc.txt"),
        ("PUT", "/old.txt"),
        ("PUT", "/Linked/inside.txt"),
    ):
        assert server.request(method, ALICE + path, b"x" if method == "PUT" else None).status == 201
    token = _link(server, "/Linked")
    _link(server, "/doc.txt")
    expired = _link(server, "/old.txt")
    with server.services.db.write() as session:
        past = utcnow() - timedelta(days=1)
        session.execute(
            update(PublicLink).where(PublicLink.token == expired).values(expires_at=past)
        )
        bob = Subject.user(user_id(session, "bob"))
        grant(session, bob, resolve_target(session, "files/alice/Linked"), Role.VIEWER)
    db_engine = server.services.db.engine
    with recorded_selects(db_engine) as seen:
        root = share_types(server, ALICE + "/")
    assert root[ALICE + "/Linked/"] == "0,3"  # a user share and a link
    assert root[ALICE + "/doc.txt"] == "3"
    assert root[ALICE + "/old.txt"] == ""  # expired: no link any more
    assert root[ALICE + "/Plain/"] == ""
    # Read with the user and group shares: once for the folder asked, once for its members.
    links = [s for s in seen if "public_links" in s]
    grants = [s for s in seen if "DISTINCT grants.resource_id" in s]
    assert len(links) == len(grants) <= 2, seen
    assert share_types(server, ALICE + "/Linked/")[ALICE + "/Linked/inside.txt"] == ""
    # The recipient sees the share, not alice's link.
    assert "3" not in share_types(server, BOB + "/", user="bob")[BOB + "/Linked/"]
    with server.services.db.write() as session:
        assert delete_link(session, token)
    assert share_types(server, ALICE + "/")[ALICE + "/Linked/"] == "0"
