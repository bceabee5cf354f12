"""Acceptance: python-caldav against a live oxidav (SQLite and PostgreSQL).

Discovery from the bare server URL, MKCALENDAR, 200 events (recurring with overrides and
EXDATEs, all-day, several time zones) and 20 tasks; a time-range search with expansion must
return exactly the occurrences computed independently (``cal_dataset``), both with the
client's expansion and with the server's (CALDAV:expand); then fetch by UID, an update with
If-Match, a delete, and sync-collection returning exactly the changes since a token.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import caldav
import pytest
from caldav.lib import error
from lxml import etree

from tests.support.cal_dataset import (
    build_events,
    expected_instances,
    expected_objects,
    instance_key,
    todo_ics,
)

CAL = "urn:ietf:params:xml:ns:caldav"
START = datetime(2026, 3, 1, tzinfo=UTC)
END = datetime(2026, 4, 15, tzinfo=UTC)


def _key(component) -> tuple[str, str]:
    start = component["DTSTART"].dt
    return str(component["UID"]), instance_key(
        start if isinstance(start, datetime) else date(start.year, start.month, start.day)
    )


@pytest.fixture
def client(live_server):
    with caldav.DAVClient(live_server.base_url + "/", username="alice", password="secret") as c:
        yield c


def test_python_caldav_end_to_end(live_server, client) -> None:
    principal = client.principal()
    assert principal.url.path == "/remote.php/dav/principals/users/alice/"
    assert [c.url.path for c in principal.calendars()] == [
        "/remote.php/dav/calendars/alice/personal/"
    ]
    calendar = principal.make_calendar(name="Acceptance", cal_id="acceptance")
    assert calendar.url.path == "/remote.php/dav/calendars/alice/acceptance/"
    assert calendar.get_display_name() == "Acceptance"

    events = build_events()
    for spec in events:
        calendar.save_event(spec.ics())
    for i in range(20):
        calendar.save_todo(todo_ics(i))
    assert len(calendar.events()) == 200
    assert len(calendar.todos()) == 20

    # Client-side expansion of what the server's time-range query returns.
    found = calendar.search(start=START, end=END, event=True, expand=True)
    got = {_key(obj.icalendar_component) for obj in found}
    assert got == expected_instances(events, START, END)
    # Server-side expansion (CALDAV:expand).
    found = calendar.search(start=START, end=END, event=True, expand=True, server_expand=True)
    got = {_key(obj.icalendar_component) for obj in found}
    assert got == expected_instances(events, START, END)

    todos = calendar.search(todo=True, include_completed=True)
    assert {str(t.icalendar_component["UID"]) for t in todos} == {f"todo-{i}" for i in range(20)}

    # Fetch by UID, update with If-Match, refuse a stale ETag.
    obj = calendar.event_by_uid("daily-3")
    assert "RRULE" in obj.data
    response = client.request(str(obj.url), "HEAD")
    etag = response.headers["ETag"]
    token = calendar.objects_by_sync_token(disable_fallback=True).sync_token
    new_data = obj.data.replace("SUMMARY:Daily 3\n", "SUMMARY:Daily 3 renamed\n").replace(
        "SUMMARY:Daily 3\r\n", "SUMMARY:Daily 3 renamed\r\n"
    )
    assert "renamed" in new_data
    ok = client.put(str(obj.url), new_data, {"Content-Type": "text/calendar", "If-Match": etag})
    assert ok.status == 204
    stale = client.put(str(obj.url), new_data, {"Content-Type": "text/calendar", "If-Match": etag})
    assert stale.status == 412
    assert "Daily 3 renamed" in calendar.event_by_uid("daily-3").data

    # Delete one, add one.
    gone = calendar.event_by_uid("single-5")
    gone_url = gone.url.canonical()
    gone.delete()
    with pytest.raises(error.NotFoundError):
        calendar.event_by_uid("single-5")
    added = calendar.save_event(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:late\r\n"
        "DTSTAMP:20260101T000000Z\r\nDTSTART:20260310T100000Z\r\nDTEND:20260310T110000Z\r\n"
        "SUMMARY:Late\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    changes = calendar.objects_by_sync_token(sync_token=token, disable_fallback=True)
    changed = {o.url.canonical() for o in changes}
    assert changed == {obj.url.canonical(), added.url.canonical(), gone_url}
    assert changes.deleted_urls == {gone_url}
    again = calendar.objects_by_sync_token(sync_token=changes.sync_token, disable_fallback=True)
    assert list(again) == []


def _report(live_server, path: str, body: str, depth: str = "1"):
    return live_server.request(
        "REPORT", path, body, {"Depth": depth, "Content-Type": "application/xml"}
    )


def test_raw_reports(live_server, client) -> None:
    calendar = client.principal().make_calendar(name="Raw", cal_id="raw")
    events = build_events()
    for spec in events:
        calendar.save_event(spec.ics())
    path = "/remote.php/dav/calendars/alice/raw/"
    query = f"""<?xml version="1.0"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}">
  <D:prop><D:getetag/></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">
    <C:time-range start="20260301T000000Z" end="20260415T000000Z"/>
  </C:comp-filter></C:comp-filter></C:filter>
