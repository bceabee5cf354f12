"""The indexed columns of a calendar object: component type, UID, first start, last end.

``time_bounds`` gives a conservative UTC interval [first_start, last_end] that contains every
instance a time-range test could match (RFC 4791 §9.9), so a calendar-query can skip in SQL
every object whose interval misses the range and test only the rest exactly. None stands for
unbounded: an infinite RRULE has no last end; a VTODO with no dates matches every range.
DATEs and floating times are widened by a day on each side, since their UTC reading depends on
the query's time zone.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dateutil.rrule import rrulestr  # type: ignore[import-untyped]

from oxidav.calendars.errors import RecurrenceBudgetExceeded
from oxidav.calendars.recurrence import is_recurring, natural_end
from oxidav.calendars.rules import DEFAULT_LIMITS, budgeted
from oxidav.calendars.timeutil import FLOATING_SLACK, is_date, to_utc

if TYPE_CHECKING:
    from icalendar.cal import Component

#: A COUNT larger than this is indexed as unbounded instead of being enumerated.
MAX_COUNTED_INSTANCES = 100_000

Bounds = tuple[datetime | None, datetime | None]


def _floating(value: date | datetime) -> bool:
    return is_date(value) or (isinstance(value, datetime) and value.tzinfo is None)


def _low(value: date | datetime) -> datetime:
    utc = to_utc(value, UTC)
    return utc - FLOATING_SLACK if _floating(value) else utc


def _high(value: date | datetime) -> datetime:
    utc = to_utc(value, UTC)
    return utc + FLOATING_SLACK if _floating(value) else utc


def _dt(component: Component, name: str) -> Any:
    prop = component.get(name)
    if isinstance(prop, list):
        prop = prop[0] if prop else None
    return getattr(prop, "dt", None)


def _component_bounds(component: Component) -> Bounds:
    """Bounds of one component read as non-recurring."""
    start = _dt(component, "DTSTART")
    name = component.name
    if name == "VEVENT":
        end = natural_end(component)
        if start is None or end is None:
            return None, None
        return _low(start), _high(end)
    if name == "VTODO":
        due = natural_end(component)
        points = [v for v in (start, due) if v is not None]
        if points:
            return min(_low(v) for v in points), max(_high(v) for v in points)
        created, completed = _dt(component, "CREATED"), _dt(component, "COMPLETED")
        points = [v for v in (created, completed) if v is not None]
        if not points:
            return None, None
        high = max(_high(v) for v in points) if completed is not None else None
        return min(_low(v) for v in points), high
    if name == "VJOURNAL":
        if start is None:
            return None, None
        return _low(start), _high(start) + (timedelta(days=1) if is_date(start) else timedelta(0))
    if name == "VFREEBUSY":
        if start is not None and natural_end(component) is not None:
            return _low(start), _high(natural_end(component))  # type: ignore[arg-type]
        return _freebusy_bounds(component)
    return None, None


def _freebusy_bounds(component: Component) -> Bounds:
    lows: list[datetime] = []
    highs: list[datetime] = []
    props = component.get("FREEBUSY")
    for prop in props if isinstance(props, list) else [props] if props is not None else []:
        for period in getattr(prop, "dts", []):
            value = period.dt
            if isinstance(value, tuple):
                lows.append(_low(value[0]))
                end = value[0] + value[1] if isinstance(value[1], timedelta) else value[1]
                highs.append(_high(end))
    if not lows:
        return None, None
    return min(lows), max(highs)


def _rule_last_start(rule_text: str, start: date | datetime) -> date | datetime | None:
    """The start of the last instance of a bounded RRULE; None if unbounded."""
    upper = rule_text.upper()
    if "UNTIL=" not in upper and "COUNT=" not in upper:
        return None
    if "UNTIL=" in upper:
        until_text = upper.split("UNTIL=", 1)[1].split(";", 1)[0]
        from icalendar.prop import vDDDTypes

        parse: Any = vDDDTypes.from_ical
        until = parse(until_text)
        return until if isinstance(until, date) else None
    count = int(upper.split("COUNT=", 1)[1].split(";", 1)[0] or "0")
    if count > MAX_COUNTED_INSTANCES:
        return None
    dtstart = datetime(start.year, start.month, start.day) if is_date(start) else start
    last: datetime | None = None
    try:
        for occurrence in budgeted(rrulestr(rule_text, dtstart=dtstart), DEFAULT_LIMITS.budget()):
            last = occurrence
    except RecurrenceBudgetExceeded:
        return None  # too costly to enumerate: index it as unbounded
    return last


def _recurring_high(master: Component, duration: timedelta) -> datetime | None:
    start = _dt(master, "DTSTART")
    high: datetime = _high(start)
    rules = master.get("RRULE")
    for rule in rules if isinstance(rules, list) else [rules] if rules is not None else []:
        last = _rule_last_start(rule.to_ical().decode(), start)
        if last is None:
            return None
        # An UNTIL in UTC bounds a zoned start exactly; widen anyway for DATE / floating.
        high = max(high, _high(last) + FLOATING_SLACK)
    rdates = master.get("RDATE")
    for prop in rdates if isinstance(rdates, list) else [rdates] if rdates is not None else []:
        for item in getattr(prop, "dts", []):
            value = item.dt
            if isinstance(value, tuple):
                end = value[0] + value[1] if isinstance(value[1], timedelta) else value[1]
                high = max(high, _high(end))
            else:
                high = max(high, _high(value))
    return high + duration


def time_bounds(calendar: Component, component_type: str) -> Bounds:
    """Conservative UTC [first_start, last_end] of every instance of the object's
    ``component_type`` components (masters, recurrences and overrides)."""
    comps = [c for c in calendar.subcomponents if c.name == component_type]
    lows: list[datetime | None] = []
    highs: list[datetime | None] = []
    for component in comps:
        low, high = _component_bounds(component)
        if is_recurring(component):
            start = _dt(component, "DTSTART")
            end = natural_end(component)
            duration = timedelta(0)
            if end is not None:
                duration = max(timedelta(0), to_utc(end, UTC) - to_utc(start, UTC))
            high = _recurring_high(component, duration)
            rdates = component.get("RDATE")
            for prop in rdates if isinstance(rdates, list) else [rdates] if rdates else []:
                for item in getattr(prop, "dts", []):
                    value = item.dt[0] if isinstance(item.dt, tuple) else item.dt
                    low = _low(value) if low is None else min(low, _low(value))
        recurrence_id = component.get("RECURRENCE-ID")
        if recurrence_id is not None and "RANGE" in recurrence_id.params:
            high = None  # THISANDFUTURE shifts later instances: leave the end open
        lows.append(low)
        highs.append(high)
    if not comps:
        return None, None
    first = None if any(v is None for v in lows) else min(v for v in lows if v is not None)
    last = None if any(v is None for v in highs) else max(v for v in highs if v is not None)
    return first, last
