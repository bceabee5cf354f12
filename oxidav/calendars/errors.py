"""Typed errors of the calendars room; each names the RFC 4791 precondition it violates.

A provider turns a ``CalendarError`` into an HTTP response whose body is the precondition
element (RFC 4791 §1.3, RFC 4918 §16): ``status`` is the HTTP status, ``condition`` the Clark
name of the element, ``href`` (for ``no-uid-conflict``) the resource already using the UID.
"""

from __future__ import annotations

CALDAV_NS = "urn:ietf:params:xml:ns:caldav"


def caldav(name: str) -> str:
    """The Clark name of a CALDAV: element."""
    return f"{{{CALDAV_NS}}}{name}"


class CalendarError(Exception):
    """Base class: a request the calendars room refuses, with the precondition it failed."""

    status = 403
    condition = caldav("valid-calendar-data")

    def __init__(self, message: str, *, href: str | None = None) -> None:
        super().__init__(message)
        self.href = href


class UnsupportedCalendarData(CalendarError):
    """CALDAV:supported-calendar-data (§5.3.2.1): not text/calendar 2.0."""

    condition = caldav("supported-calendar-data")


class InvalidCalendarData(CalendarError):
    """CALDAV:valid-calendar-data (§5.3.2.1): not parseable iCalendar."""

    condition = caldav("valid-calendar-data")


class InvalidCalendarObject(CalendarError):
    """CALDAV:valid-calendar-object-resource (§4.1): more than one UID or component type,
    a METHOD property, no component at all."""

    condition = caldav("valid-calendar-object-resource")


class UnsupportedComponent(CalendarError):
    """CALDAV:supported-calendar-component (§5.3.2.1): the calendar does not accept the
    object's component type."""

    condition = caldav("supported-calendar-component")


class ResourceTooLarge(CalendarError):
    """CALDAV:max-resource-size (§5.2.5)."""

    condition = caldav("max-resource-size")


class DateTooEarly(CalendarError):
    """CALDAV:min-date-time (§5.2.6)."""

    condition = caldav("min-date-time")


class DateTooLate(CalendarError):
    """CALDAV:max-date-time (§5.2.7)."""

    condition = caldav("max-date-time")


class UidConflict(CalendarError):
    """CALDAV:no-uid-conflict (§5.3.2.1): the UID is used by another resource of the
    calendar (``href`` names it), or an overwrite changes the resource's UID."""

    status = 409
    condition = caldav("no-uid-conflict")


class InvalidFilter(CalendarError):
    """CALDAV:valid-filter (§7.8): the calendar-query filter is malformed."""

    condition = caldav("valid-filter")


class UnsupportedFilter(CalendarError):
    """CALDAV:supported-filter (§7.8): a component, property or parameter the server cannot
    filter on."""

    condition = caldav("supported-filter")


class UnsupportedCollation(CalendarError):
    """CALDAV:supported-collation (§7.5.1)."""

    condition = caldav("supported-collation")


class InvalidTimeRange(CalendarError):
    """A time-range with neither bound, a bound that is not a UTC DATE-TIME, or end <= start
    (§9.9); reported as CALDAV:valid-filter."""

    condition = caldav("valid-filter")


class PreconditionFailed(Exception):
    """An If-Match / If-None-Match precondition did not hold (HTTP 412, RFC 9110 §13.1)."""

    status = 412


class NotFound(Exception):
    """No such calendar or calendar object."""

    status = 404


class AlreadyExists(Exception):
    """A calendar (or object) of that name exists already (MKCALENDAR: 405, RFC 4791 §5.3.1)."""

    status = 405


class TooManyInstances(CalendarError):
    """CALDAV:max-instances (§5.3.2.1): the object would generate more recurrence instances
    than the server allows (a COUNT or RDATEs beyond ``caldav_max_instances``)."""

    condition = caldav("max-instances")


class RecurrenceBudgetExceeded(CalendarError):
    """Expanding the recurrences a request needs takes more work, or more instances of one
    object, than the server allows; answered 507 with DAV:number-of-matches-within-limits
    (RFC 5323 §5.17) as for a result set the server will not produce whole."""

    status = 507
    condition = "{DAV:}number-of-matches-within-limits"
