"""iCalendar logic and storage for CalDAV (RFC 4791), with no HTTP in it.

- ``validation``: what a calendar object resource must be before it is stored.
- ``index``: the component type, UID and UTC time bounds that are indexed for queries.
- ``recurrence``: instances of recurring components; ``timerange``: RFC 4791 §9.9 overlaps.
- ``rules``: recurrence rules under a work budget, jumped close to a window; the limits.
- ``filters`` (the calendar-query filter as data) and ``evaluate`` (its exact evaluation).
- ``caldata``: calendar-data in reports: partial data, expand, limit-recurrence-set.
- ``freebusy``: the free-busy-query report.
- ``store``: ``CalendarStore``, calendars and objects in the database, with sync tokens;
  ``reads``: the records it hands out and its prepared single reads; ``object_rows``: the
  row writes of a PUT (preconditions, UID uniqueness), as statements built once.
- ``errors``: typed errors naming the RFC 4791 preconditions.

icalendar and recurring_ical_events are imported inside the functions that use them (and for
type checking), never when a module of this package is imported: a server whose users only
keep files never loads them (``tests/app/test_import_weight.py``).
"""

from oxidav.calendars.caldata import CalendarDataRequest, parse_calendar_data
from oxidav.calendars.errors import CalendarError
from oxidav.calendars.filters import CompFilter, TimeRange, parse_filter
from oxidav.calendars.reads import CalendarInfo, ObjectInfo, StoredObject
from oxidav.calendars.store import CalendarStore, PutResult

__all__ = [
    "CalendarDataRequest",
    "CalendarError",
    "CalendarInfo",
    "CalendarStore",
    "CompFilter",
    "ObjectInfo",
    "PutResult",
    "StoredObject",
    "TimeRange",
    "parse_calendar_data",
    "parse_filter",
]
