"""CalDAV over HTTP against a live oxidav (SQLite and PostgreSQL): discovery properties,
MKCALENDAR / extended MKCOL / PROPPATCH, PUT preconditions and their XML bodies, ETags,
sync-collection with DAV:limit, isolation between users."""

from __future__ import annotations

import pytest
from lxml import etree
from sqlalchemy import text

CAL = "urn:ietf:params:xml:ns:caldav"
CS = "http://calendarserver.org/ns/"
ICAL = "http://apple.com/ns/ical/"
HOME = "/remote.php/dav/calendars/alice/"
NS = {"D": "DAV:", "C": CAL, "CS": CS, "I": ICAL}


def ics(uid: str, start: str = "20260105T100000Z", extra: str = "", comp: str = "VEVENT") -> str:
    return (
        f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:{comp}\r\nUID:{uid}\r\n"
        f"DTSTAMP:20260101T000000Z\r\nDTSTART:{start}\r\nDURATION:PT1H\r\n{extra}"
        f"END:{comp}\r\nEND:VCALENDAR\r\n"
    )


def propfind(server, path: str, props: str, depth: str = "0", user: str = "alice"):
    body = (
        f'<D:propfind xmlns:D="DAV:" xmlns:C="{CAL}" xmlns:CS="{CS}" xmlns:I="{ICAL}">'
        f"<D:prop>{props}</D:prop></D:propfind>"
    )
    response = server.request("PROPFIND", path, body, {"Depth": depth}, user=user)
    assert response.status == 207, response.text
    return etree.fromstring(response.body)


def put(server, path: str, body: str, **headers: str):
    headers = {"Content-Type": "text/calendar; charset=utf-8", **headers}
    return server.request("PUT", path, body, {k.replace("_", "-"): v for k, v in headers.items()})


def error_condition(response) -> str:
    root = etree.fromstring(response.body)
    assert root.tag == "{DAV:}error"
    return root[0].tag


@pytest.fixture
def cal(live_server) -> str:
    body = (
        f'<C:mkcalendar xmlns:D="DAV:" xmlns:C="{CAL}" xmlns:I="{ICAL}"><D:set><D:prop>'
        "<D:displayname>Work</D:displayname>"
        "<C:calendar-description>Job stuff</C:calendar-description>"
        "<I:calendar-color>#FF0000FF</I:calendar-color><I:calendar-order>3</I:calendar-order>"
        '<C:supported-calendar-component-set><C:comp name="VEVENT"/><C:comp name="VTODO"/>'
        "</C:supported-calendar-component-set></D:prop></D:set></C:mkcalendar>"
    )
    response = live_server.request("MKCALENDAR", HOME + "work/", body)
    assert response.status == 201, response.text
    return HOME + "work/"


def test_options_advertises_caldav(live_server) -> None:
    response = live_server.request("OPTIONS", HOME)
    dav = [part.strip() for part in response.headers["dav"].split(",")]
    assert {"1", "3", "calendar-access", "addressbook", "extended-mkcol"} <= set(dav)
    assert "REPORT" in response.headers["allow"] and "MKCALENDAR" in response.headers["allow"]


def test_discovery_properties(live_server) -> None:
    root = propfind(live_server, "/", "<D:current-user-principal/>")
    assert root.findtext(".//D:current-user-principal/D:href", namespaces=NS) == (
        "/remote.php/dav/principals/users/alice/"
    )
    principal = propfind(
        live_server,
        "/remote.php/dav/principals/users/alice/",
        "<C:calendar-home-set/><C:calendar-user-address-set/><D:displayname/>"
        "<D:principal-URL/><D:principal-collection-set/><D:resourcetype/>"
        "<D:current-user-privilege-set/>",
    )
    assert principal.findtext(".//C:calendar-home-set/D:href", namespaces=NS) == HOME
    addresses = [h.text for h in principal.iterfind(".//C:calendar-user-address-set/D:href", NS)]
    assert "mailto:alice@example.org" in addresses
    assert principal.find(".//D:resourcetype/D:principal", NS) is not None
    assert principal.findtext(".//D:principal-collection-set/D:href", namespaces=NS) == (
        "/remote.php/dav/principals/"
    )
    assert (
        live_server.request(
            "PROPFIND", "/remote.php/dav/principals/users/bob/", None, {"Depth": "0"}
        ).status
        == 404
    )