</C:calendar-query>"""
    response = _report(live_server, path, query)
    assert response.status == 207
    tree = etree.fromstring(response.body)
    hrefs = {h.text.rsplit("/", 1)[1] for h in tree.iter("{DAV:}href")}
    uid_of = {f"{s.uid}.ics": s.uid for s in events}
    assert {uid_of.get(h, h) for h in hrefs} == expected_objects(events, START, END)
    etags = [e.text for e in tree.iter("{DAV:}getetag")]
    assert all(e.startswith('"') and e.endswith('"') for e in etags)

    expand = f"""<?xml version="1.0"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}">
  <D:prop><C:calendar-data>
    <C:expand start="20260301T000000Z" end="20260415T000000Z"/>
  </C:calendar-data></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">
    <C:time-range start="20260301T000000Z" end="20260415T000000Z"/>
  </C:comp-filter></C:comp-filter></C:filter>
</C:calendar-query>"""
    import icalendar

    tree = etree.fromstring(_report(live_server, path, expand).body)
    instances = set()
    for data in tree.iter(f"{{{CAL}}}calendar-data"):
        cal = icalendar.Calendar.from_ical(data.text)
        assert not cal.walk("VTIMEZONE")
        for component in cal.walk("VEVENT"):
            assert "RRULE" not in component
            instances.add(_key(component))
    assert instances == expected_instances(events, START, END)

    # Partial data and multiget with a missing href.
    multiget = f"""<?xml version="1.0"?>
<C:calendar-multiget xmlns:D="DAV:" xmlns:C="{CAL}">
  <D:prop><D:getetag/><C:calendar-data><C:comp name="VCALENDAR"><C:comp name="VEVENT">
    <C:prop name="SUMMARY"/></C:comp></C:comp></C:calendar-data></D:prop>
  <D:href>{path}single-1.ics</D:href>
  <D:href>{path}nope.ics</D:href>
</C:calendar-multiget>"""
    tree = etree.fromstring(_report(live_server, path, multiget).body)
    responses = tree.findall("{DAV:}response")
    assert len(responses) == 2
    data = tree.find(f".//{{{CAL}}}calendar-data").text
    assert "SUMMARY:Single 1" in data and "DTSTART" not in data
    assert responses[1].findtext("{DAV:}status") == "HTTP/1.1 404 Not Found"

    # free-busy-query answers a VFREEBUSY.
    freebusy = f"""<?xml version="1.0"?>
<C:free-busy-query xmlns:C="{CAL}">
  <C:time-range start="20260302T000000Z" end="20260303T000000Z"/>
</C:free-busy-query>"""
    response = _report(live_server, path, freebusy)
    assert response.status == 200 and response.headers["content-type"].startswith("text/calendar")
    assert "BEGIN:VFREEBUSY" in response.text and "FREEBUSY" in response.text
