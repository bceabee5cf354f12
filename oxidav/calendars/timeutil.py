"""Time values of iCalendar and CalDAV, reduced to aware UTC datetimes.

RFC 4791 compares everything in UTC (§9.9). A DATE or a floating DATE-TIME has no zone of its
own; it is read in the *floating time zone*: the query's CALDAV:timezone if given, else the
calendar's calendar-timezone, else UTC (§9.9, §5.2.2).
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: The server's CALDAV:min-date-time and CALDAV:max-date-time (RFC 4791 §5.2.6, §5.2.7).
MIN_DATE_TIME = datetime(1800, 1, 1, tzinfo=UTC)
MAX_DATE_TIME = datetime(3000, 1, 1, tzinfo=UTC)

#: How far a floating time can lie from its UTC reading, with room to spare (UTC-12 .. UTC+14).
FLOATING_SLACK = timedelta(days=1)

_UTC_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$")


def parse_utc(text: str) -> datetime:
    """Read a CalDAV ``start``/``end`` attribute: a DATE-TIME in UTC, ``20060104T000000Z``."""
    match = _UTC_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a UTC date-time: {text!r}")
    year, month, day, hour, minute, second = (int(part) for part in match.groups())
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def format_utc(value: datetime) -> str:
    """The iCalendar UTC form of an aware datetime: ``20060104T000000Z``."""
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def is_date(value: object) -> bool:
    """True for a DATE (``datetime.date`` that is not a ``datetime``)."""
    return isinstance(value, date) and not isinstance(value, datetime)


def to_utc(value: date | datetime, floating: tzinfo) -> datetime:
    """An aware UTC datetime for a DATE, a floating DATE-TIME or a zoned DATE-TIME."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=floating)
    return value.astimezone(UTC)


@functools.lru_cache(maxsize=256)
def timezone_from_ical(text: str) -> tzinfo | None:
    """The time zone of a CALDAV:calendar-timezone / CALDAV:timezone value (a VCALENDAR with one
    VTIMEZONE). An IANA TZID is resolved through zoneinfo; otherwise the VTIMEZONE rules are
    used. None if ``text`` holds no usable VTIMEZONE."""
    if not text.strip():
        return None
    import icalendar

    try:
        calendar = icalendar.Calendar.from_ical(text)
    except ValueError:
        return None
    for vtimezone in calendar.walk("VTIMEZONE"):
        tzid = str(vtimezone.get("TZID", ""))
        zone = timezone_by_id(tzid)
        if zone is not None:
            return zone
        if not isinstance(vtimezone, icalendar.Timezone):
            return None
        try:
            zone_info: tzinfo = vtimezone.to_tz()
            return zone_info
        except (ValueError, KeyError, TypeError):
            return None
    return None


def timezone_by_id(tzid: str) -> tzinfo | None:
    """An IANA time zone by name (RFC 7809 timezone-id), or None."""
    if not tzid or ("/" not in tzid and tzid != "UTC"):
        return None
    try:
        return ZoneInfo(tzid)
    except (ZoneInfoNotFoundError, ValueError):
        return None
