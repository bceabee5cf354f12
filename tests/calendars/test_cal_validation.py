"""Validation of calendar object resources (RFC 4791 §4.1, §5.3.2.1) and their index bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import icalendar
import pytest

from oxidav.calendars import errors
from oxidav.calendars.index import time_bounds
from oxidav.calendars.validation import validate_object
from tests.support.calendar_samples import event, make_ics

ALL = ("VEVENT", "VTODO", "VJOURNAL")


def validate(text: str, allowed=ALL, max_size: int = 100_000):
    return validate_object(text.encode(), allowed_components=allowed, max_size=max_size)


def test_valid_event() -> None:
    valid = validate(make_ics(event("u1", "DTSTART:20260105T100000Z", "DTEND:20260105T110000Z")))
    assert valid.component_type == "VEVENT"
    assert valid.uid == "u1"
    assert valid.first_start == datetime(2026, 1, 5, 10, tzinfo=UTC)
    assert valid.last_end == datetime(2026, 1, 5, 11, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not a calendar", errors.InvalidCalendarData),
        ("BEGIN:VCALENDAR\r\nEND:VCARD\r\n", errors.InvalidCalendarData),
        (make_ics(event("u", "DTSTART:2026xx")), errors.InvalidCalendarData),
        (make_ics(event("u", "SUMMARY:no start")), errors.InvalidCalendarData),
        (
            make_ics(event("u", "DTSTART:20260105T100000Z", "DTEND:20260105T090000Z")),
            errors.InvalidCalendarData,
        ),
        (
            make_ics(
                event("u", "DTSTART:20260105T100000Z", "DTEND:20260105T110000Z", "DURATION:PT1H")
            ),
            errors.InvalidCalendarData,
        ),
        (
            make_ics(event("u", "DTSTART;VALUE=DATE:20260105", "DTEND:20260106T100000Z")),
            errors.InvalidCalendarData,
        ),
        (
            make_ics(event("u", "DTSTART:20260105T100000Z"), extra="METHOD:REQUEST\n"),
            errors.InvalidCalendarObject,
        ),
        (make_ics(), errors.InvalidCalendarObject),
        (
            make_ics(
                event("a", "DTSTART:20260105T100000Z"), event("b", "DTSTART:20260105T100000Z")
            ),
            errors.InvalidCalendarObject,
        ),
        (
            make_ics(
                event("a", "DTSTART:20260105T100000Z"),
                "BEGIN:VTODO\nUID:a\nDTSTAMP:20260101T000000Z\nEND:VTODO",
            ),
            errors.InvalidCalendarObject,
        ),
        (
            make_ics(
                "BEGIN:VEVENT\nDTSTAMP:20260101T000000Z\nDTSTART:20260105T100000Z\nEND:VEVENT"
            ),
            errors.InvalidCalendarObject,
        ),
        (
            make_ics(
                event("a", "DTSTART:20260105T100000Z", "RRULE:FREQ=DAILY"),
                event("a", "RECURRENCE-ID:20260106T100000Z", "DTSTART:20260106T120000Z"),
                event("a", "RECURRENCE-ID:20260106T100000Z", "DTSTART:20260106T130000Z"),
            ),
            errors.InvalidCalendarObject,
        ),
        (make_ics(event("u", "DTSTART:17000105T100000Z")), errors.DateTooEarly),
        (make_ics(event("u", "DTSTART:30010105T100000Z")), errors.DateTooLate),
        (
            make_ics(event("u", "DTSTART:20260105T100000Z")).replace("VERSION:2.0", "VERSION:1.0"),
            errors.InvalidCalendarData,
        ),
    ],
)
def test_invalid_objects_name_their_precondition(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        validate(text)


def test_not_utf8() -> None:
    with pytest.raises(errors.InvalidCalendarData):
        validate_object(b"\xff\xfe", allowed_components=ALL, max_size=100)


def test_size_limit() -> None:
    text = make_ics(event("u", "DTSTART:20260105T100000Z", "DESCRIPTION:" + "x" * 500))
    with pytest.raises(errors.ResourceTooLarge) as info:
        validate(text, max_size=300)
    assert info.value.condition.endswith("}max-resource-size")


def test_component_must_be_supported_by_the_calendar() -> None:
    todo = make_ics("BEGIN:VTODO\nUID:t\nDTSTAMP:20260101T000000Z\nEND:VTODO")
    with pytest.raises(errors.UnsupportedComponent) as info:
        validate(todo, allowed=("VEVENT",))
    assert info.value.condition.endswith("}supported-calendar-component")
    assert validate(todo).component_type == "VTODO"


def test_vtimezone_does_not_count_as_a_component() -> None:
    vtimezone = (
        "BEGIN:VTIMEZONE\nTZID:Europe/Berlin\nBEGIN:STANDARD\nDTSTART:19701025T030000\n"
        "TZOFFSETFROM:+0200\nTZOFFSETTO:+0100\nEND:STANDARD\nEND:VTIMEZONE\n"
    )
    text = make_ics(event("u", "DTSTART;TZID=Europe/Berlin:20260105T100000"), extra=vtimezone)
    valid = validate(text)
    assert valid.first_start == datetime(2026, 1, 5, 9, tzinfo=UTC)


def test_uid_conflict_error_is_409_with_href() -> None:
    error = errors.UidConflict("taken", href="other.ics")
    assert error.status == 409 and error.href == "other.ics"
    assert error.condition == "{urn:ietf:params:xml:ns:caldav}no-uid-conflict"


# -- index bounds -------------------------------------------------------------------------------


def bounds(*components: str):
    calendar = icalendar.Calendar.from_ical(make_ics(*components))
    kinds = {c.name for c in calendar.subcomponents if c.name != "VTIMEZONE"}
    return time_bounds(calendar, kinds.pop())


def dt(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


DAY = timedelta(days=1)


def test_bounds_of_infinite_rule_are_open_ended() -> None:
    assert bounds(event("u", "DTSTART:20260105T100000Z", "RRULE:FREQ=DAILY")) == (
        dt(2026, 1, 5, 10),
        None,
    )


def test_bounds_of_count_rule_reach_the_last_instance() -> None:
    first, last = bounds(
        event("u", "DTSTART:20260105T100000Z", "DURATION:PT1H", "RRULE:FREQ=DAILY;COUNT=3")
    )
    assert first == dt(2026, 1, 5, 10)
    assert last is not None and dt(2026, 1, 7, 11) <= last <= dt(2026, 1, 7, 11) + 2 * DAY


def test_bounds_of_until_rule_and_rdate_and_override() -> None:
    first, last = bounds(
        event(
            "u",
            "DTSTART:20260105T100000Z",
            "DURATION:PT1H",
            "RRULE:FREQ=WEEKLY;UNTIL=20260301T000000Z",
            "RDATE:20260401T100000Z",
        ),
        event("u", "RECURRENCE-ID:20260112T100000Z", "DTSTART:20260101T080000Z", "DURATION:PT1H"),
    )
    assert first == dt(2026, 1, 1, 8)
    assert last is not None and last >= dt(2026, 4, 1, 11)


def test_bounds_of_floating_and_all_day_values_are_widened() -> None:
    first, last = bounds(event("u", "DTSTART;VALUE=DATE:20260105"))
    assert first == dt(2026, 1, 5) - DAY and last == dt(2026, 1, 6) + DAY
    first, last = bounds(event("u", "DTSTART:20260105T100000", "DTEND:20260105T110000"))
    assert first == dt(2026, 1, 5, 10) - DAY and last == dt(2026, 1, 5, 11) + DAY


def test_bounds_of_todos() -> None:
    todo = "BEGIN:VTODO\nUID:t\nDTSTAMP:20260101T000000Z\n{}\nEND:VTODO"
    assert bounds(todo.format("SUMMARY:x")) == (None, None)
    assert bounds(todo.format("DUE:20260105T100000Z")) == (dt(2026, 1, 5, 10), dt(2026, 1, 5, 10))
    assert bounds(todo.format("CREATED:20260105T100000Z")) == (dt(2026, 1, 5, 10), None)
    assert bounds(todo.format("CREATED:20260101T000000Z\nCOMPLETED:20260105T100000Z")) == (
        dt(2026, 1, 1),
        dt(2026, 1, 5, 10),
    )
