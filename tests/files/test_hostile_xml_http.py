"""Hostile XML request bodies over HTTP (issue 24 case 6): no DTD is ever read, nesting, element
count and size are capped, and nothing a client stores can make a later read answer 500 —
values planted in the database before these rules are skipped with a log line."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from oxidav.db.models.tree import DavLock, NodeProperty
from oxidav.providers.dav.xml_input import MAX_DEPTH, MAX_ELEMENTS
from tests.support.files import AUTH, FILES, propfind_props, url
from tests.support.live import LiveServer, in_process_server, make_settings

ENTITY_DTD = '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
#: What ``file:///etc/passwd`` would bring into an answer were the entity ever resolved.
PASSWD_MARK = b"root:"
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "lollollollollollollollollollol">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + ']><D:propfind xmlns:D="DAV:"><D:prop><D:displayname>&j;</D:displayname></D:prop>'
    "</D:propfind>"
)
POISON_VALUE = b'<z:leak xmlns:z="urn:z">&x;</z:leak>'
POISON_OWNER = b'<D:owner xmlns:D="DAV:">&x;</D:owner>'
LOCKINFO = (
    '<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    "</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>{owner}</D:owner></D:lockinfo>"
)


@pytest.fixture
def small_cap_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A server whose XML bodies are capped at 4 KiB."""
    settings = make_settings(tmp_path / "data", db_url, max_xml_body_bytes=4096)
    with in_process_server(settings) as server:
        yield server


def proppatch_body(inner: str, prolog: str = "") -> str:
    return (
        f'<?xml version="1.0"?>{prolog}<D:propertyupdate xmlns:D="DAV:" xmlns:z="urn:z">'
        f"<D:set><D:prop>{inner}</D:prop></D:set></D:propertyupdate>"
    )


def allprop(server: LiveServer, path: str, depth: str) -> tuple[int, bytes]:
    response = server.request("PROPFIND", url(path), headers={"Depth": depth})
    return response.status, response.body


def stored_rows(server: LiveServer) -> tuple[int, int]:
    assert server.services is not None
    with server.services.db.read() as session:
        props = session.scalar(select(func.count()).select_from(NodeProperty)) or 0
        locks = session.scalar(select(func.count()).select_from(DavLock)) or 0
    return props, locks


def assert_refused(status: int, body: bytes, code: int, reason: str) -> None:
    assert status == code, body
    assert reason.encode() in body, body
    assert PASSWD_MARK not in body


def test_proppatch_with_dtd_entity_is_refused_and_stores_nothing(live_server: LiveServer) -> None:
    live_server.request("MKCOL", url("/d"))
    live_server.request("PUT", url("/d/f.txt"), b"x")
    response = live_server.request(
        "PROPPATCH", url("/d/f.txt"), proppatch_body("<z:leak>&x;</z:leak>", ENTITY_DTD)
    )
    assert_refused(response.status, response.body, 400, "document type declaration")
    assert stored_rows(live_server) == (0, 0)
    for path, depth in (("/d/f.txt", "0"), ("/d/", "1")):
        status, body = allprop(live_server, path, depth)
        assert status == 207 and PASSWD_MARK not in body


def test_lock_with_entity_owner_is_refused_and_stores_nothing(live_server: LiveServer) -> None:
    live_server.request("MKCOL", url("/d"))
    live_server.request("PUT", url("/d/f.txt"), b"x")
    body = '<?xml version="1.0"?>' + ENTITY_DTD + LOCKINFO.format(owner="&x;")[21:]
    response = live_server.request("LOCK", url("/d/f.txt"), body, headers={"Depth": "0"})
    assert_refused(response.status, response.body, 400, "document type declaration")
    assert stored_rows(live_server) == (0, 0)
    for path, depth in (("/d/f.txt", "0"), ("/d/", "1")):
        status, answer = allprop(live_server, path, depth)
        assert status == 207 and PASSWD_MARK not in answer


def test_stored_values_read_back(live_server: LiveServer) -> None:
    """Comments, processing instructions and character references are normalised away: the
    stored form is plain XML that the next PROPFIND reads."""
    live_server.request("PUT", url("/f.txt"), b"x")
    value = "<z:v>a<!-- odd <z:x> &amp; --><?pi x?>&#65;&amp;&#x1F600;</z:v>"
    assert live_server.request("PROPPATCH", url("/f.txt"), proppatch_body(value)).status == 207
    status, body = allprop(live_server, "/f.txt", "0")
    assert status == 207
    (props,) = propfind_props(body).values()
    assert props["{urn:z}v"] == "aA&\U0001f600"


