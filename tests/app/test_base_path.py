"""``base_path``: oxidav below a path prefix. Every href, URL and redirect it answers carries
the prefix; what a client sends with it (paths, Destination, multiget and search hrefs) is
understood; a path outside it is 404 (issue 29, "reverse proxy"). Over real HTTP, both
backends; litmus runs below the prefix. ``test_behind_nginx`` syncs real clients through a
proxy with TLS and the same prefix.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxidav.settings import SettingsError, load_settings
from tests.support.litmus import assert_litmus_passes, needs_litmus
from tests.support.live import LiveServer, in_process_server, make_settings

BASE = "/cloud"
FILES = f"{BASE}/remote.php/dav/files/alice"
CAL = f"{BASE}/remote.php/dav/calendars/alice/personal"
BOOK = f"{BASE}/remote.php/dav/addressbooks/users/alice/contacts"
HREF = re.compile(r"<(?:\w+:)?href>([^<]*)</(?:\w+:)?href>")

EVENT = """BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//oxidav//test//EN\r
BEGIN:VEVENT\r
UID:{uid}\r
DTSTAMP:20261201T120000Z\r
DTSTART:20261205T100000Z\r
DTEND:20261205T110000Z\r
SUMMARY:{uid}\r
END:VEVENT\r
END:VCALENDAR\r
"""
CARD = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:{uid}\r\nN:{uid};;;;\r\nEND:VCARD\r\n"


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", db_url, base_path=BASE + "/")
    with in_process_server(settings) as live:
        yield live


def _hrefs(body: bytes) -> list[str]:
    return HREF.findall(body.decode())


def _propfind(server: LiveServer, path: str, props: str, depth: str = "0") -> list[str]:
    body = f'<?xml version="1.0"?><d:propfind xmlns:d="DAV:" {props}</d:propfind>'
    got = server.request("PROPFIND", path, body, {"Depth": depth, "Content-Type": "text/xml"})
    assert got.status == 207, (path, got.status, got.text)
    return _hrefs(got.body)


@pytest.mark.parametrize("value", ["cloud", "/a b", "/a/../b", "/%2e", "/ü", "/a//b", "/a?b"])
def test_a_bad_base_path_is_refused(value: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="'base_path'"):
        load_settings({"data_dir": tmp_path}, env={"OXIDAV_BASE_PATH": value})


def test_a_trailing_slash_is_accepted(tmp_path: Path) -> None:
    settings = load_settings({"data_dir": tmp_path}, env={"OXIDAV_BASE_PATH": "/a/b.c/"})
    assert settings.base_path == "/a/b.c/"


def test_paths_outside_the_prefix_are_not_found(server: LiveServer) -> None:
    for path in ("/remote.php/dav/files/alice/", "/status.php", "/cloudy/status.php", "/"):
        assert server.request("GET", path).status == 404, path
    assert server.request("GET", f"{BASE}/status.php", user=None).status == 200
    assert server.request("GET", f"{BASE}/healthz", user=None).status == 200
    for dav in ("caldav", "carddav"):
        moved = server.request("GET", f"{BASE}/.well-known/{dav}", user=None)
        assert moved.status == 301 and moved.headers["location"] == f"{BASE}/remote.php/dav/"


def test_hrefs_and_discovery_carry_the_prefix(server: LiveServer) -> None:
    assert server.request("PUT", f"{FILES}/%C3%A9t%C3%A9/a%20b.txt", b"x").status == 409
    assert server.request("MKCOL", f"{FILES}/%C3%A9t%C3%A9").status == 201
    assert server.request("PUT", f"{FILES}/%C3%A9t%C3%A9/a%20b.txt", b"x").status == 201
    props = "><d:prop><d:getetag/></d:prop>"
    folder = f"{FILES}/%C3%A9t%C3%A9/"
    assert _propfind(server, f"{FILES}/", props, depth="1") == [f"{FILES}/", folder]
    assert _propfind(server, folder, props, depth="1") == [folder, f"{folder}a%20b.txt"]

    # Discovery from the DAV root to the homes, as CalDAV / CardDAV clients walk it.
    principal = f"{BASE}/remote.php/dav/principals/users/alice/"
    found = _propfind(
        server, f"{BASE}/remote.php/dav/", "><d:prop><d:current-user-principal/></d:prop>"
    )
    assert found == [f"{BASE}/remote.php/dav/", principal]
    homes = _propfind(
        server,
        principal,
        'xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:a="urn:ietf:params:xml:ns:carddav">'
        "<d:prop><c:calendar-home-set/><a:addressbook-home-set/><d:principal-URL/>"
        "<d:principal-collection-set/><c:calendar-user-address-set/></d:prop>",
    )
    assert homes == [
        principal,
        f"{BASE}/remote.php/dav/calendars/alice/",
        f"{BASE}/remote.php/dav/addressbooks/users/alice/",
        principal,
        f"{BASE}/remote.php/dav/principals/",
        "mailto:alice@example.org",
        principal,
    ]
    owners = _propfind(server, f"{CAL}/", "><d:prop><d:owner/><d:current-user-principal/></d:prop>")
    assert owners == [f"{CAL}/", principal, principal]


def test_copy_and_move_take_a_destination_below_the_prefix(server: LiveServer) -> None:
    assert server.request("PUT", f"{FILES}/a.txt", b"alpha").status == 201
    for method, source, target in (("COPY", "a.txt", "b.txt"), ("MOVE", "b.txt", "c%20d.txt")):
        for destination in (f"{FILES}/{target}", f"{server.base_url}{FILES}/{target}"):
            server.request("DELETE", f"{FILES}/{target}")
            done = server.request(
                method,
                f"{FILES}/{source}",
                headers={"Destination": destination},
            )
            assert done.status == 201, (method, destination, done.status, done.text)
            if method == "MOVE":
                server.request(
                    "MOVE", f"{FILES}/{target}", headers={"Destination": f"{FILES}/{source}"}
                )
    assert server.request("GET", f"{FILES}/a.txt").body == b"alpha"
    # A Destination outside the prefix names another server (RFC 4918 §9.8.5).
    outside = server.request(
        "MOVE", f"{FILES}/a.txt", headers={"Destination": "/remote.php/dav/files/alice/x.txt"}
    )
    assert outside.status == 502
    assert server.request("GET", f"{FILES}/a.txt").body == b"alpha"

    # Calendar objects and cards move between their collections the same way.
    event = EVENT.format(uid="e1")
    assert (
        server.request("PUT", f"{CAL}/e1.ics", event, {"Content-Type": "text/calendar"}).status
        == 201
    )
    assert (
        server.request("MOVE", f"{CAL}/e1.ics", headers={"Destination": f"{CAL}/e2.ics"}).status
        == 201
    )
    assert server.request("GET", f"{CAL}/e2.ics").status == 200
    card = CARD.format(uid="c1")
    assert (
        server.request("PUT", f"{BOOK}/c1.vcf", card, {"Content-Type": "text/vcard"}).status == 201
    )
    assert (
        server.request("MOVE", f"{BOOK}/c1.vcf", headers={"Destination": f"{BOOK}/c2.vcf"}).status
        == 201
    )
    assert server.request("GET", f"{BOOK}/c2.vcf").status == 200


def test_reports_answer_and_understand_prefixed_hrefs(server: LiveServer) -> None:
    for uid in ("m1", "m2"):
        put = server.request(
            "PUT", f"{CAL}/{uid}.ics", EVENT.format(uid=uid), {"Content-Type": "text/calendar"}
        )
        assert put.status == 201
    multiget = (
        '<c:calendar-multiget xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
        f"<d:prop><d:getetag/></d:prop><d:href>{CAL}/m1.ics</d:href>"
        f"<d:href>{server.base_url}{CAL}/m2.ics</d:href><d:href>{CAL}/none.ics</d:href>"
        "</c:calendar-multiget>"
    )
    got = server.request("REPORT", f"{CAL}/", multiget, {"Depth": "1"})
    assert got.status == 207
    body = got.text
    assert body.count("200 OK") == 2 and body.count("404 Not Found") == 1, body
    sync = (
        '<d:sync-collection xmlns:d="DAV:"><d:sync-token/><d:sync-level>1</d:sync-level>'
        "<d:prop><d:getetag/></d:prop></d:sync-collection>"
    )
    got = server.request("REPORT", f"{CAL}/", sync)
    assert got.status == 207
    assert sorted(_hrefs(got.body)) == [f"{CAL}/m1.ics", f"{CAL}/m2.ics"]

    assert server.request("PUT", f"{FILES}/found.txt", b"x").status == 201
    search = (
        '<d:searchrequest xmlns:d="DAV:"><d:basicsearch><d:select><d:prop><d:getetag/>'
        f"</d:prop></d:select><d:from><d:scope><d:href>{FILES}</d:href>"
        "<d:depth>infinity</d:depth></d:scope></d:from><d:where><d:like><d:prop>"
        "<d:displayname/></d:prop><d:literal>found%</d:literal></d:like></d:where>"
        "</d:basicsearch></d:searchrequest>"
    )
    got = server.request("SEARCH", f"{BASE}/remote.php/dav/", search, {"Content-Type": "text/xml"})
    assert got.status == 207, got.text
    assert _hrefs(got.body) == [f"{FILES}/found.txt"]


def test_nextcloud_urls_and_uploads_carry_the_prefix(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    flow = json.loads(server.request("POST", f"{BASE}/index.php/login/v2", user=None).body)
    assert flow["poll"]["endpoint"] == f"{server.base_url}{BASE}/index.php/login/v2/poll"
    assert flow["login"].startswith(f"{server.base_url}{BASE}/index.php/login/v2/flow/")

    # Chunked upload v2, finished by a MOVE whose Destination is below the prefix.
    uploads = f"{BASE}/remote.php/dav/uploads/alice/t1"
    assert (
        server.request("MKCOL", uploads, headers={"Destination": f"{FILES}/big.bin"}).status == 201
    )
    for number, part in ((1, b"a" * 10), (2, b"b" * 5)):
        assert (
            server.request(
                "PUT", f"{uploads}/{number:05d}", part, {"Destination": f"{FILES}/big.bin"}
            ).status
            == 201
        )
    done = server.request(
        "MOVE", f"{uploads}/.file", headers={"Destination": f"{server.base_url}{FILES}/big.bin"}
    )
    assert done.status in (201, 204), done.text
    assert server.request("GET", f"{FILES}/big.bin").body == b"a" * 10 + b"b" * 5

    # A link share's URL and its page.
    shared = server.request(
        "POST",
        f"{BASE}/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json",
        body="path=/big.bin&shareType=3&password=correct-horse-9",
        headers={"OCS-APIRequest": "true", "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert shared.status == 200, shared.text
    share = json.loads(shared.body)["ocs"]["data"]
    assert share["url"] == f"{server.base_url}{BASE}/s/{share['token']}"
    page = f"{BASE}/s/{share['token']}"
    login = server.request(
        "POST",
        page,
        "password=correct-horse-9",
        {"Content-Type": "application/x-www-form-urlencoded"},
        user=None,
    )
    assert login.status == 303 and login.headers["location"] == page
    assert f"Path={page};" in login.headers["set-cookie"]

    lines = [r.getMessage() for r in caplog.records if r.name == "oxidav.access"]
    assert any(f"GET {FILES}/big.bin " in line for line in lines), lines[-5:]


@needs_litmus
def test_litmus_below_the_prefix(server: LiveServer, tmp_path: Path) -> None:
    assert_litmus_passes(f"{server.base_url}{FILES}/", tmp_path, "alice", "secret")
