"""Dead properties, locks, COPY / MOVE / DELETE over HTTP, and the cost of a listing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from oxidav.db import Database, utcnow
from oxidav.db.models.tree import Node
from oxidav.db.prepared import PreparedRead
from oxidav.tree.trash import purge_trashed_before
from tests.support.engine_events import recorded_statements
from tests.support.files import FILES, propfind_props, url
from tests.support.live import LiveServer

LOCKINFO = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>"
)


def proppatch(server: LiveServer, path: str, inner: str) -> tuple[int, bytes]:
    body = (
        '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:X="urn:x" '
        f'xmlns:Y="http://example.com/y">{inner}</D:propertyupdate>'
    )
    response = server.request("PROPPATCH", url(path), body)
    return response.status, response.body


def props_of(server: LiveServer, path: str) -> dict[str, str]:
    body = server.request("PROPFIND", url(path), headers={"Depth": "0"}).body
    (props,) = propfind_props(body).values()
    return props


def test_dead_properties_follow_move_and_are_copied(live_server: LiveServer) -> None:
    live_server.request("PUT", url("/f.txt"), b"x")
    status, _ = proppatch(
        live_server,
        "/f.txt",
        "<D:set><D:prop><X:color>red</X:color><Y:tag><Y:inner a='1'>v</Y:inner></Y:tag>"
        "</D:prop></D:set>",
    )
    assert status == 207
    props = props_of(live_server, "/f.txt")
    assert props["{urn:x}color"] == "red"
    assert 'a="1"' in props["{http://example.com/y}tag"]
    live_server.request("MOVE", url("/f.txt"), headers={"Destination": url("/g.txt")})
    assert props_of(live_server, "/g.txt")["{urn:x}color"] == "red"
    live_server.request("COPY", url("/g.txt"), headers={"Destination": url("/h.txt")})
    assert props_of(live_server, "/h.txt")["{urn:x}color"] == "red"
    proppatch(live_server, "/h.txt", "<D:remove><D:prop><X:color/></D:prop></D:remove>")
    assert "{urn:x}color" not in props_of(live_server, "/h.txt")
    assert props_of(live_server, "/g.txt")["{urn:x}color"] == "red"


def test_proppatch_is_all_or_nothing(live_server: LiveServer) -> None:
    live_server.request("PUT", url("/p.txt"), b"x")
    status, body = proppatch(
        live_server,
        "/p.txt",
        "<D:set><D:prop><X:ok>1</X:ok><D:getetag>forged</D:getetag></D:prop></D:set>",
    )
    assert status == 207
    assert b"424" in body and b"403" in body
    assert "{urn:x}ok" not in props_of(live_server, "/p.txt")


def test_copy_move_statuses_and_depth(live_server: LiveServer) -> None:
    live_server.request("MKCOL", url("/src"))
    live_server.request("PUT", url("/src/a"), b"a")
    copy = live_server.request("COPY", url("/src/"), headers={"Destination": url("/dst/")})
    assert copy.status == 201
    again = live_server.request("COPY", url("/src/"), headers={"Destination": url("/dst/")})
    assert again.status == 204
    refused = live_server.request(
        "COPY", url("/src/"), headers={"Destination": url("/dst/"), "Overwrite": "F"}
    )
    assert refused.status == 412
    shallow = live_server.request(
        "COPY", url("/src/"), headers={"Destination": url("/shallow/"), "Depth": "0"}
    )
    assert shallow.status == 201
    assert live_server.request("GET", url("/shallow/a")).status == 404
    move = live_server.request("MOVE", url("/dst/"), headers={"Destination": url("/moved/")})
    assert move.status == 201
    assert live_server.request("GET", url("/moved/a")).body == b"a"
    assert live_server.request("GET", url("/dst/a")).status == 404
    below = live_server.request("MOVE", url("/src/"), headers={"Destination": url("/src/x/")})
    assert below.status == 403
    conflict = live_server.request("MOVE", url("/src/a"), headers={"Destination": url("/no/a")})
    assert conflict.status == 409


def test_delete_goes_to_the_trash_and_purge_drops_it(live_server: LiveServer) -> None:
    assert live_server.services is not None
    services = live_server.services
    live_server.request("MKCOL", url("/t"))
    live_server.request("PUT", url("/t/f"), b"trash me")
    assert live_server.request("DELETE", url("/t")).status == 204
    assert live_server.request("GET", url("/t/f")).status == 404
    with services.db.read() as session:
        trashed = session.scalars(select(Node.trashed_at).where(Node.path == "/t/f")).all()
    assert len(trashed) == 1 and trashed[0] is not None
    assert purge_trashed_before(services.db, services.blobs, utcnow() + timedelta(seconds=1)) == 1
    with services.db.read() as session:
        assert session.scalars(select(Node.id).where(Node.path.like("/t%"))).all() == []


def test_locks_hold_across_mounts_and_follow_the_rfc(live_server: LiveServer) -> None:
    live_server.request("PUT", url("/l.txt"), b"x")
    locked = live_server.request("LOCK", url("/l.txt"), LOCKINFO, headers={"Timeout": "Second-60"})
    assert locked.status == 200
    token = locked.headers["lock-token"]
    # The legacy mount names the same resource: the lock holds there too.
    assert live_server.request("PUT", "/remote.php/webdav/l.txt", b"y").status == 423
    assert live_server.request("DELETE", url("/l.txt")).status == 423
    ok = live_server.request("PUT", url("/l.txt"), b"z", headers={"If": f"({token})"})
    assert ok.status == 204
    assert "activelock" in props_of(live_server, "/l.txt")["{DAV:}lockdiscovery"]
    # A lock on an unmapped URL creates an empty file (RFC 4918 §7.3) ...
    new = live_server.request("LOCK", url("/new.txt"), LOCKINFO)
    assert new.status == 201
    assert live_server.request("GET", url("/new.txt")).body == b""
    # ... but not when the lock is refused: then nothing is left behind.
    live_server.request("MKCOL", url("/c"))
    coll = live_server.request("LOCK", url("/c/"), LOCKINFO, headers={"Depth": "infinity"})
    assert coll.status == 200
    refused = live_server.request("LOCK", url("/c/x.txt"), LOCKINFO)
    assert refused.status == 423
    assert live_server.request("GET", url("/c/x.txt")).status == 404
    # MOVE drops the source's locks (§9.9.1).
    live_server.request(
        "MOVE", url("/l.txt"), headers={"Destination": url("/m.txt"), "If": f"({token})"}
    )
    assert live_server.request("PUT", url("/m.txt"), b"free").status == 204


def test_listing_costs_the_same_queries_for_10_and_200_children(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert live_server.services is not None
    engine = live_server.services.db.engine
    for folder, count in (("/small", 10), ("/big", 200)):
        live_server.request("MKCOL", url(folder))
        for i in range(count):
            live_server.request("PUT", url(f"{folder}/f{i}"), b"x")
    body = (
        b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:X="urn:x"><D:prop>'
        b"<D:getetag/><D:getlastmodified/><D:getcontentlength/><D:resourcetype/>"
        b"<D:lockdiscovery/><X:dead/></D:prop></D:propfind>"
    )
    # The fewest statements each listing took over three rounds: work that comes with the clock
    # rather than the request (a credential cache entry expiring on a slow machine) adds to one
    # round, while a cost per child would show in every round.
    costs: dict[str, int] = {}
    not_begin = recorded_statements(engine, lambda s: None if s.strip().upper() == "BEGIN" else s)
    prepared_rows = PreparedRead.rows
    with not_begin as statements:

        def counted_rows(read: PreparedRead, db: Database, params: Any) -> list[tuple[Any, ...]]:
            # Prepared reads go to the driver directly: the engine's events do not see them.
            statements.append(str(read.statement))
            return prepared_rows(read, db, params)

        monkeypatch.setattr(PreparedRead, "rows", counted_rows)
        for folder in ("/small", "/big") * 3:
            statements.clear()
            response = live_server.request("PROPFIND", url(folder), body, headers={"Depth": "1"})
            assert response.status == 207
            costs[folder] = min(costs.get(folder, len(statements)), len(statements))
    assert costs["/small"] == costs["/big"], costs
    assert any("nodes.parent_id" in s for s in statements)  # the page read is counted
    assert costs["/big"] <= 12, costs
    assert len(propfind_props(response.body)) == 201
    assert FILES in next(iter(propfind_props(response.body)))


def test_propfind_modes_and_streamed_answers(live_server: LiveServer, monkeypatch) -> None:
    import oxidav.providers.files.propfind as propfind
    import oxidav.providers.files.resources as resources

    live_server.request("MKCOL", url("/m"))
    for i in range(30):
        live_server.request("PUT", url(f"/m/f{i}"), b"x")
    include = (
        b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/><D:include>'
        b"<D:quota-used-bytes/></D:include></D:propfind>"
    )
    folder = propfind_props(
        live_server.request("PROPFIND", url("/m/"), include, headers={"Depth": "0"}).body
    )[url("/m/")]
    assert folder["{DAV:}quota-used-bytes"] == "30"
    assert "{DAV:}supportedlock" in folder
    names = live_server.request(
        "PROPFIND",
        url("/m/f1"),
        b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>',
        headers={"Depth": "0"},
    )
    assert b"<D:getetag/>" in names.body and b"<D:getcontentlength/>" in names.body
    bad = b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/><D:propname/></D:propfind>'
    assert live_server.request("PROPFIND", url("/m/"), bad, headers={"Depth": "0"}).status == 400
    # A listing larger than the buffer is streamed (no Content-Length), and still complete;
    # members come a page at a time (here 7 per keyset query).
    monkeypatch.setattr(propfind, "BUFFER_LIMIT", 2000)
    monkeypatch.setattr(resources, "PAGE_SIZE", 7)
    response = live_server.request("PROPFIND", url("/m/"), headers={"Depth": "1"})
    assert response.status == 207 and "content-length" not in response.headers
    hrefs = list(propfind_props(response.body))
    assert hrefs == [url("/m/"), *sorted(url(f"/m/f{i}") for i in range(30))]
