"""status.php and the OCS capabilities / user endpoints, over HTTP."""

from __future__ import annotations

import json
import re

from lxml import etree

from tests.support.live import LiveServer

OCS = {"OCS-APIREQUEST": "true"}


def test_status_php(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/status.php", user=None)
    assert resp.status == 200
    assert resp.headers["content-type"].startswith("application/json")
    status = json.loads(resp.body)
    assert status["installed"] is True
    assert status["maintenance"] is False and status["needsDbUpgrade"] is False
    assert int(status["version"].split(".")[0]) >= 25
    assert status["versionstring"] and "edition" in status and "productname" in status
    assert status["extendedSupport"] is False
    assert live_server.request("POST", "/status.php", user=None).status == 405


def test_capabilities_v1_compact_json(live_server: LiveServer) -> None:
    resp = live_server.request(
        "GET", "/ocs/v1.php/cloud/capabilities?format=json", headers=OCS, user=None
    )
    assert resp.status == 200
    assert re.search(rb'"statuscode":100[,}]', resp.body)
    assert b": " not in resp.body
    data = json.loads(resp.body)["ocs"]["data"]
    assert data["capabilities"]["dav"] == {"chunking": "1.0", "bulkupload": "1.0"}
    assert "SHA1" in data["capabilities"]["checksums"]["supportedTypes"]
    assert data["capabilities"]["files"]["undelete"] is True
    assert data["capabilities"]["files"]["favorites"] is True
    sharing = data["capabilities"]["files_sharing"]
    assert sharing["api_enabled"] is True and sharing["public"]["enabled"] is True
    assert sharing["default_permissions"] == 31
    assert data["version"]["major"] >= 25


def test_capabilities_v2_and_xml(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/ocs/v2.php/cloud/capabilities?format=json", user=None)
    assert json.loads(resp.body)["ocs"]["meta"]["statuscode"] == 200
    resp = live_server.request("GET", "/ocs/v2.php/cloud/capabilities", user=None)
    assert resp.headers["content-type"].startswith("text/xml")
    root = etree.fromstring(resp.body)
    assert root.findtext("meta/statuscode") == "200"
    assert root.findtext("data/capabilities/dav/chunking") == "1.0"
    xml1 = live_server.request("GET", "/ocs/v1.php/cloud/capabilities?format=xml", user=None)
    assert etree.fromstring(xml1.body).findtext("meta/statuscode") == "100"


def test_cloud_user(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/ocs/v1.php/cloud/user?format=json", headers=OCS)
    assert resp.status == 200
    assert b'"statuscode":100' in resp.body
    data = json.loads(resp.body)["ocs"]["data"]
    assert data["id"] == "alice"
    assert data["display-name"] == "alice"
    assert data["email"] == "alice@example.org"
    resp = live_server.request("GET", "/ocs/v2.php/cloud/user?format=json", user="bob")
    assert json.loads(resp.body)["ocs"]["data"]["id"] == "bob"


def test_cloud_user_needs_valid_credentials(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/ocs/v1.php/cloud/user?format=json", user=None)
    assert resp.status == 401
    assert resp.headers["www-authenticate"].startswith("Basic")
    assert json.loads(resp.body)["ocs"]["meta"]["statuscode"] == 997
    resp = live_server.request(
        "GET", "/ocs/v1.php/cloud/user?format=json", user="alice", password="wrong"
    )
    assert resp.status == 401
    bad = {"Authorization": "Basic !!!notbase64"}
    assert live_server.request("GET", "/ocs/v2.php/cloud/user", headers=bad).status == 400


def test_unknown_ocs_call(live_server: LiveServer) -> None:
    assert live_server.request("GET", "/ocs/v2.php/cloud/nothing", user=None).status == 404
    assert live_server.request("GET", "/ocs/v9.php/cloud/user", user=None).status in (200, 404)
    assert live_server.request("PUT", "/ocs/v2.php/cloud/user", user=None).status == 405
