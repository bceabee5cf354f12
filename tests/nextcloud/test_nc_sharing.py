"""The OCS Share API over HTTP: create, list, get, update, delete, and their error paths."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from lxml import etree

from oxidav.authz.grants.groups import add_member, create_group
from oxidav.authz.grants.targets import user_id
from tests.support.live import LiveServer
from tests.support.nextcloud import FORM, ocs, sharing_tree

V1 = "/ocs/v1.php/apps/files_sharing/api/v1/shares"
V2 = "/ocs/v2.php/apps/files_sharing/api/v1/shares"
ALICE = "/remote.php/dav/files/alice"
#: Recipients reach a share through their own mounts (issue 25: another user's home is 404).
BOB = "/remote.php/dav/files/bob"
CAROL = "/remote.php/dav/files/carol"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    return sharing_tree(live_server)


def create(server: LiveServer, user: str = "alice", **params: Any) -> tuple[int, dict[str, Any]]:
    return ocs(server, "POST", V2, user, params)


def test_create_user_share_maps_permissions_to_roles(server: LiveServer) -> None:
    status, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=1)
    assert status == 200 and doc["meta"]["statuscode"] == 200
    share = doc["data"]
    assert (share["share_type"], share["share_with"], share["uid_owner"]) == (0, "bob", "alice")
    assert (share["permissions"], share["item_type"], share["path"]) == (1, "folder", "/Shared")
    assert server.request("GET", BOB + "/Shared/a.txt", user="bob").status == 200
    assert server.request("PUT", BOB + "/Shared/a.txt", b"x", user="bob").status == 403
    # Sharing again updates the one share: read+update+create+delete -> editor.
    status, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=15)
    assert (status, doc["data"]["id"], doc["data"]["permissions"]) == (200, share["id"], 15)
    assert server.request("PUT", BOB + "/Shared/a.txt", b"x", user="bob").status == 204
    # A file share carries no create/delete bits.
    _, doc = create(server, path="/other.txt", shareType=0, shareWith="bob", permissions=31)
    assert (doc["data"]["permissions"], doc["data"]["item_type"]) == (19, "file")


def test_share_without_permissions_gets_the_advertised_default(server: LiveServer) -> None:
    """Like Nextcloud: the capabilities' ``default_permissions`` (31) when none are sent."""
    status, doc = create(server, path="/Shared", shareType=0, shareWith="bob")
    assert (status, doc["data"]["permissions"]) == (200, 31)
    assert server.request("PUT", BOB + "/Shared/new.txt", b"x", user="bob").status == 201


def test_create_group_share_reaches_members(server: LiveServer) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        group = create_group(session, "team")
        add_member(session, group, user_id=user_id(session, "carol"))
    assert server.request("GET", CAROL + "/Shared/a.txt", user="carol").status == 404
    status, doc = create(server, path="/Shared", shareType=1, shareWith="team", permissions=1)
    assert (status, doc["data"]["share_type"], doc["data"]["share_with"]) == (200, 1, "team")
    assert server.request("GET", CAROL + "/Shared/a.txt", user="carol").status == 200
    assert server.request("GET", BOB + "/Shared/a.txt", user="bob").status == 404


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"path": "/missing", "shareType": 0, "shareWith": "bob", "permissions": 1}, 404),
        ({"path": "", "shareType": 0, "shareWith": "bob", "permissions": 1}, 404),
        ({"path": "/Shared", "shareType": 0, "shareWith": "nobody", "permissions": 1}, 404),
        ({"path": "/Shared", "shareType": 1, "shareWith": "nogroup", "permissions": 1}, 404),
        ({"path": "/Shared", "shareType": 0, "shareWith": "alice", "permissions": 1}, 400),
        ({"path": "/Shared", "shareType": 7, "shareWith": "bob", "permissions": 1}, 400),
        ({"path": "/Shared", "shareType": 0, "shareWith": "bob", "permissions": 2}, 400),
        ({"path": "/Shared", "shareType": 0, "shareWith": "bob", "permissions": 99}, 400),
        ({"path": "/Shared", "shareType": "x", "shareWith": "bob", "permissions": 1}, 400),
        (
            {"path": "/Shared", "shareType": 0, "shareWith": "bob", "expireDate": "2001-01-01"},
            400,
        ),
        ({"path": "/Shared", "shareType": 0, "shareWith": "bob", "expireDate": "soon"}, 400),
    ],
)
def test_create_errors(server: LiveServer, params: dict[str, Any], status: int) -> None:
    got, doc = create(server, **params)
    assert (got, doc["meta"]["status"], doc["meta"]["statuscode"]) == (status, "failure", status)


def test_v1_answers_http_200_and_xml_by_default(server: LiveServer) -> None:
    body = urlencode({"path": "/missing", "shareType": 0, "shareWith": "bob"})
    resp = server.request("POST", V1, body, headers=FORM)
    assert resp.status == 200
    root = etree.fromstring(resp.body)
    assert root.findtext("meta/statuscode") == "404"
    resp = server.request("POST", V1, body.replace("missing", "Shared"), headers=FORM)
    root = etree.fromstring(resp.body)
    assert (resp.status, root.findtext("meta/statuscode")) == (200, "100")
    assert root.findtext("data/share_with") == "bob"