def test_home_lists_personal_calendar_with_properties(live_server) -> None:
    root = propfind(
        live_server,
        HOME,
        "<D:resourcetype/><CS:getctag/><D:sync-token/><C:supported-calendar-component-set/>"
        "<C:supported-calendar-data/><C:max-resource-size/><C:min-date-time/>"
        "<C:max-date-time/><D:owner/><D:current-user-privilege-set/><D:supported-report-set/>",
        depth="1",
    )
    responses = {r.findtext("D:href", namespaces=NS): r for r in root.iterfind("D:response", NS)}
    assert set(responses) == {HOME, HOME + "personal/"}
    personal = responses[HOME + "personal/"]
    assert personal.find(".//D:resourcetype/C:calendar", NS) is not None
    assert personal.findtext(".//CS:getctag", namespaces=NS) == personal.findtext(
        ".//D:sync-token", namespaces=NS
    )
    assert personal.findtext(".//D:sync-token", namespaces=NS).startswith(
        "http://oxidav.org/ns/sync/"
    )
    assert personal.findtext(".//C:max-resource-size", namespaces=NS) == str(10 << 20)
    assert personal.findtext(".//C:min-date-time", namespaces=NS) == "18000101T000000Z"
    assert personal.findtext(".//D:owner/D:href", namespaces=NS) == (
        "/remote.php/dav/principals/users/alice/"
    )
    privileges = {
        p[0].tag for p in personal.iterfind(".//D:current-user-privilege-set/D:privilege", NS)
    }
    assert {"{DAV:}read", "{DAV:}write", f"{{{CAL}}}read-free-busy"} <= privileges
    reports = {r[0].tag for r in personal.iterfind(".//D:supported-report/D:report", NS)}
    assert reports == {
        f"{{{CAL}}}calendar-query",
        f"{{{CAL}}}calendar-multiget",
        f"{{{CAL}}}free-busy-query",
        "{DAV:}sync-collection",
    }
    data = personal.find(".//C:supported-calendar-data/C:calendar-data", NS)
    assert data.get("content-type") == "text/calendar" and data.get("version") == "2.0"


def test_mkcalendar_sets_properties_and_proppatch_changes_them(live_server, cal) -> None:
    props = "<D:displayname/><C:calendar-description/><I:calendar-color/><I:calendar-order/>"
    props += "<C:supported-calendar-component-set/>"
    root = propfind(live_server, cal, props)
    assert root.findtext(".//D:displayname", namespaces=NS) == "Work"
    assert root.findtext(".//C:calendar-description", namespaces=NS) == "Job stuff"
    assert root.findtext(".//I:calendar-color", namespaces=NS) == "#FF0000FF"
    assert root.findtext(".//I:calendar-order", namespaces=NS) == "3"
    comps = [
        c.get("name") for c in root.iterfind(".//C:supported-calendar-component-set/C:comp", NS)
    ]
    assert comps == ["VEVENT", "VTODO"]
    patch = (
        f'<D:propertyupdate xmlns:D="DAV:" xmlns:I="{ICAL}"><D:set><D:prop>'
        "<D:displayname>Job</D:displayname><I:calendar-color>#00FF00FF</I:calendar-color>"
        "</D:prop></D:set></D:propertyupdate>"
    )
    assert live_server.request("PROPPATCH", cal, patch).status == 207
    root = propfind(live_server, cal, props)
    assert root.findtext(".//D:displayname", namespaces=NS) == "Job"
    assert root.findtext(".//I:calendar-color", namespaces=NS) == "#00FF00FF"
    protected = (
        f'<D:propertyupdate xmlns:D="DAV:" xmlns:CS="{CS}"><D:set><D:prop>'
        "<CS:getctag>1</CS:getctag></D:prop></D:set></D:propertyupdate>"
    )
    response = live_server.request("PROPPATCH", cal, protected)
    assert b"403" in response.body
    # MKCALENDAR on an existing URL.
    assert live_server.request("MKCALENDAR", cal).status == 405


