"""Validation of a calendar object resource before it is stored (RFC 4791 §4.1, §5.3.2.1).

``validate_object`` accepts the bytes of a PUT and either returns the parsed object with its
index columns or raises the ``CalendarError`` naming the precondition that failed:

- ``max-resource-size``: larger than the server accepts;
- ``valid-calendar-data``: not UTF-8, not one VCALENDAR, unparseable values, a VERSION other
  than 2.0, a recurrence that cannot be computed, DTEND before DTSTART, DTEND with DURATION;
- ``valid-calendar-object-resource``: METHOD present, no component, components of several
  types or several UIDs, a missing UID, two components for the same RECURRENCE-ID, a
  recurrence denser than one instance per ``min_interval`` seconds, a rule that finds no
  instance within the work budget (one that never occurs);
- ``max-instances``: a COUNT, or more RDATE values or overrides, beyond ``max_instances``;
- ``supported-calendar-component``: a component type the calendar does not accept;
- ``min-date-time`` / ``max-date-time``: a date outside the server's range.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from oxidav.calendars.errors import (
    DateTooEarly,
    DateTooLate,
    InvalidCalendarData,
    InvalidCalendarObject,
    RecurrenceBudgetExceeded,
    ResourceTooLarge,
    TooManyInstances,
    UnsupportedComponent,
)
from oxidav.calendars.index import time_bounds
from oxidav.calendars.recurrence import RECURRING_COMPONENTS, is_recurring, validate_recurrence
from oxidav.calendars.rules import DEFAULT_LIMITS, RecurrenceLimits
from oxidav.calendars.timeutil import MAX_DATE_TIME, MIN_DATE_TIME, to_utc
from oxidav.xml_chars import first_xml_invalid

if TYPE_CHECKING:
    import icalendar

#: Component types a calendar object resource may hold (besides VTIMEZONE).
KNOWN_COMPONENTS = frozenset({"VEVENT", "VTODO", "VJOURNAL", "VFREEBUSY"})
MAX_UID_LENGTH = 512
_DATE_PROPERTIES = ("DTSTART", "DTEND", "DUE", "RECURRENCE-ID")


@dataclass(frozen=True)
class ValidObject:
    """A calendar object that passed validation, with its index columns."""

    calendar: icalendar.Calendar
    text: str
    #: ``text``'s length in UTF-8 bytes (the body's length).
    size: int
    component_type: str
    uid: str
    first_start: datetime | None
    last_end: datetime | None


def parse_calendar(data: bytes | str) -> icalendar.Calendar:
    """Parse exactly one VCALENDAR; raise ``InvalidCalendarData`` otherwise (also for a
    character XML cannot carry: a stored object must always fit in a REPORT's answer)."""
    text = _utf8_text(data)
    bad = first_xml_invalid(text)
    if bad is not None:
        raise InvalidCalendarData(f"calendar data contains the control character {bad!r}")
    _check_nesting(text)
    import icalendar

    try:
        components = icalendar.Calendar.from_ical(text, multiple=True)
    except (ValueError, IndexError, KeyError) as exc:
        raise InvalidCalendarData(f"calendar data cannot be parsed: {exc}") from None
    if len(components) != 1 or components[0].name != "VCALENDAR":
        raise InvalidCalendarData("calendar data must hold exactly one VCALENDAR")
    calendar = components[0]
    if not isinstance(calendar, icalendar.Calendar):
        raise InvalidCalendarData("calendar data must hold exactly one VCALENDAR")
    for component in calendar.walk():
        if component.errors:
            name, why = component.errors[0]
            raise InvalidCalendarData(f"{component.name} property {name}: {why}")
    return calendar


def _utf8_text(data: bytes | str) -> str:
    try:
        return data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise InvalidCalendarData("calendar data is not UTF-8") from None


def _check_nesting(text: str) -> None:
    """Every END closes the BEGIN it pairs with (the parser alone does not check)."""
    stack: list[str] = []
    for line in text.splitlines():
        upper = line.upper()
        if upper.startswith("BEGIN:"):
            stack.append(upper[6:].strip())
        elif upper.startswith("END:") and (not stack or stack.pop() != upper[4:].strip()):
            raise InvalidCalendarData(f"unbalanced {line.strip()!r}")
    if stack:
        raise InvalidCalendarData(f"BEGIN:{stack[-1]} is never closed")


def _first(component: icalendar.cal.Component, name: str) -> Any:
    prop = component.get(name)
    if isinstance(prop, list):
        prop = prop[0] if prop else None
    return getattr(prop, "dt", None)


def _check_times(component: icalendar.cal.Component) -> None:
    start = _first(component, "DTSTART")
    name = component.name
    if name == "VEVENT" and start is None:
        raise InvalidCalendarData("VEVENT without DTSTART")
    if "DURATION" in component and ("DTEND" in component or "DUE" in component):
        raise InvalidCalendarData(f"{name} has DURATION together with DTEND/DUE")
    if "DURATION" in component and start is None:
        raise InvalidCalendarData(f"{name} has DURATION without DTSTART")
    if "DURATION" in component and not isinstance(_first(component, "DURATION"), timedelta):
        raise InvalidCalendarData(f"{name} has an invalid DURATION")
    for end_name in ("DTEND", "DUE"):
        end = _first(component, end_name)
        if start is not None and end is not None:
            if type(start) is not type(end) and not (
                isinstance(start, datetime) and isinstance(end, datetime)
            ):
                raise InvalidCalendarData(f"{name}: DTSTART and {end_name} differ in value type")
            if to_utc(end, UTC) < to_utc(start, UTC):
                raise InvalidCalendarData(f"{name}: {end_name} is before DTSTART")
    for prop_name in _DATE_PROPERTIES:
        value = _first(component, prop_name)
        if value is None:
            continue
        instant = to_utc(value, UTC)
        if instant < MIN_DATE_TIME:
            raise DateTooEarly(f"{prop_name} is before the server's min-date-time")
        if instant >= MAX_DATE_TIME:
            raise DateTooLate(f"{prop_name} is after the server's max-date-time")


def _check_components(calendar: icalendar.Calendar) -> tuple[str, str]:
    """(component type, UID) of a calendar object resource (RFC 4791 §4.1)."""
    if "METHOD" in calendar:
        raise InvalidCalendarObject("calendar object resources must not carry METHOD")
    comps = [c for c in calendar.subcomponents if c.name != "VTIMEZONE"]
    if not comps:
        raise InvalidCalendarObject("no VEVENT, VTODO, VJOURNAL or VFREEBUSY in the object")
    types = {str(c.name) for c in comps}
    if len(types) > 1:
        raise InvalidCalendarObject(f"several component types in one object: {sorted(types)}")
    component_type = types.pop()
    if component_type not in KNOWN_COMPONENTS:
        raise InvalidCalendarObject(f"{component_type} cannot be stored in a calendar")
    uids = {str(c.get("UID", "")) for c in comps}
    if "" in uids:
        raise InvalidCalendarObject(f"a {component_type} has no UID")
    if len(uids) > 1:
        raise InvalidCalendarObject("all components of an object must share one UID")
    uid = uids.pop()
    if len(uid) > MAX_UID_LENGTH:
        raise InvalidCalendarObject(f"UID longer than {MAX_UID_LENGTH} characters")
    seen: set[object] = set()
    for component in comps:
        recurrence_id = component.get("RECURRENCE-ID")
        key = None if recurrence_id is None else to_utc(recurrence_id.dt, UTC)
        if key in seen:
            raise InvalidCalendarObject("two components for the same RECURRENCE-ID")
        seen.add(key)
        _check_times(component)
    return component_type, uid


_SECONDS = {"SECONDLY": 1, "MINUTELY": 60, "HOURLY": 3600}
_FINENESS = {"SECONDLY": 0, "MINUTELY": 1, "HOURLY": 2}


def _list(rule: Any, part: str) -> list[Any]:
    values = rule.get(part) or []
    return list(values) if isinstance(values, list | tuple) else [values]


def instances_per_day(rule: Any) -> int:
    """An upper bound of the instances one RRULE (an icalendar ``vRecur``) produces in a day:
    the distinct times of day its BYHOUR/BYMINUTE/BYSECOND allow, and for a sub-daily FREQ
    also its periods per day times the expansions finer than FREQ."""
    freq = str((_list(rule, "FREQ") or ["DAILY"])[0]).upper()
    interval = max(1, int((_list(rule, "INTERVAL") or [1])[0]))
    hours, minutes, seconds = (len(set(_list(rule, p))) for p in ("BYHOUR", "BYMINUTE", "BYSECOND"))
    fineness = _FINENESS.get(freq, 3)
    times_of_day = (
        (hours or (24 if fineness <= 2 else 1))
        * (minutes or (60 if fineness <= 1 else 1))
        * (seconds or (60 if fineness == 0 else 1))
    )
    if freq not in _SECONDS:
        return times_of_day
    periods = math.ceil(86400 / (interval * _SECONDS[freq]))
    expansion = (seconds if fineness >= 1 and seconds else 1) * (
        minutes if fineness >= 2 and minutes else 1
    )
    return min(times_of_day, periods * expansion)


def _check_recurrence_limits(
    calendar: icalendar.Calendar, component_type: str, limits: RecurrenceLimits
) -> None:
    """Density, COUNT, RDATE and override limits, read from the rules without expanding them."""
    overrides = sum(1 for c in calendar.subcomponents if "RECURRENCE-ID" in c)
    if overrides > limits.max_instances:
        raise TooManyInstances(
            f"more than {limits.max_instances} overridden instances (caldav_max_instances)"
        )
    for component in calendar.subcomponents:
        if component.name != component_type:
            continue
        rules = component.get("RRULE")
        rules = rules if isinstance(rules, list) else [] if rules is None else [rules]
        per_day = sum(instances_per_day(rule) for rule in rules)
        if per_day * limits.min_interval > 86400:
            raise InvalidCalendarObject(
                f"recurrence of up to {per_day} instances a day is denser than one per"
                f" {limits.min_interval} s (caldav_min_recurrence_interval)"
            )
        for rule in rules:
            count = _list(rule, "COUNT")
            if count and int(count[0]) > limits.max_instances:
                raise TooManyInstances(
                    f"COUNT beyond {limits.max_instances} instances (caldav_max_instances)"
                )
        rdates = component.get("RDATE")
        rdates = rdates if isinstance(rdates, list) else [] if rdates is None else [rdates]
        if sum(len(getattr(prop, "dts", [])) for prop in rdates) > limits.max_instances:
            raise TooManyInstances(
                f"more than {limits.max_instances} RDATE values (caldav_max_instances)"
            )


def validate_object(
    data: bytes,
    *,
    allowed_components: Collection[str],
    max_size: int,
    limits: RecurrenceLimits = DEFAULT_LIMITS,
) -> ValidObject:
    """Parse and check one calendar object resource sent with PUT."""
    if len(data) > max_size:
        raise ResourceTooLarge(f"calendar object is larger than {max_size} bytes")
    text = _utf8_text(data)
    calendar = parse_calendar(text)
    version = calendar.get("VERSION")
    if version is not None and str(version).strip() != "2.0":
        raise InvalidCalendarData("only iCalendar VERSION 2.0 is supported")
    component_type, uid = _check_components(calendar)
    if component_type not in allowed_components:
        raise UnsupportedComponent(f"this calendar does not accept {component_type}")
    if component_type in RECURRING_COMPONENTS:
        try:
            _check_recurrence_limits(calendar, component_type, limits)
            if any(is_recurring(c) for c in calendar.subcomponents if c.name == component_type):
                # Only a recurring master is ever expanded by the recurrence library (see
                # ``recurrence.instances``): the others are their own single instance.
                validate_recurrence(calendar, component_type, limits)
            first, last = time_bounds(calendar, component_type)
        except RecurrenceBudgetExceeded as exc:
            raise InvalidCalendarObject(
                f"a recurrence rule finds no instance within the server's budget: {exc}"
            ) from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidCalendarData(str(exc)) from None
    else:
        first, last = time_bounds(calendar, component_type)
    return ValidObject(
        calendar=calendar,
        text=text,
        size=len(data),
        component_type=component_type,
        uid=uid,
        first_start=first,
        last_end=last,
    )