def test_requires_credentials(server: LiveServer) -> None:
    resp = server.request("GET", V2 + "?format=json", user=None)
    assert resp.status == 401 and "www-authenticate" in resp.headers
    assert server.request("GET", V2, user="alice", password="wrong").status == 401


def test_json_body_and_expiry(server: LiveServer) -> None:
    day = (date.today() + timedelta(days=3)).isoformat()
    payload = {"path": "/Shared", "shareType": 0, "shareWith": "bob", "expireDate": day}
    resp = server.request(
        "POST", V2 + "?format=json", json.dumps(payload), {"Content-Type": "application/json"}
    )
    share = json.loads(resp.body)["ocs"]["data"]
    assert (resp.status, share["expiration"]) == (200, f"{day} 00:00:00")
    status, doc = ocs(server, "PUT", f"{V2}/{share['id']}", params={"expireDate": ""})
    assert (status, doc["data"]["expiration"]) == (200, None)


def test_list_get_update_delete(server: LiveServer) -> None:
    _, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=1)
    first = doc["data"]["id"]
    _, doc = create(server, path="/other.txt", shareType=0, shareWith="bob", permissions=1)
    second = doc["data"]["id"]
    status, doc = ocs(server, "GET", V2, params=None)
    assert status == 200 and [s["id"] for s in doc["data"]] == [first, second]
    _, doc = ocs(server, "GET", V2, query="format=json&path=/other.txt")
    assert [s["id"] for s in doc["data"]] == [second]
    _, doc = ocs(server, "GET", V2, user="bob", query="format=json&shared_with_me=true")
    assert sorted(s["id"] for s in doc["data"]) == sorted([first, second])
    _, doc = ocs(server, "GET", V2, user="bob")
    assert doc["data"] == []  # bob made no shares
    status, doc = ocs(server, "GET", f"{V2}/{first}")
    assert (status, [s["id"] for s in doc["data"]]) == (200, [first])
    # Update permissions: viewer -> editor, visible on the very next request.
    status, doc = ocs(server, "PUT", f"{V2}/{first}", params={"permissions": 15})
    assert (status, doc["data"]["permissions"]) == (200, 15)
    assert server.request("PUT", BOB + "/Shared/a.txt", b"new", user="bob").status == 204
    assert ocs(server, "PUT", f"{V2}/{first}", params={})[0] == 400
    assert ocs(server, "PUT", f"{V2}/{first}", params={"permissions": 0})[0] == 400
    # Delete: the share and bob's access go at once.
    status, _ = ocs(server, "DELETE", f"{V2}/{first}")
    assert status == 200
    assert server.request("GET", BOB + "/Shared/a.txt", user="bob").status == 404
    assert ocs(server, "GET", f"{V2}/{first}")[0] == 404
    assert ocs(server, "DELETE", f"{V2}/{first}")[0] == 404
    assert ocs(server, "GET", f"{V2}/abc")[0] == 404
    assert ocs(server, "PATCH", f"{V2}/{second}")[0] == 405


def test_strangers_see_no_share(server: LiveServer) -> None:
    _, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=1)
    share = doc["data"]["id"]
    for method in ("GET", "DELETE"):
        assert ocs(server, method, f"{V2}/{share}", user="carol")[0] == 404
    assert ocs(server, "PUT", f"{V2}/{share}", user="carol", params={"permissions": 31})[0] == 404
    # The recipient cannot change or delete the share either (only owner or its maker).
    assert ocs(server, "DELETE", f"{V2}/{share}", user="bob")[0] == 404


def test_only_owner_or_manager_may_share(server: LiveServer) -> None:
    # bob names the share by his own mount (issue 25: nothing else can be named).
    reshare = {"path": "/Shared", "shareType": 0, "shareWith": "carol"}
    # No grant at all: the folder does not exist for bob.
    assert create(server, "bob", permissions=1, **reshare)[0] == 404
    _, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=15)
    assert create(server, "bob", permissions=1, **reshare)[0] == 403  # editor: no reshare
    _, doc = create(server, path="/Shared", shareType=0, shareWith="bob", permissions=31)
    assert doc["data"]["permissions"] == 31
    status, doc = create(server, "bob", permissions=1, **reshare)
    assert (status, doc["data"]["uid_owner"], doc["data"]["uid_file_owner"]) == (
        200,
        "bob",
        "alice",
    )
    reshared = doc["data"]["id"]
    assert server.request("GET", CAROL + "/Shared/a.txt", user="carol").status == 200
    # The maker and the owner both see and manage the reshare.
    assert ocs(server, "GET", f"{V2}/{reshared}", user="bob")[0] == 200
    _, doc = ocs(server, "GET", V2, query="format=json&reshares=true")
    assert reshared in [s["id"] for s in doc["data"]]
    status, doc = ocs(server, "DELETE", f"{V2}/{reshared}")
    assert status == 200
    assert server.request("GET", CAROL + "/Shared/a.txt", user="carol").status == 404
