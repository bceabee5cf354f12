"""When does a component instance, an alarm or a property value overlap a time range?

The rules are RFC 4791 §9.9, table by table, with the erratum that a zero-duration VEVENT
(DTEND = DTSTART) is tested like one without DTEND: ``start <= DTSTART < end``. Everything is
compared in UTC; DATEs and floating times are read in the floating zone (see ``timeutil``).
A missing bound of the range is unbounded.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from oxidav.calendars.filters import TimeRange
from oxidav.calendars.recurrence import Instance, Time
from oxidav.calendars.timeutil import is_date, to_utc

if TYPE_CHECKING:
    import icalendar


def _lt(a: datetime | None, b: datetime | None) -> bool:
    """a < b where None is -inf on the left and +inf on the right."""
    return a is None or b is None or a < b


def _le(a: datetime | None, b: datetime | None) -> bool:
    return a is None or b is None or a <= b


def _value(component: icalendar.cal.Component, name: str) -> Any:
    prop = component.get(name)
    if isinstance(prop, list):
        prop = prop[0] if prop else None
    return getattr(prop, "dt", None)


def instance_span(instance: Instance, floating: tzinfo) -> tuple[datetime, datetime] | None:
    """The UTC [start, end] an instance occupies (for VEVENT the RFC end, P1D for a DATE
    without end); None if it has no start."""
    if instance.start is None:
        return None
    start = to_utc(instance.start, floating)
    if instance.end is not None:
        return start, to_utc(instance.end, floating)
    if instance.component.name == "VEVENT" and is_date(instance.start):
        return start, start + timedelta(days=1)
    return start, start


def _event(instance: Instance, rng: TimeRange, floating: tzinfo) -> bool:
    span = instance_span(instance, floating)
    if span is None:
        return False
    start, end = span
    if end > start:
        return _lt(rng.start, end) and _lt(start, rng.end)
    return _le(rng.start, start) and _lt(start, rng.end)


def _todo(instance: Instance, rng: TimeRange, floating: tzinfo) -> bool:
    component = instance.component
    s, e = rng.start, rng.end
    if instance.start is not None:
        dtstart = to_utc(instance.start, floating)
        if instance.end is None:
            return _le(s, dtstart) and _lt(dtstart, e)
        end = to_utc(instance.end, floating)
        if "DUE" in component:
            return (_lt(s, end) or _le(s, dtstart)) and (_lt(dtstart, e) or _le(end, e))
        return _le(s, end) and (_lt(dtstart, e) or _le(end, e))
    if instance.end is not None:  # DUE only
        due = to_utc(instance.end, floating)
        return _lt(s, due) and _le(due, e)
    completed, created = _value(component, "COMPLETED"), _value(component, "CREATED")
    if completed is not None:
        done = to_utc(completed, floating)
        if created is not None:
            made = to_utc(created, floating)
            return (_le(s, made) or _le(s, done)) and (_le(made, e) or _le(done, e))
        return _le(s, done) and _le(done, e)
    if created is not None:
        return _lt(to_utc(created, floating), e)
    return True


def _journal(instance: Instance, rng: TimeRange, floating: tzinfo) -> bool:
    if instance.start is None:
        return False
    start = to_utc(instance.start, floating)
    if is_date(instance.start):
        return _lt(rng.start, start + timedelta(days=1)) and _lt(start, rng.end)
    return _le(rng.start, start) and _lt(start, rng.end)


def freebusy_periods(
    component: icalendar.cal.Component, floating: tzinfo
) -> list[tuple[datetime, datetime, str]]:
    """The (start, end, FBTYPE) periods of a component's FREEBUSY properties, in UTC."""
    props = component.get("FREEBUSY")
    if props is None:
        return []
    result: list[tuple[datetime, datetime, str]] = []
    for prop in props if isinstance(props, list) else [props]:
        fbtype = str(prop.params.get("FBTYPE", "BUSY")).upper()
        periods = getattr(prop, "dts", None)
        values = [p.dt for p in periods] if periods is not None else [getattr(prop, "dt", None)]
        for value in values:
            if isinstance(value, tuple) and len(value) == 2:
                begin = to_utc(value[0], floating)
                finish = (
                    begin + value[1]
                    if isinstance(value[1], timedelta)
                    else to_utc(value[1], floating)
                )
                result.append((begin, finish, fbtype))
    return result


