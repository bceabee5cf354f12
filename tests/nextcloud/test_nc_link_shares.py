"""Public links through the OCS Share API (``shareType`` 3), used over real HTTP afterwards."""

from __future__ import annotations

import base64
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.live import LiveServer
from tests.support.nextcloud import ocs, sharing_tree

V2 = "/ocs/v2.php/apps/files_sharing/api/v1/shares"
ALICE = "/remote.php/dav/files/alice"


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    return sharing_tree(live_server)


def create(server: LiveServer, user: str = "alice", **params: Any) -> tuple[int, dict[str, Any]]:
    return ocs(server, "POST", V2, user, {"shareType": 3, **params})


def page(server: LiveServer, share: dict[str, Any], password: str | None = None) -> int:
    path = urlsplit(share["url"]).path
    headers = {}
    if password is not None:
        secret = base64.b64encode(f"x:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {secret}"
    return server.request("GET", path, user=None, headers=headers).status


def test_create_read_link_and_download_it(server: LiveServer) -> None:
    status, doc = create(server, path="/Shared/a.txt")
    assert status == 200 and doc["meta"]["statuscode"] == 200
    share = doc["data"]
    assert (share["share_type"], share["permissions"], share["item_type"]) == (3, 1, "file")
    assert len(share["token"]) >= 15 and share["token"].isalnum()
    assert share["url"] == f"{server.base_url}/s/{share['token']}"
    assert (share["password"], share["share_with"], share["label"]) == (None, None, "")
    assert int(share["id"]) > 1_000_000_000
    resp = server.request("GET", urlsplit(share["url"]).path, user=None)
    assert (resp.status, resp.body) == (200, b"alpha")


@pytest.mark.parametrize(
    ("params", "permissions"),
    [
        ({"permissions": 1}, 1),
        ({"permissions": 4}, 4),
        ({"publicUpload": "true"}, 15),
        ({"permissions": 15}, 15),
        ({"permissions": 31}, 15),
    ],
)
def test_permissions_map_to_link_modes(
    server: LiveServer, params: dict[str, Any], permissions: int
) -> None:
    status, doc = create(server, path="/Shared", **params)
    assert (status, doc["data"]["permissions"], doc["data"]["item_type"]) == (
        200,
        permissions,
        "folder",
    )


@pytest.mark.parametrize(
    ("user", "params", "status"),
    [
        ("alice", {"path": "/missing"}, 404),
        ("alice", {"path": ""}, 404),
        ("alice", {"path": "/"}, 403),
        ("alice", {"path": "/other.txt", "publicUpload": "true"}, 400),
        ("alice", {"path": "/other.txt", "permissions": 4}, 400),
        ("alice", {"path": "/Shared", "permissions": 2}, 400),
        ("alice", {"path": "/Shared", "expireDate": "2001-01-01"}, 400),
        ("alice", {"path": "/Shared", "label": "x" * 300}, 400),
        ("bob", {"path": "files/alice/Shared"}, 404),
    ],
)
def test_create_errors(server: LiveServer, user: str, params: dict[str, Any], status: int) -> None:
    got, doc = create(server, user, **params)
    assert (got, doc["meta"]["status"]) == (status, "failure")


def test_links_by_recipients_need_the_share_bit(server: LiveServer) -> None:
    """As in Nextcloud (issue 25): a recipient with the share bit may link what was shared with
    him, within his bits, named by his mount; the link dies with his grant."""
    body = {"path": "/Shared", "shareType": 0, "shareWith": "bob", "permissions": 15}
    _, doc = ocs(server, "POST", V2, params=body)
    bob_share = doc["data"]["id"]
    assert create(server, "bob", path="/Shared")[0] == 403  # no share bit
    assert ocs(server, "POST", V2, params={**body, "permissions": 17})[0] == 200
    assert create(server, "bob", path="/Shared", permissions=15)[0] == 403  # beyond his bits
    status, doc = create(server, "bob", path="/Shared")
    assert (status, doc["data"]["uid_owner"], doc["data"]["uid_file_owner"]) == (
        200,
        "bob",
        "alice",
    )
    token = doc["data"]["token"]
    link = f"/public.php/dav/files/{token}/a.txt"
    assert server.request("GET", link, user=None).body == b"alpha"
    assert ocs(server, "PUT", f"{V2}/{bob_share}", params={"permissions": 1})[0] == 200
    assert server.request("GET", link, user=None).status == 404  # bob may no longer share
    assert ocs(server, "PUT", f"{V2}/{bob_share}", params={"permissions": 17})[0] == 200
    assert server.request("GET", link, user=None).status == 200
    assert ocs(server, "DELETE", f"{V2}/{bob_share}")[0] == 200
    assert server.request("GET", link, user=None).status == 404


def test_password_expiry_label_and_list(server: LiveServer) -> None:
    day = (date.today() + timedelta(days=2)).isoformat()
    status, doc = create(
        server, path="/Shared", password="pw", expireDate=day, label="for the team"
    )
    assert status == 200
    link = doc["data"]
    assert (link["password"], link["expiration"], link["label"]) == (
        "***",
        f"{day} 00:00:00",
        "for the team",
    )
    assert page(server, link) == 401
    assert page(server, link, "pw") == 200
    # The owner's list shows user shares and links; path narrows it.
    body = {"path": "/other.txt", "shareType": 0, "shareWith": "bob", "permissions": 1}
    _, doc = ocs(server, "POST", V2, params=body)
    user_share = doc["data"]["id"]
    _, doc = ocs(server, "GET", V2)
    assert [s["id"] for s in doc["data"]] == [user_share, link["id"]]
    assert doc["data"][1]["token"] == link["token"]
    _, doc = ocs(server, "GET", V2, query="format=json&path=/Shared")
    assert [s["id"] for s in doc["data"]] == [link["id"]]
    _, doc = ocs(server, "GET", V2, user="bob", query="format=json&shared_with_me=true")
    assert [s["id"] for s in doc["data"]] == [user_share]
    status, doc = ocs(server, "GET", f"{V2}/{link['id']}")
    assert (status, doc["data"][0]["token"]) == (200, link["token"])


def test_update_password_expiry_permissions(server: LiveServer) -> None:
    _, doc = create(server, path="/Shared", password="old")
    link = doc["data"]
    url = f"{V2}/{link['id']}"
    status, doc = ocs(server, "PUT", url, params={"password": "new"})
    assert status == 200
    assert (page(server, link, "old"), page(server, link, "new")) == (401, 200)
    status, doc = ocs(server, "PUT", url, params={"password": ""})
    assert (status, doc["data"]["password"], page(server, link)) == (200, None, 200)
    day = (date.today() + timedelta(days=5)).isoformat()
    status, doc = ocs(server, "PUT", url, params={"expireDate": day})
    assert (status, doc["data"]["expiration"]) == (200, f"{day} 00:00:00")
    status, doc = ocs(server, "PUT", url, params={"expireDate": ""})
    assert (status, doc["data"]["expiration"]) == (200, None)
    status, doc = ocs(server, "PUT", url, params={"permissions": 4, "label": "drop"})
    assert (status, doc["data"]["permissions"], doc["data"]["label"]) == (200, 4, "drop")
    token = link["token"]
    server.users[token] = ""
    assert server.request("PUT", "/public.php/webdav/in.txt", b"x", user=token).status == 201
    assert ocs(server, "PUT", url, params={})[0] == 400
    assert ocs(server, "PUT", url, params={"permissions": 2})[0] == 400


def test_delete_stops_the_link_at_once_and_strangers_see_nothing(server: LiveServer) -> None:
    _, doc = create(server, path="/Shared")
    link = doc["data"]
    url = f"{V2}/{link['id']}"
    for method in ("GET", "DELETE"):
        assert ocs(server, method, url, user="carol")[0] == 404
    assert ocs(server, "PUT", url, user="carol", params={"password": "x"})[0] == 404
    assert page(server, link) == 200
    status, _ = ocs(server, "DELETE", url)
    assert status == 200
    assert page(server, link) == 404
    assert ocs(server, "GET", url)[0] == 404
    assert ocs(server, "DELETE", url)[0] == 404


def test_trashed_node_hides_the_link_share(server: LiveServer) -> None:
    _, doc = create(server, path="/Shared/a.txt")
    link = doc["data"]
    assert server.request("DELETE", ALICE + "/Shared/a.txt").status == 204
    assert ocs(server, "GET", f"{V2}/{link['id']}")[0] == 404
    _, doc = ocs(server, "GET", V2)
    assert doc["data"] == []
    assert page(server, link) == 404