def test_extended_mkcol(live_server) -> None:
    body = (
        f'<D:mkcol xmlns:D="DAV:" xmlns:C="{CAL}"><D:set><D:prop>'
        "<D:resourcetype><D:collection/><C:calendar/></D:resourcetype>"
        "<D:displayname>Via MKCOL</D:displayname></D:prop></D:set></D:mkcol>"
    )
    assert live_server.request("MKCOL", HOME + "viamkcol/", body).status == 201
    root = propfind(live_server, HOME + "viamkcol/", "<D:displayname/><D:resourcetype/>")
    assert root.findtext(".//D:displayname", namespaces=NS) == "Via MKCOL"
    plain = (
        '<D:mkcol xmlns:D="DAV:"><D:set><D:prop>'
        "<D:resourcetype><D:collection/></D:resourcetype></D:prop></D:set></D:mkcol>"
    )
    response = live_server.request("MKCOL", HOME + "plain/", plain)
    assert response.status == 403
    assert error_condition(response) == "{DAV:}valid-resourcetype"


def test_put_preconditions_have_xml_bodies(live_server, cal) -> None:
    created = put(live_server, cal + "a.ics", ics("a"), If_None_Match="*")
    assert created.status == 201 and created.headers["etag"].startswith('"')
    assert put(live_server, cal + "a.ics", ics("a"), If_None_Match="*").status == 412
    assert put(live_server, cal + "x.ics", ics("x"), If_Match='"nope"').status == 412
    conflict = put(live_server, cal + "b.ics", ics("a"))
    assert conflict.status == 409
    root = etree.fromstring(conflict.body)
    assert root[0].tag == f"{{{CAL}}}no-uid-conflict"
    assert root.findtext(".//D:href", namespaces=NS) == cal + "a.ics"
    cases = [
        (ics("j", comp="VJOURNAL"), "supported-calendar-component"),
        ("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", "valid-calendar-object-resource"),
        ("nonsense", "valid-calendar-data"),
        (ics("big", extra="DESCRIPTION:" + "x" * 100 + "\r\n") * 1, None),
    ]
    for body, condition in cases:
        response = put(live_server, cal + "bad.ics", body)
        if condition is None:
            assert response.status == 201
            continue
        assert response.status == 403, body
        assert error_condition(response) == f"{{{CAL}}}{condition}"
    wrong_type = put(live_server, cal + "w.ics", ics("w"), Content_Type="text/vcard")
    assert wrong_type.status == 403
    assert error_condition(wrong_type) == f"{{{CAL}}}supported-calendar-data"
    assert live_server.request("DELETE", cal + "none.ics", None, {"If-Match": '"x"'}).status == 412
    assert live_server.request("DELETE", cal + "none.ics").status == 404


def _multiget_data(live_server, cal: str, name: str):
    body = (
        f'<C:calendar-multiget xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><C:calendar-data/>'
        f"</D:prop><D:href>{cal}{name}</D:href></C:calendar-multiget>"
    )
    return live_server.request("REPORT", cal, body, {"Depth": "1"})


def test_a_control_character_is_refused_and_one_stored_before_still_reads(live_server, cal) -> None:
    """XML cannot carry U+0001, and a stored object travels inside calendar-data: the PUT is
    refused; one stored before that rule is answered with U+FFFD in its place."""
    refused = put(live_server, cal + "ctl.ics", ics("ctl", extra="SUMMARY:a\x01b\r\n"))
    assert refused.status == 403
    assert error_condition(refused) == f"{{{CAL}}}valid-calendar-data"
    assert put(live_server, cal + "old.ics", ics("old", extra="SUMMARY:ab\r\n")).status == 201
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        session.execute(
            text("UPDATE calendar_objects SET data = replace(data, 'SUMMARY:ab', :bad)"),
            {"bad": "SUMMARY:a\x01b"},
        )
    answer = _multiget_data(live_server, cal, "old.ics")
    assert answer.status == 207
    data = etree.fromstring(answer.body).findtext(f".//{{{CAL}}}calendar-data")
    assert data is not None and "SUMMARY:a\ufffdb" in data


