"""Recurrence sets (oxidav.calendars.recurrence): instances, overrides, RANGE=THISANDFUTURE,
RDATE periods, and the caches shared between queries."""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, date, datetime, timedelta

import icalendar

from oxidav.calendars.evaluate import FilterEvaluator
from oxidav.calendars.recurrence import instances, natural_end, single_instance
from tests.support.calendar_samples import event, make_filter, make_ics


def parse(*components: str) -> icalendar.Calendar:
    return icalendar.Calendar.from_ical(make_ics(*components))


def starts(calendar, window=(None, None)) -> list[datetime | date]:
    return [i.start for i in instances(calendar.walk("VEVENT"), window)]


def dt(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_rdate_periods_and_exdates() -> None:
    cal = parse(
        event(
            "p",
            "DTSTART:20260105T100000Z",
            "DURATION:PT1H",
            "RDATE;VALUE=PERIOD:20260110T080000Z/PT3H",
            "RDATE:20260111T100000Z",
            "RRULE:FREQ=DAILY;COUNT=3",
            "EXDATE:20260106T100000Z",
        )
    )
    found = list(instances(cal.walk("VEVENT"), (None, None)))
    assert [(i.start, i.end) for i in found] == [
        (dt(2026, 1, 5, 10), dt(2026, 1, 5, 11)),
        (dt(2026, 1, 7, 10), dt(2026, 1, 7, 11)),
        (dt(2026, 1, 10, 8), dt(2026, 1, 10, 11)),  # the PERIOD sets its own end
        (dt(2026, 1, 11, 10), dt(2026, 1, 11, 11)),
    ]
    assert [i.recurrence_id for i in found] == [i.start for i in found]


def test_this_and_future_override_shifts_later_instances() -> None:
    cal = parse(
        event("t", "DTSTART:20260105T100000Z", "DURATION:PT1H", "RRULE:FREQ=DAILY;COUNT=5"),
        event(
            "t",
            "RECURRENCE-ID;RANGE=THISANDFUTURE:20260107T100000Z",
            "DTSTART:20260107T120000Z",
            "DURATION:PT1H",
            "SUMMARY:later",
        ),
    )
    found = list(instances(cal.walk("VEVENT"), (None, None)))
    assert [i.start for i in found] == [
        dt(2026, 1, 5, 10),
        dt(2026, 1, 6, 10),
        dt(2026, 1, 7, 12),
        dt(2026, 1, 8, 12),
        dt(2026, 1, 9, 12),
    ]
    assert [i.recurrence_id for i in found][2:] == [
        dt(2026, 1, 7, 10),
        dt(2026, 1, 8, 10),
        dt(2026, 1, 9, 10),
    ]
    flt = make_filter(
        '<C:comp-filter name="VEVENT"><C:time-range start="20260108T113000Z" '
        'end="20260108T123000Z"/><C:prop-filter name="SUMMARY"><C:text-match>later'
        "</C:text-match></C:prop-filter></C:comp-filter>"
    )
    assert FilterEvaluator().matches(cal, flt)


def test_override_without_master_is_its_own_instance() -> None:
    cal = parse(event("o", "RECURRENCE-ID:20260107T100000Z", "DTSTART:20260107T150000Z"))
    (only,) = list(instances(cal.walk("VEVENT"), (None, None)))
    assert only.start == dt(2026, 1, 7, 15) and only.recurrence_id == dt(2026, 1, 7, 10)


def test_infinite_rule_is_lazy() -> None:
    cal = parse(event("i", "DTSTART:20000101T000000Z", "RRULE:FREQ=HOURLY"))
    first = list(itertools.islice(instances(cal.walk("VEVENT"), (dt(2026, 1, 1), None)), 3))
    assert [i.start for i in first] == [dt(2026, 1, 1), dt(2026, 1, 1, 1), dt(2026, 1, 1, 2)]


def test_natural_end() -> None:
    timed = parse(event("a", "DTSTART:20260105T100000Z", "DURATION:PT2H")).walk("VEVENT")[0]
    assert natural_end(timed) == dt(2026, 1, 5, 12)
    day = parse(event("b", "DTSTART;VALUE=DATE:20260105")).walk("VEVENT")[0]
    assert natural_end(day) == date(2026, 1, 6)
    todo = icalendar.Calendar.from_ical(
        make_ics(
            "BEGIN:VTODO\nUID:t\nDTSTAMP:20260101T000000Z\nDTSTART:20260105T100000Z\nEND:VTODO"
        )
    ).walk("VTODO")[0]
    assert natural_end(todo) is None
    assert single_instance(todo).start == dt(2026, 1, 5, 10)


def test_cached_series_answer_different_windows_and_threads() -> None:
    cal = parse(event("c", "DTSTART:20260105T100000Z", "DURATION:PT1H", "RRULE:FREQ=WEEKLY"))
    events = cal.walk("VEVENT")
    week = timedelta(weeks=1)
    assert starts(cal, (dt(2026, 2, 1), dt(2026, 2, 10)))[:2] == [
        dt(2026, 2, 2, 10),
        dt(2026, 2, 9, 10),
    ]
    assert starts(cal, (dt(2026, 1, 1), dt(2026, 1, 13)))[:2] == [
        dt(2026, 1, 5, 10),
        dt(2026, 1, 12, 10),
    ]
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        try:
            for k in range(30):
                begin = dt(2026, 1, 5) + week * ((k + offset) % 40)
                got = [i.start for i in instances(events, (begin, begin + week))]
                assert got[0] == begin + timedelta(hours=10)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
