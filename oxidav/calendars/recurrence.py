"""Instances of calendar components: the recurrence set of RFC 5545 §3.8.5 made concrete.

An ``Instance`` is one occurrence of a component: the component it takes its properties from
(the master, or the override whose RECURRENCE-ID names it) and its own start and end.
Recurrence (RRULE, RDATE, EXDATE, RECURRENCE-ID overrides, RANGE=THISANDFUTURE, floating
times and TZIDs) is computed by recurring-ical-events; this module only asks it for
occurrences in a window, lazily and chunk by chunk so that an open-ended query over an
infinite rule stops at the first instance the caller accepts. Before each chunk the dateutil
rules are replaced by budgeted ones jumped to just before it (``rules``), so the work is
proportional to the chunk, not to its distance from DTSTART, and is charged to the request's
``ExpansionBudget``. Nothing is cached here: every call builds its own series.

The windows passed in are *candidate* windows, already widened by the caller; the exact RFC
4791 §9.9 overlap test is done by ``timerange`` on each instance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from oxidav.calendars.errors import RecurrenceBudgetExceeded
from oxidav.calendars.rules import DEFAULT_LIMITS, ExpansionBudget, RecurrenceLimits, jumped
from oxidav.calendars.timeutil import MAX_DATE_TIME, MIN_DATE_TIME, is_date, to_utc

if TYPE_CHECKING:
    import icalendar

#: Components that can recur (RFC 5545 §3.8.5).
RECURRING_COMPONENTS = frozenset({"VEVENT", "VTODO", "VJOURNAL"})

_FIRST_CHUNK = timedelta(days=62)
_MAX_CHUNK = timedelta(days=3660)
#: Rules are jumped to this much (plus the longest instance) before a window: room for the
#: floating zone and for recurring-ical-events widening the window by the instance length.
_JUMP_MARGIN = timedelta(days=2)
#: Periods a rule may walk at PUT to find its first instance (DAILY: some 54 years, more than
#: any real gap, e.g. a 29 February that falls on a Monday).
FIRST_INSTANCE_WORK = 20_000

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


def _series(group: list[icalendar.cal.Component], name: str) -> list[Any]:
    """The recurrence-ical-events series of ``group``, built for this call only (a series
    is cheap to build; its rules are replaced per window, so it is never shared)."""
    import icalendar
    import recurring_ical_events

    holder = icalendar.Calendar()
    for component in group:
        holder.add_component(component)
    return list(recurring_ical_events.of(holder, components=[name]).series)


def _rules_for(series: Any, before: datetime, budget: ExpansionBudget) -> None:
    """Replace the dateutil rules of ``series`` (recurring-ical-events keeps the RDATEs in
    the first entry of ``recurrence.rrules``, one rule per RRULE after it) by budgeted rules
    jumped to just before ``before``."""
    recurrence: Any = getattr(series, "recurrence", None)
    rules = getattr(recurrence, "rrules", None)
    if not rules:
        return
    originals = getattr(recurrence, "_oxidav_rules", None)
    if originals is None:
        originals = rules[1:]
        recurrence._oxidav_rules = originals
    jumped_rules = [jumped(rule, before, budget) for rule in originals]
    recurrence.rrules = [rules[0], *(rule for rule in jumped_rules if rule is not None)]


def _expand(
    group: list[icalendar.cal.Component],
    name: str,
    start: datetime,
    end: datetime,
    budget: ExpansionBudget,
) -> Iterator[Instance]:
    all_series = _series(group, name)
    lead = max_duration(group) + _JUMP_MARGIN
    seen: set[tuple[int, Time]] = set()
    for chunk_start, chunk_end in _chunks(start, end):
        found: list[Instance] = []
        for series in all_series:
            _rules_for(series, chunk_start - lead, budget)
            for occurrence in series.between(chunk_start, chunk_end):
                key = (id(occurrence._adapter), occurrence.start)
                if key not in seen:
                    seen.add(key)
                    budget.spend()
                    if len(seen) > budget.max_instances:
                        raise RecurrenceBudgetExceeded(
                            f"more than {budget.max_instances} instances of one object"
                            " (caldav_max_instances)"
                        )
                    found.append(_instance_of(occurrence, name))
        found.sort(key=Instance.sort_key)
        yield from found


def instances(
    components: Iterable[icalendar.cal.Component],
    window: tuple[datetime | None, datetime | None],
    budget: ExpansionBudget | None = None,
) -> Iterator[Instance]:
    """The instances of ``components`` (all of one type) whose span may touch ``window``.

    Recurrence sets are expanded within the window (an open bound is replaced by the server's
    min/max-date-time); non-recurring components are yielded whole, without a window test.
    Instances of one recurrence set come in start order. The work is charged to ``budget``
    (a fresh one of the default limits if None); ``RecurrenceBudgetExceeded`` when it runs
    out or one object yields more than its ``max_instances``.
    """
    if budget is None:
        budget = DEFAULT_LIMITS.budget()
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
        yield from _expand(group, str(masters[0].name), start, end, budget)


def validate_recurrence(
    calendar: icalendar.Calendar, name: str, limits: RecurrenceLimits = DEFAULT_LIMITS
) -> None:
    """Raise ValueError if the recurrence set of ``calendar`` cannot be computed, and
    ``RecurrenceBudgetExceeded`` if a rule finds no instance within ``FIRST_INSTANCE_WORK``
    periods from its DTSTART (a rule that never occurs is recognised that way)."""
    import recurring_ical_events

    budget = ExpansionBudget(min(limits.max_work, FIRST_INSTANCE_WORK), limits.max_instances)
    try:
        all_series = list(recurring_ical_events.of(calendar, components=[name]).series)
        for series in all_series:
            _rules_for(series, MIN_DATE_TIME, budget)
            for _ in series.between(MIN_DATE_TIME, MIN_DATE_TIME + timedelta(days=1)):
                break
            for rule in getattr(getattr(series, "recurrence", None), "rrules", [])[1:]:
                next(iter(rule), None)
    except RecurrenceBudgetExceeded:
        raise
    except Exception as exc:  # the library raises many kinds on malformed rules
        raise ValueError(f"recurrence cannot be computed: {exc}") from exc