def test_get_returns_the_stored_bytes_and_etag(live_server, cal) -> None:
    body = ics("g", extra="SUMMARY:Exactly these bytes\r\n")
    etag = put(live_server, cal + "g.ics", body).headers["etag"]
    response = live_server.request("GET", cal + "g.ics")
    assert response.body == body.encode() and response.headers["etag"] == etag
    assert response.headers["content-type"].startswith("text/calendar")
    root = propfind(live_server, cal + "g.ics", "<D:getetag/><C:calendar-data/>")
    assert root.findtext(".//D:getetag", namespaces=NS) == etag
    assert root.findtext(".//C:calendar-data", namespaces=NS) == body
    not_modified = live_server.request("GET", cal + "g.ics", None, {"If-None-Match": etag})
    assert not_modified.status == 304


def sync(live_server, path: str, token: str = "", limit: int | None = None):
    limit_el = f"<D:limit><D:nresults>{limit}</D:nresults></D:limit>" if limit else ""
    body = (
        f'<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token>'
        f"<D:sync-level>1</D:sync-level>{limit_el}<D:prop><D:getetag/></D:prop>"
        "</D:sync-collection>"
    )
    return live_server.request("REPORT", path, body, {"Depth": "1"})


def _sync_result(response) -> tuple[dict[str, str], str]:
    root = etree.fromstring(response.body)
    statuses = {}
    for r in root.iterfind("D:response", NS):
        status = r.findtext("D:status", namespaces=NS) or r.findtext(".//D:status", namespaces=NS)
        statuses[r.findtext("D:href", namespaces=NS)] = status.split()[1]
    return statuses, root.findtext("D:sync-token", namespaces=NS)


def test_sync_collection_incremental_with_limit(live_server, cal) -> None:
    for i in range(5):
        put(live_server, cal + f"{i}.ics", ics(f"u{i}"))
    statuses, token = _sync_result(sync(live_server, cal))
    assert statuses == {cal + f"{i}.ics": "200" for i in range(5)}
    put(live_server, cal + "1.ics", ics("u1", start="20260106T100000Z"))
    live_server.request("DELETE", cal + "2.ics")
    for i in range(5, 9):
        put(live_server, cal + f"{i}.ics", ics(f"u{i}"))
    first, token2 = _sync_result(sync(live_server, cal, token, limit=3))
    assert first == {cal + "1.ics": "200", cal + "2.ics": "404", cal + "5.ics": "200", cal: "507"}
    second, token3 = _sync_result(sync(live_server, cal, token2, limit=3))
    assert second == {cal + "6.ics": "200", cal + "7.ics": "200", cal + "8.ics": "200"}
    last, _ = _sync_result(sync(live_server, cal, token3))
    assert last == {}
    invalid = sync(live_server, cal, "http://oxidav.org/ns/sync/calendar-999-x/1")
    assert invalid.status == 403
    assert error_condition(invalid) == "{DAV:}valid-sync-token"


def _etags(response) -> dict[str, str | None]:
    root = etree.fromstring(response.body)
    return {
        r.findtext("D:href", namespaces=NS): r.findtext(".//D:getetag", namespaces=NS)
        for r in root.iterfind("D:response", NS)
    }


def test_a_first_sync_lists_every_present_member_as_the_change_log_does(live_server, cal) -> None:
    """A first sync reads the members page by page (500 a time); with a limit it goes
    through the change log. Both answer the same members, etags and token."""
    count = 505
    for i in range(count):
        put(live_server, cal + f"m{i:03}.ics", ics(f"m{i}"))
    for i in (0, 250, 504):
        assert live_server.request("DELETE", cal + f"m{i:03}.ics").status == 204
    put(live_server, cal + "m001.ics", ics("m1", start="20260106T100000Z"))
    first = sync(live_server, cal)
    through_log = sync(live_server, cal, limit=1000)
    assert first.status == through_log.status == 207
    etags = _etags(first)
    assert etags == _etags(through_log)
    assert set(etags) == {cal + f"m{i:03}.ics" for i in range(count) if i not in (0, 250, 504)}
    assert all(etag and etag.startswith('"') for etag in etags.values())
    assert _sync_result(first)[1] == _sync_result(through_log)[1]
    assert _sync_result(sync(live_server, cal, _sync_result(first)[1]))[0] == {}


