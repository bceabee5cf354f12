"""The CALDAV:free-busy-query report (RFC 4791 §7.10): busy time of a calendar in a range.

Busy time comes from VEVENT instances that overlap the range, unless the event is TRANSP:
TRANSPARENT or STATUS:CANCELLED (a TENTATIVE one is BUSY-TENTATIVE), and from the FREEBUSY
properties of stored VFREEBUSY components. Periods are clipped to the range and merged per
FBTYPE, and returned as one VCALENDAR with one VFREEBUSY.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

from oxidav.calendars.filters import TimeRange
from oxidav.calendars.recurrence import instances, max_duration
from oxidav.calendars.rules import DEFAULT_LIMITS, ExpansionBudget
from oxidav.calendars.timerange import freebusy_periods, instance_overlaps, instance_span
from oxidav.calendars.timeutil import FLOATING_SLACK, format_utc

if TYPE_CHECKING:
    import icalendar

Period = tuple[datetime, datetime]
_ORDER = ("BUSY", "BUSY-UNAVAILABLE", "BUSY-TENTATIVE")


def _clip(start: datetime, end: datetime, rng: TimeRange) -> Period | None:
    if rng.start is not None:
        start = max(start, rng.start)
    if rng.end is not None:
        end = min(end, rng.end)
    return (start, end) if end > start else None


def busy_periods(
    calendar: icalendar.cal.Component,
    rng: TimeRange,
    floating: tzinfo,
    budget: ExpansionBudget | None = None,
) -> list[tuple[datetime, datetime, str]]:
    """The (start, end, FBTYPE) busy periods one calendar object contributes to ``rng``;
    recurrence work is charged to ``budget``."""
    result: list[tuple[datetime, datetime, str]] = []
    events = [c for c in calendar.subcomponents if c.name == "VEVENT"]
    if events:
        pad = max_duration(events) + FLOATING_SLACK
        window = (
            rng.start - pad if rng.start is not None else None,
            rng.end + FLOATING_SLACK if rng.end is not None else None,
        )
        for instance in instances(events, window, budget):
            component = instance.component
            if str(component.get("TRANSP", "OPAQUE")).upper() == "TRANSPARENT":
                continue
            status = str(component.get("STATUS", "CONFIRMED")).upper()
            if status == "CANCELLED" or not instance_overlaps(instance, rng, floating):
                continue
            span = instance_span(instance, floating)
            clipped = _clip(*span, rng) if span is not None else None
            if clipped is not None:
                fbtype = "BUSY-TENTATIVE" if status == "TENTATIVE" else "BUSY"
                result.append((*clipped, fbtype))
    for component in calendar.subcomponents:
        if component.name == "VFREEBUSY":
            for start, end, fbtype in freebusy_periods(component, floating):
                clipped = _clip(start, end, rng)
                if clipped is not None and fbtype != "FREE":
                    result.append((*clipped, fbtype))
    return result


def merge(periods: Iterable[Period]) -> list[Period]:
    """Overlapping or touching periods joined, in start order."""
    merged: list[Period] = []
    for start, end in sorted(periods):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


BusyTime = dict[str, list[Period]]


def collect_busy(
    calendars: Iterable[icalendar.cal.Component],
    rng: TimeRange,
    floating: tzinfo = UTC,
    budget: ExpansionBudget | None = None,
) -> BusyTime:
    """Busy periods of ``calendars`` (calendar objects) in ``rng``, by FBTYPE, unmerged; one
    ``budget`` (default limits if None) for the recurrences of all of them."""
    by_type: BusyTime = defaultdict(list)
    budget = budget if budget is not None else DEFAULT_LIMITS.budget()
    for calendar in calendars:
        for start, end, fbtype in busy_periods(calendar, rng, floating, budget):
            by_type[fbtype].append((start, end))
    return dict(by_type)


def format_freebusy(busy: BusyTime, rng: TimeRange, now: datetime | None = None) -> str:
    """The VCALENDAR with one VFREEBUSY answering a free-busy-query: periods merged per
    FBTYPE, BUSY first."""
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//oxidav//CalDAV free-busy//EN",
        "BEGIN:VFREEBUSY",
        f"DTSTAMP:{format_utc(now or datetime.now(UTC))}",
    ]
    if rng.start is not None:
        lines.append(f"DTSTART:{format_utc(rng.start)}")
    if rng.end is not None:
        lines.append(f"DTEND:{format_utc(rng.end)}")
    order = [t for t in _ORDER if t in busy] + sorted(t for t in busy if t not in _ORDER)
    for fbtype in order:
        periods = merge(busy[fbtype])
        if periods:
            text = ",".join(f"{format_utc(s)}/{format_utc(e)}" for s, e in periods)
            lines.append(f"FREEBUSY;FBTYPE={fbtype}:{text}")
    lines += ["END:VFREEBUSY", "END:VCALENDAR"]
    return "\r\n".join(_fold(line) for line in lines) + "\r\n"


def free_busy_report(
    calendars: Iterable[icalendar.cal.Component],
    rng: TimeRange,
    floating: tzinfo = UTC,
    now: datetime | None = None,
) -> str:
    """The VCALENDAR answering a free-busy-query over ``calendars`` (the objects of one
    calendar collection) for ``rng``."""
    return format_freebusy(collect_busy(calendars, rng, floating), rng, now)


def _fold(line: str) -> str:
    """RFC 5545 §3.1 line folding at 75 octets (ASCII content here)."""
    if len(line) <= 75:
        return line
    parts = [line[:75]]
    rest = line[75:]
    while rest:
        parts.append(" " + rest[:74])
        rest = rest[74:]
    return "\r\n".join(parts)
