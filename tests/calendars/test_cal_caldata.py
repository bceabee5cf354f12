"""calendar-data in reports (RFC 4791 §9.6): partial data, expand, limit-recurrence-set,
limit-freebusy-set; and the free-busy-query report (§7.10)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import icalendar
import pytest
from lxml import etree

from oxidav.calendars.caldata import parse_calendar_data, render_calendar_data
from oxidav.calendars.errors import InvalidFilter, UnsupportedCalendarData
from oxidav.calendars.filters import TimeRange
from oxidav.calendars.freebusy import free_busy_report, merge
from tests.support.calendar_samples import CAL_NS, event, make_ics

RECURRING = make_ics(
    event(
        "r1",
        "DTSTART;TZID=Europe/Berlin:20260105T100000",
        "DTEND;TZID=Europe/Berlin:20260105T110000",
        "RRULE:FREQ=DAILY;COUNT=5",
        "EXDATE;TZID=Europe/Berlin:20260107T100000",
        "SUMMARY:Daily",
        "BEGIN:VALARM\nACTION:DISPLAY\nDESCRIPTION:x\nTRIGGER:-PT5M\nEND:VALARM",
    ),
    event(
        "r1",
        "RECURRENCE-ID;TZID=Europe/Berlin:20260108T100000",
        "DTSTART;TZID=Europe/Berlin:20260108T150000",
        "DTEND;TZID=Europe/Berlin:20260108T160000",
        "SUMMARY:Later",
    ),
    extra=(
        "BEGIN:VTIMEZONE\nTZID:Europe/Berlin\nBEGIN:STANDARD\nDTSTART:19701025T030000\n"
        "TZOFFSETFROM:+0200\nTZOFFSETTO:+0100\nEND:STANDARD\nEND:VTIMEZONE\n"
    ),
)


def request(inner: str, attrs: str = ""):
    xml = f'<C:calendar-data xmlns:C="{CAL_NS}"{attrs}>{inner}</C:calendar-data>'
    return parse_calendar_data(etree.fromstring(xml))


def render(text: str, inner: str, floating=UTC) -> icalendar.Calendar:
    out = render_calendar_data(text, None, request(inner), floating)
    return icalendar.Calendar.from_ical(out)


def test_plain_request_returns_the_stored_bytes() -> None:
    assert request("").is_plain
    assert render_calendar_data(RECURRING, None, request("")) == RECURRING


def test_unsupported_media_type() -> None:
    with pytest.raises(UnsupportedCalendarData):
        request("", ' content-type="application/calendar+json"')
    with pytest.raises(UnsupportedCalendarData):
        request("", ' version="1.0"')


def test_expand_needs_both_bounds_and_excludes_limit() -> None:
    with pytest.raises(InvalidFilter):
        request('<C:expand start="20260101T000000Z"/>')
    with pytest.raises(InvalidFilter):
        request(
            '<C:expand start="20260101T000000Z" end="20260201T000000Z"/>'
            '<C:limit-recurrence-set start="20260101T000000Z" end="20260201T000000Z"/>'
        )


def test_expand_returns_instances_in_utc_with_recurrence_ids() -> None:
    out = render(RECURRING, '<C:expand start="20260106T000000Z" end="20260109T000000Z"/>')
    events = out.walk("VEVENT")
    assert not out.walk("VTIMEZONE")
    starts = [e["DTSTART"].dt for e in events]
    assert starts == [
        datetime(2026, 1, 6, 9, tzinfo=UTC),
        datetime(2026, 1, 8, 14, tzinfo=UTC),  # the override; the 7th is an EXDATE
    ]
    assert [e["RECURRENCE-ID"].dt for e in events] == [
        datetime(2026, 1, 6, 9, tzinfo=UTC),
        datetime(2026, 1, 8, 9, tzinfo=UTC),
    ]
    assert [str(e["SUMMARY"]) for e in events] == ["Daily", "Later"]
    assert events[0]["DTEND"].dt == datetime(2026, 1, 6, 10, tzinfo=UTC)
    for e in events:
        assert "RRULE" not in e and "EXDATE" not in e and "RDATE" not in e
        assert "TZID" not in e["DTSTART"].params
    assert events[0].walk("VALARM"), "alarms stay with their instance"
    text = render_calendar_data(
        RECURRING, None, request('<C:expand start="20260106T000000Z" end="20260107T000000Z"/>')
    )
    assert "DTSTART:20260106T090000Z" in text


def test_expand_of_a_one_second_window() -> None:
    out = render(RECURRING, '<C:expand start="20260109T093000Z" end="20260109T093001Z"/>')
    assert len(out.walk("VEVENT")) == 1


def test_expand_of_all_day_and_floating_events() -> None:
    text = make_ics(event("d", "DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=WEEKLY;COUNT=3"))
    out = render(text, '<C:expand start="20260110T000000Z" end="20260201T000000Z"/>')
    assert [e["DTSTART"].dt.isoformat() for e in out.walk("VEVENT")] == [
        "2026-01-12",
        "2026-01-19",
    ]
    assert [e["RECURRENCE-ID"].dt.isoformat() for e in out.walk("VEVENT")] == [
        "2026-01-12",
        "2026-01-19",
    ]
    floating = make_ics(event("f", "DTSTART:20260105T230000", "RRULE:FREQ=DAILY;COUNT=3"))
    ny = ZoneInfo("America/New_York")
    out = render(floating, '<C:expand start="20260106T000000Z" end="20260106T060000Z"/>', ny)
    (instance,) = out.walk("VEVENT")
    assert instance["DTSTART"].dt == datetime(2026, 1, 5, 23)  # floating stays floating


def test_limit_recurrence_set_keeps_master_and_overrides_in_range() -> None:
    inner = '<C:limit-recurrence-set start="20260105T000000Z" end="20260106T000000Z"/>'
    out = render(RECURRING, inner)
    assert [("RECURRENCE-ID" in e) for e in out.walk("VEVENT")] == [False]
    assert out.walk("VTIMEZONE")
    inner = '<C:limit-recurrence-set start="20260108T000000Z" end="20260109T000000Z"/>'
    assert len(render(RECURRING, inner).walk("VEVENT")) == 2


def test_partial_calendar_data() -> None:
    inner = (
        '<C:comp name="VCALENDAR"><C:prop name="VERSION"/>'
        '<C:comp name="VEVENT"><C:prop name="SUMMARY"/><C:prop name="UID"/>'
        '<C:prop name="DTSTART" novalue="yes"/></C:comp></C:comp>'
    )
    out = render(RECURRING, inner)
    assert list(out.keys()) == ["VERSION"]
    assert not out.walk("VTIMEZONE")
    for e in out.walk("VEVENT"):
        assert set(e.keys()) == {"SUMMARY", "UID", "DTSTART"}
        assert not e.walk("VALARM")
    text = render_calendar_data(RECURRING, None, request(inner))
    assert "DTSTART;TZID=Europe/Berlin:\r\n" in text


def test_partial_allprop_allcomp() -> None:
    inner = (
        '<C:comp name="VCALENDAR"><C:allprop/>'
        '<C:comp name="VEVENT"><C:allprop/><C:allcomp/></C:comp></C:comp>'
    )
    out = render(RECURRING, inner)
    assert "PRODID" in out
    assert out.walk("VEVENT")[0].walk("VALARM")
    assert not out.walk("VTIMEZONE")


def test_expand_then_select() -> None:
    inner = (
        '<C:comp name="VCALENDAR"><C:comp name="VEVENT"><C:prop name="DTSTART"/></C:comp></C:comp>'
        '<C:expand start="20260105T000000Z" end="20260106T000000Z"/>'
    )
    out = render(RECURRING, inner)
    (only,) = out.walk("VEVENT")
    assert list(only.keys()) == ["DTSTART"]


def test_limit_freebusy_set() -> None:
    text = make_ics(
        "BEGIN:VFREEBUSY\nUID:f\nDTSTAMP:20260101T000000Z\n"
        "FREEBUSY:20260105T100000Z/PT1H,20260107T100000Z/PT1H\n"
        "FREEBUSY;FBTYPE=BUSY-TENTATIVE:20260106T100000Z/PT1H\nEND:VFREEBUSY"
    )
    out = render(text, '<C:limit-freebusy-set start="20260106T000000Z" end="20260108T000000Z"/>')
    fb = out.walk("VFREEBUSY")[0].get("FREEBUSY")
    props = fb if isinstance(fb, list) else [fb]
    starts = sorted(p.dt[0] for p in props)
    assert starts == [datetime(2026, 1, 6, 10, tzinfo=UTC), datetime(2026, 1, 7, 10, tzinfo=UTC)]


# -- free-busy -----------------------------------------------------------------------------------


def dt(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_merge() -> None:
    assert merge(
        [(dt(2026, 1, 1, 3), dt(2026, 1, 1, 4)), (dt(2026, 1, 1, 1), dt(2026, 1, 1, 3))]
    ) == [(dt(2026, 1, 1, 1), dt(2026, 1, 1, 4))]


def test_free_busy_report() -> None:
    objects = [
        make_ics(event("a", "DTSTART:20260105T090000Z", "DTEND:20260105T100000Z")),
        make_ics(event("b", "DTSTART:20260105T093000Z", "DTEND:20260105T110000Z")),
        make_ics(event("c", "DTSTART:20260105T120000Z", "DURATION:PT1H", "TRANSP:TRANSPARENT")),
        make_ics(event("d", "DTSTART:20260105T130000Z", "DURATION:PT1H", "STATUS:CANCELLED")),
        make_ics(event("e", "DTSTART:20260105T140000Z", "DURATION:PT1H", "STATUS:TENTATIVE")),
        make_ics(event("f", "DTSTART:20260104T230000Z", "DURATION:PT2H", "RRULE:FREQ=DAILY")),
        make_ics(event("g", "DTSTART:20260105T160000Z")),  # zero duration: no busy time
    ]
    rng = TimeRange(dt(2026, 1, 5), dt(2026, 1, 6))
    text = free_busy_report(
        [icalendar.Calendar.from_ical(o) for o in objects], rng, now=dt(2026, 1, 1)
    )
    fb = icalendar.Calendar.from_ical(text).walk("VFREEBUSY")
    assert len(fb) == 1
    assert fb[0]["DTSTART"].dt == dt(2026, 1, 5) and fb[0]["DTEND"].dt == dt(2026, 1, 6)
    lines = [
        line for line in text.replace("\r\n ", "").split("\r\n") if line.startswith("FREEBUSY")
    ]
    assert lines == [
        "FREEBUSY;FBTYPE=BUSY:20260105T000000Z/20260105T010000Z,"
        "20260105T090000Z/20260105T110000Z,20260105T230000Z/20260106T000000Z",
        "FREEBUSY;FBTYPE=BUSY-TENTATIVE:20260105T140000Z/20260105T150000Z",
    ]