def _plant(server: LiveServer, statement: object) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        session.execute(statement)


def test_unreadable_stored_property_is_skipped_with_a_log_line(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    live_server.request("MKCOL", url("/d"))
    live_server.request("PUT", url("/d/f.txt"), b"x")
    set_value = proppatch_body("<z:leak>ok</z:leak><z:keep>kept</z:keep>")
    assert live_server.request("PROPPATCH", url("/d/f.txt"), set_value).status == 207
    # What the old code stored for <z:leak>&x;</z:leak> under a DOCTYPE.
    _plant(
        live_server,
        update(NodeProperty).where(NodeProperty.name == "{urn:z}leak").values(value=POISON_VALUE),
    )
    caplog.set_level(logging.WARNING)
    for path, depth in (("/d/f.txt", "0"), ("/d/", "1")):
        status, body = allprop(live_server, path, depth)
        assert status == 207, body
        props = propfind_props(body)[FILES + "/d/f.txt"]
        assert "{urn:z}leak" not in props and props["{urn:z}keep"] == "kept"
    named = (
        '<D:propfind xmlns:D="DAV:" xmlns:z="urn:z"><D:prop><z:leak/><z:keep/></D:prop>'
        "</D:propfind>"
    )
    response = live_server.request("PROPFIND", url("/d/f.txt"), named, headers={"Depth": "0"})
    assert response.status == 207
    assert propfind_props(response.body)[FILES + "/d/f.txt"] == {"{urn:z}keep": "kept"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("{urn:z}leak" in w and "/d/f.txt" in w for w in warnings), warnings


def test_unreadable_stored_lock_owner_is_left_out(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    live_server.request("MKCOL", url("/d"))
    live_server.request("PUT", url("/d/f.txt"), b"x")
    locked = live_server.request(
        "LOCK", url("/d/f.txt"), LOCKINFO.format(owner="me"), headers={"Depth": "0"}
    )
    assert locked.status == 200
    _plant(live_server, update(DavLock).values(owner=POISON_OWNER))
    caplog.set_level(logging.WARNING)
    discovery = '<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>'
    for path, depth in (("/d/f.txt", "0"), ("/d/", "1")):
        for body in (discovery, None):
            response = live_server.request("PROPFIND", url(path), body, headers={"Depth": depth})
            assert response.status == 207, response.body
            assert b"activelock" in response.body and b"owner>" not in response.body
    refreshed = live_server.request(
        "LOCK",
        url("/d/f.txt"),
        headers={"If": f"(<{locked.headers['lock-token'].strip('<>')}>)", "Timeout": "Second-60"},
    )
    assert refreshed.status == 200 and b"activelock" in refreshed.body
    assert any("lock owner" in r.getMessage() for r in caplog.records)


HOSTILE = {
    "billion laughs": (LAUGHS, "document type declaration"),
    "external entity": (
        proppatch_body("<z:leak>&x;</z:leak>", ENTITY_DTD),
        "document type declaration",
    ),
    "parameter entity": (
        '<!DOCTYPE d [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><D:propfind xmlns:D="DAV:"/>',
        "document type declaration",
    ),
    "undeclared entity": (proppatch_body("<z:leak>&x;</z:leak>"), "not well-formed"),
    "deep nesting": ("<a>" * 10_000 + "</a>" * 10_000, f"deeper than {MAX_DEPTH}"),
    "nesting past the cap, within libxml2's": ("<a>" * 200 + "</a>" * 200, "deeper than"),
    "many elements": (
        '<D:propfind xmlns:D="DAV:"><D:prop>' + "<a/>" * (MAX_ELEMENTS + 10) + "</D:prop>"
        "</D:propfind>",
        f"more than {MAX_ELEMENTS} elements",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_bodies_are_refused_with_a_reason(live_server: LiveServer, case: str) -> None:
    live_server.request("PUT", url("/f.txt"), b"x")
    body, reason = HOSTILE[case]
    for method in ("PROPFIND", "PROPPATCH", "LOCK", "REPORT", "SEARCH"):
        response = live_server.request(method, url("/f.txt"), body, headers={"Depth": "0"})
        assert_refused(response.status, response.body, 400, reason)
    assert stored_rows(live_server) == (0, 0)
    assert allprop(live_server, "/f.txt", "0")[0] == 207


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("MKCALENDAR", "/remote.php/dav/calendars/alice/evil/"),
        ("MKCOL", "/remote.php/dav/calendars/alice/evil/"),
        ("MKCOL", "/remote.php/dav/addressbooks/users/alice/evil/"),
        ("REPORT", "/remote.php/dav/calendars/alice/"),
        ("REPORT", "/remote.php/dav/addressbooks/users/alice/"),
        ("PROPFIND", "/remote.php/dav/principals/users/alice/"),
        ("SEARCH", "/remote.php/dav/"),
    ],
)
def test_every_dav_room_refuses_a_doctype(live_server: LiveServer, method: str, path: str) -> None:
    body = (
        '<?xml version="1.0"?>' + ENTITY_DTD + '<D:mkcol xmlns:D="DAV:"><D:set><D:prop>'
        "<D:displayname>&x;</D:displayname></D:prop></D:set></D:mkcol>"
    )
    response = live_server.request(
        method, path, body, headers={"Depth": "0", "Content-Type": "application/xml"}
    )
    assert_refused(response.status, response.body, 400, "document type declaration")
    if method.startswith("MK"):
        assert live_server.request("PROPFIND", path, headers={"Depth": "0"}).status == 404


def test_body_over_the_cap_is_413(small_cap_server: LiveServer) -> None:
    server = small_cap_server
    server.request("PUT", url("/f.txt"), b"x")
    padding = "<z:p>" + "x" * 5000 + "</z:p>"
    response = server.request("PROPPATCH", url("/f.txt"), proppatch_body(padding))
    assert_refused(response.status, response.body, 413, "max_xml_body_bytes")
    assert stored_rows(server) == (0, 0)
    assert server.request("PROPPATCH", url("/f.txt"), proppatch_body("<z:p>ok</z:p>")).status == 207


def test_million_elements_are_refused_before_the_body_is_read(live_server: LiveServer) -> None:
    """Default settings: a body of 1 M elements (4 MB) is over the cap; the 413 comes without
    the body having been read (the client never sends it)."""
    live_server.request("PUT", url("/f.txt"), b"x")
    body = '<D:propfind xmlns:D="DAV:"><D:prop>' + "<a/>" * 1_000_000 + "</D:prop></D:propfind>"
    head = (
        f"PROPFIND {url('/f.txt')} HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH}\r\n"
        f"Depth: 0\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    answer = answer.removeprefix(b"HTTP/1.1 100 Continue\r\n\r\n")  # cheroot sends it early
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"max_xml_body_bytes" in answer


def test_chunked_body_over_the_cap_is_413(small_cap_server: LiveServer) -> None:
    """A chunked body is read only up to the cap, then refused."""
    server = small_cap_server
    server.request("PUT", url("/f.txt"), b"x")
    chunk = b"<!-- " + b"x" * 8000 + b" -->"
    head = (
        f"PROPPATCH {url('/f.txt')} HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH}\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n0\r\n\r\n")
        answer = b""
        while data := sock.recv(65536):
            answer += data
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"max_xml_body_bytes" in answer
    assert stored_rows(server) == (0, 0)


def test_unreadable_personal_value_of_a_share_is_skipped(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    """bob's own displayname of alice's calendar, stored as the old code stored it from a
    body with an entity: his calendar home still lists the share, with alice's name."""
    from oxidav.authz.grants.roles import Role
    from oxidav.db.models.share_overrides import ShareOverride
    from tests.support.shared_collections import BOB_HOME, SHARED_CAL, proppatch, share

    for user in ("alice", "bob"):  # the first visit of a home creates its calendar
        home = f"/remote.php/dav/calendars/{user}/"
        assert live_server.request("PROPFIND", home, None, {"Depth": "0"}, user).status == 207
    share(live_server, "calendars/alice/personal", Role.VIEWER)
    proppatch(
        live_server,
        SHARED_CAL,
        "<d:set><d:prop><d:displayname>mine</d:displayname></d:prop></d:set>",
    )
    _plant(
        live_server,
        update(ShareOverride).values(value='<d:displayname xmlns:d="DAV:">&x;</d:displayname>'),
    )
    caplog.set_level(logging.WARNING)
    body = '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname/></d:prop></d:propfind>'
    for path, depth in ((BOB_HOME, "1"), (SHARED_CAL, "0")):
        response = live_server.request("PROPFIND", path, body, {"Depth": depth}, user="bob")
        assert response.status == 207, response.body
        assert b"Personal" in response.body and b"mine" not in response.body
    assert any("{DAV:}displayname" in r.getMessage() for r in caplog.records)
