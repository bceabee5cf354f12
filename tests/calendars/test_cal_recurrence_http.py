"""Recurrence under a budget over HTTP (issue 24, case 3), on SQLite and PostgreSQL: dense and
never-occurring rules refused at PUT, COUNT beyond the instance cap refused, a DTSTART in 1800
expanded correctly in 2026 within a small work budget, and reports over the caps answered 507
instead of working for minutes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from tests.support.live import LiveServer, in_process_server, make_settings

CAL = "urn:ietf:params:xml:ns:caldav"
PERSONAL = "/remote.php/dav/calendars/alice/personal/"
NS = {"D": "DAV:", "C": CAL}


def ics(uid: str, rule: str, start: str = "18000101T100000Z") -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:{start}\r\nDURATION:PT1H\r\n"
        f"RRULE:{rule}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def put(server: LiveServer, name: str, body: str):
    return server.request(
        "PUT", PERSONAL + name, body, {"Content-Type": "text/calendar; charset=utf-8"}
    )


def error_condition(response) -> str:
    root = etree.fromstring(response.body)
    assert root.tag == "{DAV:}error"
    return root[0].tag


def free_busy(server: LiveServer, start: str, end: str):
    body = (
        f'<C:free-busy-query xmlns:C="{CAL}"><C:time-range start="{start}" end="{end}"/>'
        "</C:free-busy-query>"
    )
    return server.request("REPORT", PERSONAL, body, {"Depth": "1"})


def query(server: LiveServer, start: str, end: str, expand: bool):
    data = f'<C:calendar-data><C:expand start="{start}" end="{end}"/></C:calendar-data>'
    body = (
        f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><D:getetag/>'
        f"{data if expand else ''}</D:prop>"
        '<C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
        f'<C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter>'
        "</C:filter></C:calendar-query>"
    )
    return server.request("REPORT", PERSONAL, body, {"Depth": "1"})


@pytest.fixture
def tight_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A server whose recurrence work budget is far below what walking from 1800 takes."""
    settings = make_settings(tmp_path / "data", db_url, caldav_max_recurrence_work=3000)
    with in_process_server(settings) as server:
        yield server


@pytest.fixture
def permissive_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A server that accepts FREQ=SECONDLY (the old default behaviour)."""
    settings = make_settings(tmp_path / "data", db_url, caldav_min_recurrence_interval=1)
    with in_process_server(settings) as server:
        yield server


@pytest.mark.parametrize("rule", ["FREQ=SECONDLY", "FREQ=MINUTELY;INTERVAL=5"])
def test_put_of_a_dense_recurrence_is_refused(live_server: LiveServer, rule: str) -> None:
    response = put(live_server, "dense.ics", ics("dense", rule))
    assert response.status == 403, response.text
    assert error_condition(response) == f"{{{CAL}}}valid-calendar-object-resource"
    assert live_server.request("GET", PERSONAL + "dense.ics").status == 404
    assert put(live_server, "hourly.ics", ics("hourly", "FREQ=HOURLY")).status == 201


def test_put_of_a_rule_that_never_occurs_is_refused(live_server: LiveServer) -> None:
    never = ics("never", "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", start="20260101T100000Z")
    response = put(live_server, "never.ics", never)
    assert response.status == 403, response.text
    assert error_condition(response) == f"{{{CAL}}}valid-calendar-object-resource"
    assert live_server.request("GET", PERSONAL + "never.ics").status == 404


def test_put_with_count_beyond_the_instance_cap_is_refused(live_server: LiveServer) -> None:
    response = put(live_server, "long.ics", ics("long", "FREQ=DAILY;COUNT=10001"))
    assert response.status == 403, response.text
    assert error_condition(response) == f"{{{CAL}}}max-instances"
    assert put(live_server, "ok.ics", ics("ok", "FREQ=DAILY;COUNT=10000")).status == 201


def test_dtstart_in_1800_is_expanded_in_2026_within_a_small_budget(
    tight_server: LiveServer,
) -> None:
    assert put(tight_server, "old.ics", ics("old", "FREQ=DAILY")).status == 201
    response = query(tight_server, "20260301T000000Z", "20260304T000000Z", expand=True)
    assert response.status == 207, response.text
    data = etree.fromstring(response.body).findtext(".//C:calendar-data", namespaces=NS)
    assert data is not None
    ids = [line for line in data.splitlines() if line.startswith("RECURRENCE-ID")]
    assert ids == [f"RECURRENCE-ID:202603{d:02d}T100000Z" for d in (1, 2, 3)]
    busy = free_busy(tight_server, "20260301T000000Z", "20260303T000000Z")
    assert busy.status == 200, busy.text
    assert (
        "FREEBUSY;FBTYPE=BUSY:20260301T100000Z/20260301T110000Z,"
        "20260302T100000Z/20260302T110000Z" in busy.text.replace("\r\n ", "")
    )


def test_reports_beyond_the_instance_cap_answer_507(permissive_server: LiveServer) -> None:
    assert put(permissive_server, "s.ics", ics("s", "FREQ=SECONDLY")).status == 201
    busy = free_busy(permissive_server, "20260301T000000Z", "20260303T000000Z")
    assert busy.status == 507, busy.text
    assert error_condition(busy) == "{DAV:}number-of-matches-within-limits"
    # The time-range test looks at every instance from a day before the range (floating
    # times): far beyond the cap, refused as a whole.
    plain = query(permissive_server, "20260301T000000Z", "20260303T000000Z", expand=False)
    assert plain.status == 507, plain.text
    assert error_condition(plain) == "{DAV:}number-of-matches-within-limits"
    # calendar-multiget asking for the expanded data: that property answers 507.
    multiget = (
        f'<C:calendar-multiget xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop><D:getetag/>'
        '<C:calendar-data><C:expand start="20260301T000000Z" end="20260303T000000Z"/>'
        f"</C:calendar-data></D:prop><D:href>{PERSONAL}s.ics</D:href></C:calendar-multiget>"
    )
    expanded = permissive_server.request("REPORT", PERSONAL, multiget, {"Depth": "1"})
    assert expanded.status == 207, expanded.text
    statuses = etree.fromstring(expanded.body).xpath("//D:propstat/D:status/text()", namespaces=NS)
    assert any(status.startswith("HTTP/1.1 507") for status in statuses)
    assert b"BEGIN:VEVENT" not in expanded.body