def _freebusy(instance: Instance, rng: TimeRange, floating: tzinfo) -> bool:
    if instance.start is not None and instance.end is not None:
        return _le(rng.start, to_utc(instance.end, floating)) and _lt(
            to_utc(instance.start, floating), rng.end
        )
    return any(
        _lt(rng.start, end) and _lt(start, rng.end)
        for start, end, _ in freebusy_periods(instance.component, floating)
    )


def instance_overlaps(instance: Instance, rng: TimeRange, floating: tzinfo) -> bool:
    """RFC 4791 §9.9 for VEVENT, VTODO, VJOURNAL and VFREEBUSY instances."""
    name = instance.component.name
    if name == "VEVENT":
        return _event(instance, rng, floating)
    if name == "VTODO":
        return _todo(instance, rng, floating)
    if name == "VJOURNAL":
        return _journal(instance, rng, floating)
    if name == "VFREEBUSY":
        return _freebusy(instance, rng, floating)
    return False


def alarm_times(
    alarm: icalendar.cal.Component, parent: Instance, floating: tzinfo
) -> list[datetime]:
    """Every UTC time a VALARM of ``parent`` triggers (RFC 5545 §3.6.6): the TRIGGER, relative
    to the instance's start or end (RELATED=END), or absolute; then REPEAT more times every
    DURATION."""
    trigger = alarm.get("TRIGGER")
    if trigger is None:
        return []
    offset = trigger.dt
    if isinstance(offset, timedelta):
        related = str(trigger.params.get("RELATED", "START")).upper()
        # A VEVENT instance always has an end (``natural_end``); a VTODO without DUE or
        # DURATION has none, and its alarms relative to the end never trigger.
        anchor: Time | None = parent.end if related == "END" else parent.start
        if related != "END" and anchor is None:
            anchor = parent.end
        if anchor is None:
            return []
        first = to_utc(anchor, floating) + offset
    elif isinstance(offset, datetime):
        first = to_utc(offset, UTC)
    else:
        return []
    times = [first]
    repeat, interval = alarm.get("REPEAT"), _value(alarm, "DURATION")
    if repeat is not None and isinstance(interval, timedelta):
        times += [first + interval * n for n in range(1, int(repeat) + 1)]
    return times


def alarm_overlaps(
    alarm: icalendar.cal.Component, parent: Instance, rng: TimeRange, floating: tzinfo
) -> bool:
    """RFC 4791 §9.9 for VALARM: some trigger time t has start <= t < end."""
    return any(rng.contains(t) for t in alarm_times(alarm, parent, floating))


def property_overlaps(prop: Any, rng: TimeRange, floating: tzinfo) -> bool:
    """A time-range inside a prop-filter, applied to a DATE, DATE-TIME or PERIOD value:
    a DATE-TIME t matches if start <= t < end, a DATE or PERIOD if it overlaps."""
    value = getattr(prop, "dt", None)
    if isinstance(value, tuple) and len(value) == 2:
        begin = to_utc(value[0], floating)
        finish = begin + value[1] if isinstance(value[1], timedelta) else to_utc(value[1], floating)
        return _lt(rng.start, finish) and _lt(begin, rng.end)
    if isinstance(value, datetime):
        return rng.contains(to_utc(value, floating))
    if isinstance(value, date):
        begin = to_utc(value, floating)
        return _lt(rng.start, begin + timedelta(days=1)) and _lt(begin, rng.end)
    return False
