"""Instances of calendar components: the recurrence set of RFC 5545 §3.8.5 made concrete.

An ``Instance`` is one occurrence of a component: the component it takes its properties from
(the master, or the override whose RECURRENCE-ID names it) and its own start and end.
Recurrence (RRULE, RDATE, EXDATE, RECURRENCE-ID overrides, RANGE=THISANDFUTURE, floating
times and TZIDs) is computed by recurring-ical-events; this module only asks it for
occurrences in a window, lazily and chunk by chunk so that an open-ended query over an
infinite rule stops at the first instance the caller accepts.

The windows passed in are *candidate* windows, already widened by the caller; the exact RFC
4791 §9.9 overlap test is done by ``timerange`` on each instance.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import icalendar
import recurring_ical_events

from oxidav.calendars.timeutil import MAX_DATE_TIME, MIN_DATE_TIME, is_date, to_utc

#: Components that can recur (RFC 5545 §3.8.5).
RECURRING_COMPONENTS = frozenset({"VEVENT", "VTODO", "VJOURNAL"})

_FIRST_CHUNK = timedelta(days=62)
_MAX_CHUNK = timedelta(days=3660)

Time = date | datetime


@dataclass(frozen=True)
class Instance:
    """One occurrence of a component.

    ``start`` is the instance's DTSTART (None if the component has none), ``end`` its DTEND,
    DUE or DTSTART + DURATION (None if it has none: RFC 5545 then defines the end from the
    start). ``recurrence_id`` is set for instances of a recurrence set, overrides included.
    """

    component: icalendar.cal.Component
    start: Time | None
    end: Time | None
    recurrence_id: Time | None = None

    def sort_key(self) -> datetime:
        anchor = self.start if self.start is not None else self.end
        return MIN_DATE_TIME if anchor is None else to_utc(anchor, UTC)


def _value(component: icalendar.cal.Component, name: str) -> Any:
    prop = component.get(name)
    if prop is None:
        return None
    if isinstance(prop, list):
        prop = prop[0]
    return getattr(prop, "dt", None)


def _plus(start: Time, duration: timedelta) -> Time:
    if is_date(start) and duration.seconds == 0 and duration.microseconds == 0:
        return start + timedelta(days=duration.days)
    if is_date(start):
        start = datetime(start.year, start.month, start.day)
    return start + duration


def natural_end(component: icalendar.cal.Component) -> Time | None:
    """The end RFC 5545 gives a component from its own properties.

    VEVENT: DTEND, else DTSTART + DURATION, else DTSTART + P1D for a DATE, else DTSTART.
    VTODO: DUE, else DTSTART + DURATION, else None. VFREEBUSY: DTEND. Others: None.
    """
    start = _value(component, "DTSTART")
    duration = _value(component, "DURATION")
    if component.name == "VEVENT":
        end = _value(component, "DTEND")
        if end is not None:
            return end  # type: ignore[no-any-return]
        if start is None:
            return None
        if isinstance(duration, timedelta):
            return _plus(start, duration)
        return start + timedelta(days=1) if is_date(start) else start  # type: ignore[no-any-return]
    if component.name == "VTODO":
        due = _value(component, "DUE")
        if due is not None:
            return due  # type: ignore[no-any-return]
        if start is not None and isinstance(duration, timedelta):
            return _plus(start, duration)
        return None
    if component.name == "VFREEBUSY":
        return _value(component, "DTEND")  # type: ignore[no-any-return]
    return None


def max_duration(components: Iterable[icalendar.cal.Component]) -> timedelta:
    """The longest span (natural end - DTSTART) among ``components``; used to widen windows."""
    longest = timedelta(0)
    for component in components:
        start, end = _value(component, "DTSTART"), natural_end(component)
        if start is not None and end is not None:
            longest = max(longest, to_utc(end, UTC) - to_utc(start, UTC))
    return longest


def single_instance(component: icalendar.cal.Component) -> Instance:
    """A non-recurring component as its only instance."""
    recurrence_id = _value(component, "RECURRENCE-ID")
    return Instance(component, _value(component, "DTSTART"), natural_end(component), recurrence_id)


def is_recurring(component: icalendar.cal.Component) -> bool:
    """A master component with a recurrence rule or recurrence dates."""
    return (
        component.name in RECURRING_COMPONENTS
        and "RECURRENCE-ID" not in component
        and "DTSTART" in component
        and ("RRULE" in component or "RDATE" in component)
    )


def _chunks(start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
    size = _FIRST_CHUNK
    while start < end:
        stop = min(end, start + size)
        yield start, stop
        start = stop
        size = min(size * 2, _MAX_CHUNK)


def _instance_of(occurrence: Any, name: str) -> Instance:
    """Translate a recurring-ical-events occurrence (private attribute ``_adapter``: the
    component it is derived from) into an ``Instance``."""
    adapter = occurrence._adapter
    component: icalendar.cal.Component = adapter._component
    start: Time = occurrence.start
    end: Time = occurrence.end
    if "RECURRENCE-ID" in component and start == adapter.start:
        recurrence_id = _value(component, "RECURRENCE-ID")
    else:
        recurrence_id = start - adapter.move_recurrences_by
    if name == "VTODO":
        has_end = "DUE" in component or "DURATION" in component
        return Instance(component, start, end if has_end else None, recurrence_id)
    if name == "VJOURNAL":
        return Instance(component, start, None, recurrence_id)
    return Instance(component, start, end, recurrence_id)


class _SeriesCache:
    """Recurrence sets already built, per group of components (by identity).

    Building one parses the RRULEs; the parsed rules also cache the instances they generated.
    Parsed calendars are shared read-only (``storage.ParsedCache``), so the same component
    objects come back for the same stored object and the built series can be reused. Entries
    hold their components, so an id is never reused while its entry lives.
    """

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, ...], tuple[list[Any], Any]] = OrderedDict()
        self._lock = threading.Lock()

    def query(self, group: list[icalendar.cal.Component], name: str) -> Any:
        key = tuple(id(c) for c in group)
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
                return entry[1]
        holder = icalendar.Calendar()
        for component in group:
            holder.add_component(component)
        query = recurring_ical_events.of(holder, components=[name])
        with self._lock:
            self._items[key] = (list(group), query)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return query


_SERIES = _SeriesCache()


def _expand(
    group: list[icalendar.cal.Component], name: str, start: datetime, end: datetime
) -> Iterator[Instance]:
    query = _SERIES.query(group, name)
    seen: set[tuple[int, Time]] = set()
    for chunk_start, chunk_end in _chunks(start, end):
        found: list[Instance] = []
        for series in query.series:
            for occurrence in series.between(chunk_start, chunk_end):
                key = (id(occurrence._adapter), occurrence.start)
                if key not in seen:
                    seen.add(key)
                    found.append(_instance_of(occurrence, name))
        found.sort(key=Instance.sort_key)
        yield from found


def instances(
    components: Iterable[icalendar.cal.Component],
    window: tuple[datetime | None, datetime | None],
) -> Iterator[Instance]:
    """The instances of ``components`` (all of one type) whose span may touch ``window``.

    Recurrence sets are expanded within the window (an open bound is replaced by the server's
    min/max-date-time); non-recurring components are yielded whole, without a window test.
    Instances of one recurrence set come in start order.
    """
    groups: dict[str, list[icalendar.cal.Component]] = defaultdict(list)
    for component in components:
        groups[str(component.get("UID", ""))].append(component)
    start = max(window[0] or MIN_DATE_TIME, MIN_DATE_TIME)
    end = min(window[1] or MAX_DATE_TIME, MAX_DATE_TIME)
    for group in groups.values():
        masters = [c for c in group if is_recurring(c)]
        if not masters:
            yield from (single_instance(c) for c in group)
            continue
        yield from _expand(group, str(masters[0].name), start, end)


def validate_recurrence(calendar: icalendar.Calendar, name: str) -> None:
    """Raise ValueError if the recurrence set of ``calendar`` cannot be computed."""
    try:
        query = recurring_ical_events.of(calendar, components=[name])
        for series in query.series:
            for _ in series.between(MIN_DATE_TIME, MIN_DATE_TIME + timedelta(days=1)):
                break
    except Exception as exc:  # the library raises many kinds on malformed rules
        raise ValueError(f"recurrence cannot be computed: {exc}") from exc