def test_a_sync_asking_only_getetag_answers_each_members_etag_header(live_server, cal) -> None:
    """Asked for getetag alone, a sync answers from the rows (no resource is built); asked
    for more, through each member's resource: both give the ETag header of GET."""
    for i in range(3):
        put(live_server, cal + f"e{i}.ics", ics(f"e{i}"))
    with_more = (
        '<D:sync-collection xmlns:D="DAV:"><D:sync-token/><D:sync-level>1</D:sync-level>'
        "<D:prop><D:getetag/><D:getcontenttype/></D:prop></D:sync-collection>"
    )
    alone = _etags(sync(live_server, cal))
    both = _etags(live_server.request("REPORT", cal, with_more, {"Depth": "1"}))
    headers = {
        cal + f"e{i}.ics": live_server.request("GET", cal + f"e{i}.ics").headers["etag"]
        for i in range(3)
    }
    assert alone == both == headers


def test_ctag_changes_with_content(live_server, cal) -> None:
    before = propfind(live_server, cal, "<CS:getctag/>").findtext(".//CS:getctag", namespaces=NS)
    put(live_server, cal + "c.ics", ics("c"))
    after = propfind(live_server, cal, "<CS:getctag/>").findtext(".//CS:getctag", namespaces=NS)
    assert before != after


def test_other_users_calendars_are_not_found(live_server, cal) -> None:
    put(live_server, cal + "p.ics", ics("p"))
    for method, path in [
        ("PROPFIND", cal),
        ("GET", cal + "p.ics"),
        ("PUT", cal + "q.ics"),
        ("DELETE", cal + "p.ics"),
        ("REPORT", cal),
        ("MKCALENDAR", HOME + "bobs/"),
    ]:
        body = ics("q") if method == "PUT" else None
        response = live_server.request(method, path, body, {"Depth": "0"}, user="bob")
        assert response.status == 404, (method, path, response.status)
    assert live_server.request("GET", cal + "p.ics").status == 200


def test_delete_calendar(live_server, cal) -> None:
    put(live_server, cal + "d.ics", ics("d"))
    assert live_server.request("DELETE", cal).status == 204
    assert live_server.request("GET", cal + "d.ics").status == 404
    assert live_server.request("PROPFIND", cal, None, {"Depth": "0"}).status == 404


def test_calendar_query_errors_are_preconditions(live_server, cal) -> None:
    body = (
        f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><D:getetag/></D:prop>'
        '<C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
        '<C:prop-filter name="SUMMARY"><C:text-match collation="i;klingon">x</C:text-match>'
        "</C:prop-filter></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"
    )
    response = live_server.request("REPORT", cal, body, {"Depth": "1"})
    assert response.status == 403
    assert error_condition(response) == f"{{{CAL}}}supported-collation"
    bad_range = body.replace(
        '<C:prop-filter name="SUMMARY"><C:text-match collation="i;klingon">x</C:text-match>'
        "</C:prop-filter>",
        '<C:time-range start="2026"/>',
    )
    response = live_server.request("REPORT", cal, bad_range, {"Depth": "1"})
    assert response.status == 403
    assert error_condition(response) == f"{{{CAL}}}valid-filter"


def test_query_timezone_applies_to_floating_times(live_server, cal) -> None:
    put(live_server, cal + "f.ics", ics("f", start="20260105T230000"))
    query = (
        f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><D:getetag/></D:prop>'
        '<C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
        '<C:time-range start="20260106T040000Z" end="20260106T050000Z"/>'
        "</C:comp-filter></C:comp-filter></C:filter>{tz}</C:calendar-query>"
    )
    plain = live_server.request("REPORT", cal, query.format(tz=""), {"Depth": "1"})
    assert b"f.ics" not in plain.body
    zoned = query.format(tz="<C:timezone-id>America/New_York</C:timezone-id>")
    assert b"f.ics" in live_server.request("REPORT", cal, zoned, {"Depth": "1"}).body


