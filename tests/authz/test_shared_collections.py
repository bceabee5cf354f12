"""Calendar sharing over real HTTP: alice's calendar in bob's calendar home (SQLite and PG).

bob reaches alice's ``personal`` calendar as ``/calendars/bob/personal_shared_by_alice/``
through a grant (to him or to a group he is in); a viewer reads, an editor also writes, and
the writes land in alice's calendar. The helpers here are shared with the address-book and
python-caldav tests (``test_shared_collections_clients``).
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from lxml import etree
from sqlalchemy import update

from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.targets import user_id
from oxidav.db import utcnow
from oxidav.db.models.authz import Grant
from tests.support.engine_events import recorded_selects
from tests.support.live import LiveServer
from tests.support.shared_collections import (
    ALICE_CAL,
    APPLE,
    BOB_HOME,
    DAV,
    NS,
    SHARED_CAL,
    hrefs,
    ics,
    need_privilege,
    privileges,
    propfind,
    proppatch,
    put,
    report,
    share,
    sync,
    unshare,
)

READ_ONLY = {"read", "read-current-user-privilege-set", "read-free-busy"}
READ_WRITE = READ_ONLY | {"write-content", "bind", "unbind"}
HOME_PROPS = (
    "<d:resourcetype/><d:displayname/><d:current-user-privilege-set/><d:owner/>"
    "<cs:getctag/><cs:shared-url/><cs:invite/><d:share-access/>"
    "<c:supported-calendar-component-set/>"
)


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """alice's ``personal`` calendar holds one event, ``a.ics``; bob's home exists."""
    assert put(live_server, ALICE_CAL + "a.ics", ics("a")) == 201
    assert live_server.request("PROPFIND", BOB_HOME, None, {"Depth": "0"}, "bob").status == 207
    return live_server


def test_home_lists_the_shared_calendar_with_its_privileges(server: LiveServer) -> None:
    grant_id = share(server, "calendars/alice/personal", Role.VIEWER)
    listing = propfind(server, BOB_HOME, HOME_PROPS, depth="1")
    assert set(listing) == {BOB_HOME, f"{BOB_HOME}personal/", SHARED_CAL}
    shared = listing[SHARED_CAL]
    assert privileges(shared) == READ_ONLY
    assert privileges(listing[f"{BOB_HOME}personal/"]) >= {"write", "bind"}
    assert shared.findtext("d:displayname", namespaces=NS) == "Personal"
    assert shared.findtext("d:owner/d:href", namespaces=NS) == f"{DAV}/principals/users/alice/"
    kinds = {etree.QName(k).localname for k in shared.iterfind("d:resourcetype/*", NS)}
    assert kinds == {"collection", "calendar", "shared"}
    assert shared.findtext("cs:shared-url/d:href", namespaces=NS) == ALICE_CAL
    assert shared.find("d:share-access/d:read", NS) is not None
    invite = shared.find("cs:invite", NS)
    assert invite is not None
    assert invite.findtext("cs:organizer/d:href", namespaces=NS) == (
        f"{DAV}/principals/users/alice/"
    )
    assert invite.find("cs:user/cs:access/cs:read", NS) is not None
    comps = {c.get("name") for c in shared.iterfind("c:supported-calendar-component-set/*", NS)}
    assert "VEVENT" in comps
    owner_ctag = propfind(server, ALICE_CAL, "<cs:getctag/>", user="alice")[ALICE_CAL]
    assert shared.findtext("cs:getctag", namespaces=NS) == owner_ctag.findtext(
        "cs:getctag", namespaces=NS
    )

    # Granting again changes the role of the same grant: bob may now write.
    assert share(server, "calendars/alice/personal", Role.EDITOR) == grant_id
    listing = propfind(server, BOB_HOME, HOME_PROPS, depth="1")
    assert privileges(listing[SHARED_CAL]) == READ_WRITE
    assert listing[SHARED_CAL].find("d:share-access/d:read-write", NS) is not None


def test_viewer_reads_everything_and_writes_nothing(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    share(server, "calendars/alice/personal", Role.VIEWER)
    got = server.request("GET", SHARED_CAL + "a.ics", user="bob")
    assert got.status == 200 and "UID:a" in got.text
    members = propfind(server, SHARED_CAL, "<d:getetag/><d:current-user-privilege-set/>", "1")
    assert set(members) == {SHARED_CAL, SHARED_CAL + "a.ics"}
    assert privileges(members[SHARED_CAL + "a.ics"]) == READ_ONLY
    query = (
        f'<c:calendar-query xmlns:d="DAV:" xmlns:c="{NS["c"]}"><d:prop><d:getetag/>'
        '<c:calendar-data/></d:prop><c:filter><c:comp-filter name="VCALENDAR">'
        '<c:comp-filter name="VEVENT"><c:time-range start="20260101T000000Z" '
        'end="20260201T000000Z"/></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>'
    )
    found = report(server, SHARED_CAL, query)
    assert hrefs(found) == {SHARED_CAL + "a.ics"}
    assert "UID:a" in "".join(found.itertext())
    multiget = (
        f'<c:calendar-multiget xmlns:d="DAV:" xmlns:c="{NS["c"]}"><d:prop><c:calendar-data/>'
        f"</d:prop><d:href>{SHARED_CAL}a.ics</d:href></c:calendar-multiget>"
    )
    assert "UID:a" in "".join(report(server, SHARED_CAL, multiget).itertext())
    synced = sync(server, SHARED_CAL)
    assert hrefs(synced) == {SHARED_CAL + "a.ics"}

    before = propfind(server, ALICE_CAL, "<cs:getctag/>", user="alice")[ALICE_CAL]
    caplog.set_level(logging.INFO, logger="oxidav.audit")
    for method, name, body, wanted in (
        ("PUT", "new.ics", ics("new"), (SHARED_CAL, "bind")),
        ("PUT", "a.ics", ics("a", "changed"), (SHARED_CAL + "a.ics", "write-content")),
        ("DELETE", "a.ics", None, (SHARED_CAL, "unbind")),
    ):
        caplog.clear()
        headers = {"Content-Type": "text/calendar"} if body else {}
        response = server.request(method, SHARED_CAL + name, body, headers, user="bob")
        assert response.status == 403, (method, name, response.status)
        assert need_privilege(response.body) == wanted
        assert len([r for r in caplog.records if r.name == "oxidav.audit"]) == 1
    patch = server.request(
        "PROPPATCH",
        SHARED_CAL,
        f'<d:propertyupdate xmlns:d="DAV:" xmlns:c="{NS["c"]}"><d:set><d:prop>'
        "<c:calendar-description>Mine</c:calendar-description>"
        "</d:prop></d:set></d:propertyupdate>",
        user="bob",
    )
    assert patch.status == 207 and "403" in patch.text
    assert server.request("MKCALENDAR", SHARED_CAL, user="bob").status == 405
    after = propfind(server, ALICE_CAL, "<cs:getctag/><d:displayname/>", user="alice")[ALICE_CAL]
    assert after.findtext("cs:getctag", namespaces=NS) == before.findtext(
        "cs:getctag", namespaces=NS
    )
    assert after.findtext("d:displayname", namespaces=NS) == "Personal"
    assert server.request("GET", ALICE_CAL + "new.ics", user="alice").status == 404
    assert "changed" not in server.request("GET", ALICE_CAL + "a.ics", user="alice").text


def test_editor_writes_land_in_the_owners_calendar(server: LiveServer) -> None:
    share(server, "calendars/alice/personal", Role.EDITOR)
    token = sync(server, ALICE_CAL, user="alice").findtext("d:sync-token", namespaces=NS) or ""
    assert put(server, SHARED_CAL + "b.ics", ics("b"), user="bob") == 201
    assert "UID:b" in server.request("GET", ALICE_CAL + "b.ics", user="alice").text
    changes = sync(server, ALICE_CAL, token, user="alice")
    assert hrefs(changes) == {ALICE_CAL + "b.ics"}
    bob_token = sync(server, SHARED_CAL).findtext("d:sync-token", namespaces=NS) or ""
    assert put(server, SHARED_CAL + "a.ics", ics("a", "moved"), user="bob") == 204
    assert server.request("DELETE", SHARED_CAL + "b.ics", user="bob").status == 204
    assert server.request("GET", ALICE_CAL + "b.ics", user="alice").status == 404
    assert "moved" in server.request("GET", ALICE_CAL + "a.ics", user="alice").text
    # bob's incremental sync sees his own changes, with hrefs in his URL space.
    changed = sync(server, SHARED_CAL, bob_token)
    assert hrefs(changed) == {SHARED_CAL + "a.ics", SHARED_CAL + "b.ics"}
    removed = [
        r.findtext("d:href", namespaces=NS)
        for r in changed.iterfind("d:response", NS)
        if "404" in (r.findtext("d:status", namespaces=NS) or "")
    ]
    assert removed == [SHARED_CAL + "b.ics"]


def test_group_share_then_revoke_is_honoured_on_the_next_request(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    grant_id = share(server, "calendars/alice/personal", Role.EDITOR, group="team")
    listing = propfind(server, BOB_HOME, "<d:current-user-privilege-set/>", depth="1")
    assert privileges(listing[SHARED_CAL]) == READ_WRITE
    assert server.request("GET", SHARED_CAL + "a.ics", user="bob").status == 200
    # A share that reaches bob through a group cannot be declined by bob alone.
    refused = server.request("DELETE", SHARED_CAL, user="bob")
    assert refused.status == 403
    assert need_privilege(refused.body) == (BOB_HOME, "unbind")
    unshare(server, grant_id)
    caplog.set_level(logging.INFO, logger="oxidav.audit")
    caplog.clear()
    assert server.request("GET", SHARED_CAL + "a.ics", user="bob").status == 404
    assert len([r for r in caplog.records if r.name == "oxidav.audit"]) == 1
    # A PUT answers as into a calendar that never existed (409, RFC 4918 §9.7.1).
    never = put(server, f"{BOB_HOME}nothing_shared_by_alice/c.ics", ics("c"), user="bob")
    assert put(server, SHARED_CAL + "c.ics", ics("c"), user="bob") == never == 409
    assert server.request("PROPFIND", SHARED_CAL, None, {"Depth": "0"}, "bob").status == 404
    assert SHARED_CAL not in propfind(server, BOB_HOME, "<d:displayname/>", depth="1")
    assert server.request("GET", ALICE_CAL + "c.ics", user="alice").status == 404


def test_expired_grant_allows_nothing(server: LiveServer) -> None:
    grant_id = share(
        server, "calendars/alice/personal", Role.EDITOR, expires_at=utcnow() + timedelta(days=1)
    )
    assert server.services is not None
    with server.services.db.write() as session:
        session.execute(
            update(Grant)
            .where(Grant.id == grant_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert SHARED_CAL not in propfind(server, BOB_HOME, "<d:displayname/>", depth="1")
    assert server.request("GET", SHARED_CAL + "a.ics", user="bob").status == 404


def test_decline_and_owner_delete(server: LiveServer) -> None:
    share(server, "calendars/alice/personal", Role.VIEWER)
    assert server.request("DELETE", SHARED_CAL, user="bob").status == 204
    assert SHARED_CAL not in propfind(server, BOB_HOME, "<d:displayname/>", depth="1")
    assert server.request("GET", ALICE_CAL + "a.ics", user="alice").status == 200
    # Deleting the calendar drops its grants: a later calendar never inherits them.
    mkcal = server.request("MKCALENDAR", f"{DAV}/calendars/alice/work/", user="alice")
    assert mkcal.status == 201
    share(server, "calendars/alice/work", Role.EDITOR)
    assert server.request("DELETE", f"{DAV}/calendars/alice/work/", user="alice").status == 204
    assert server.request("MKCALENDAR", f"{DAV}/calendars/alice/work/", user="alice").status == 201
    listing = propfind(server, BOB_HOME, "<d:displayname/>", depth="1")
    assert set(listing) == {BOB_HOME, f"{BOB_HOME}personal/"}


def test_operator_shares_a_calendar_from_the_command_line(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from oxidav.cli import main

    monkeypatch.setenv("OXIDAV_DATABASE_URL", server.settings.resolved_database_url)
    data_dir = str(server.settings.data_dir)
    argv = ["share", "add", "calendars/alice/personal", "--user", "bob", "--role", "editor"]
    assert main([*argv, "--data-dir", data_dir]) == 0
    grant_id = int(capsys.readouterr().out.strip())
    listing = propfind(server, BOB_HOME, "<d:current-user-privilege-set/>", depth="1")
    assert privileges(listing[SHARED_CAL]) == READ_WRITE
    assert main(["share", "revoke", str(grant_id), "--data-dir", data_dir]) == 0
    assert server.request("PROPFIND", SHARED_CAL, None, {"Depth": "0"}, "bob").status == 404


def test_home_listing_costs_the_same_for_two_or_ten_shared_calendars(server: LiveServer) -> None:

    from oxidav.calendars.store import CalendarStore

    assert server.services is not None
    store = CalendarStore(server.services.db)
    with server.services.db.read() as session:
        alice = user_id(session, "alice")
    for i in range(10):
        store.create_collection(alice, f"c{i}", displayname=f"C{i}")
    db_engine = server.services.db.engine
    props = "<d:displayname/><d:resourcetype/><d:current-user-privilege-set/><d:owner/>"
    selects = []
    for shared in (range(2), range(2, 10)):
        for i in shared:
            share(server, f"calendars/alice/c{i}", Role.VIEWER if i % 2 else Role.EDITOR)
        propfind(server, BOB_HOME, props, depth="1")  # warm: credentials, users, grant set
        with recorded_selects(db_engine) as seen:
            listing = propfind(server, BOB_HOME, props, depth="1")
        selects.append(seen)
        assert len(listing) == 2 + shared.stop  # the home, bob's personal, the shared ones
    assert len(selects[0]) == len(selects[1]), selects
    # Warm: the grant set comes from the engine's cache (the generation read is all it costs).
    assert not [s for s in selects[1] if "FROM grants" in s], selects[1]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.EDITOR])
def test_recipient_names_colours_and_orders_a_shared_calendar_for_himself(
    server: LiveServer, role: Role
) -> None:
    """As Nextcloud lets a sharee (and Apple Calendar PROPPATCHes calendar-order on reorder):
    bob's own values, seen by him only; alice's calendar keeps hers."""
    share(server, "calendars/alice/personal", role)
    answer = proppatch(
        server,
        SHARED_CAL,
        "<d:set><d:prop><d:displayname>Alice (work)</d:displayname>"
        "<a:calendar-color>#FF0000FF</a:calendar-color><a:calendar-order>3</a:calendar-order>"
        "</d:prop></d:set>",
    )
    assert "403" not in answer and "200" in answer
    props = "<d:displayname/><a:calendar-color/><a:calendar-order/>"
    bob_view = server.request(
        "PROPFIND",
        BOB_HOME,
        f'<d:propfind xmlns:d="DAV:" xmlns:a="{APPLE}"><d:prop>{props}</d:prop></d:propfind>',
        {"Depth": "1"},
        user="bob",
    )
    assert bob_view.status == 207
    shared = _response_of(bob_view.body, SHARED_CAL)
    assert shared.findtext(".//d:displayname", namespaces=NS) == "Alice (work)"
    assert shared.findtext(f".//{{{APPLE}}}calendar-color") == "#FF0000FF"
    assert shared.findtext(f".//{{{APPLE}}}calendar-order") == "3"
    alice_view = server.request(
        "PROPFIND",
        ALICE_CAL,
        f'<d:propfind xmlns:d="DAV:" xmlns:a="{APPLE}"><d:prop>{props}</d:prop></d:propfind>',
        {"Depth": "0"},
        user="alice",
    )
    own = _response_of(alice_view.body, ALICE_CAL)
    assert own.findtext(".//d:displayname", namespaces=NS) == "Personal"
    assert own.findtext(f".//{{{APPLE}}}calendar-color") != "#FF0000FF"
    # Removing bob's value shows alice's again; a bad value is refused like the owner's.
    proppatch(server, SHARED_CAL, "<d:remove><d:prop><d:displayname/></d:prop></d:remove>")
    again = propfind(server, SHARED_CAL, "<d:displayname/>")[SHARED_CAL]
    assert again.findtext("d:displayname", namespaces=NS) == "Personal"
    bad = proppatch(
        server,
        SHARED_CAL,
        "<d:set><d:prop><a:calendar-order>first</a:calendar-order></d:prop></d:set>",
    )
    assert "200" not in bad
    # Declining the share drops bob's values with it.
    assert server.request("DELETE", SHARED_CAL, user="bob").status == 204
    assert server.services is not None
    from oxidav.db.models.share_overrides import ShareOverride

    with server.services.db.read() as session:
        assert session.query(ShareOverride).count() == 0


def _response_of(body: bytes, href: str) -> etree._Element:
    for item in etree.fromstring(body).iterfind("d:response", NS):
        if item.findtext("d:href", namespaces=NS) == href:
            return item
    raise AssertionError(f"{href} not in {body!r}")