def test_calendar_query_limit_and_depth_infinity(live_server, cal) -> None:
    for i in range(4):
        put(live_server, cal + f"l{i}.ics", ics(f"l{i}"))
    body = (
        f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><D:getetag/></D:prop>'
        '<C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"/>'
        "</C:comp-filter></C:filter><D:limit><D:nresults>2</D:nresults></D:limit>"
        "</C:calendar-query>"
    )
    root = etree.fromstring(live_server.request("REPORT", cal, body, {"Depth": "1"}).body)
    statuses = [r.findtext(".//D:status", namespaces=NS) for r in root.iterfind("D:response", NS)]
    assert statuses.count("HTTP/1.1 200 OK") == 2
    assert statuses[-1] == "HTTP/1.1 507 Insufficient Storage"
    # Depth: infinity (and no Depth at all) is answered as Depth: 1.
    for headers in ({"Depth": "infinity"}, {}):
        response = live_server.request("PROPFIND", HOME, None, headers)
        assert response.status == 207
        hrefs = {h.text for h in etree.fromstring(response.body).iter("{DAV:}href")}
        assert cal in hrefs and cal + "l0.ics" not in hrefs


def test_move_and_copy_between_calendars(live_server, cal) -> None:
    put(live_server, cal + "m.ics", ics("m"))
    target = HOME + "personal/m2.ics"
    base = live_server.base_url
    moved = live_server.request("MOVE", cal + "m.ics", None, {"Destination": base + target})
    assert moved.status == 201, moved.text
    assert live_server.request("GET", cal + "m.ics").status == 404
    assert live_server.request("GET", target).status == 200
    copied = live_server.request("COPY", target, None, {"Destination": base + cal + "m.ics"})
    assert copied.status == 201
    conflict = live_server.request("COPY", target, None, {"Destination": base + target + "x"})
    assert conflict.status == 409
    assert error_condition(conflict) == f"{{{CAL}}}no-uid-conflict"
    not_mine = live_server.request(
        "MOVE", target, None, {"Destination": base + "/remote.php/dav/calendars/bob/personal/x.ics"}
    )
    assert not_mine.status in (403, 404)


def test_principal_property_search_finds_only_oneself(live_server) -> None:
    body = (
        f'<D:principal-property-search xmlns:D="DAV:" xmlns:C="{CAL}">'
        "<D:property-search><D:prop><D:displayname/></D:prop><D:match>ALI</D:match>"
        "</D:property-search><D:prop><D:displayname/><C:calendar-home-set/></D:prop>"
        "</D:principal-property-search>"
    )
    for path in ("/", "/remote.php/dav/principals/users/"):
        response = live_server.request("REPORT", path, body, {"Depth": "0"})
        assert response.status == 207, response.text
        root = etree.fromstring(response.body)
        hrefs = [r.findtext("D:href", namespaces=NS) for r in root.iterfind("D:response", NS)]
        assert hrefs == ["/remote.php/dav/principals/users/alice/"]
        assert root.findtext(".//C:calendar-home-set/D:href", namespaces=NS) == HOME
    nobody = body.replace("ALI", "bob")
    root = etree.fromstring(live_server.request("REPORT", "/", nobody, {"Depth": "0"}).body)
    assert root.findall("D:response", NS) == []
    everyone = (
        '<D:principal-property-search xmlns:D="DAV:"><D:prop><D:displayname/></D:prop>'
        "</D:principal-property-search>"
    )
    root = etree.fromstring(live_server.request("REPORT", "/", everyone, {"Depth": "0"}).body)
    assert len(root.findall("D:response", NS)) == 1
    props = live_server.request(
        "REPORT", "/", '<D:principal-search-property-set xmlns:D="DAV:"/>', {"Depth": "0"}
    )
    assert props.status == 200 and b"displayname" in props.body


def test_propname_lists_live_properties(live_server, cal) -> None:
    body = '<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>'
    response = live_server.request("PROPFIND", cal, body, {"Depth": "0"})
    assert response.status == 207
    root = etree.fromstring(response.body)
    names = {el.tag for el in root.iterfind(".//D:prop/*", NS)}
    assert {
        f"{{{CS}}}getctag",
        "{DAV:}sync-token",
        f"{{{CAL}}}supported-calendar-component-set",
    } <= names
    assert all(len(el) == 0 and not el.text for el in root.iterfind(".//D:prop/*", NS))
