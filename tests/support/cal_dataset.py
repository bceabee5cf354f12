"""A synthetic calendar for the client tests: 200 events and 20 tasks whose occurrences are
computed here *independently* of the server (plain datetime arithmetic with zoneinfo, no
recurrence library), so a search can be checked against an exact expectation.

Events: 100 single timed ones in four zones, 30 all-day ones (some multi-day), 40 recurring
daily series with COUNT (EXDATEs, moved-and-renamed overrides), 15 infinite weekly series
(EXDATE, overrides moved a day back) and 15 monthly all-day series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

ZONES = ["UTC", "America/New_York", "Asia/Tokyo", "Europe/Berlin"]
Occurrence = tuple[datetime | date, datetime | date]


def _prop(name: str, value: datetime | date) -> str:
    if isinstance(value, datetime):
        zone = str(value.tzinfo)
        if zone == "UTC":
            return f"{name}:{value.strftime('%Y%m%dT%H%M%SZ')}"
        return f"{name};TZID={zone}:{value.strftime('%Y%m%dT%H%M%S')}"
    return f"{name};VALUE=DATE:{value.strftime('%Y%m%d')}"


@dataclass
class EventSpec:
    uid: str
    summary: str
    start: datetime | date
    end: datetime | date
    #: (unit, interval, count or None): "day", "week" or "month".
    rule: tuple[str, int, int | None] | None = None
    exdates: list[int] = field(default_factory=list)
    #: instance index -> (shift of start and end, new summary)
    overrides: dict[int, tuple[timedelta, str]] = field(default_factory=dict)

    def _nth(self, value: datetime | date, k: int) -> datetime | date:
        assert self.rule is not None
        unit, interval, _ = self.rule
        if unit == "day":
            return value + timedelta(days=interval * k)
        if unit == "week":
            return value + timedelta(weeks=interval * k)
        month = value.month - 1 + interval * k
        return value.replace(year=value.year + month // 12, month=month % 12 + 1)

    def occurrences(self, until: datetime) -> dict[datetime | date, Occurrence]:
        """recurrence-id -> (start, end) of every instance starting before ``until``."""
        if self.rule is None:
            return {self.start: (self.start, self.end)}
        result: dict[datetime | date, Occurrence] = {}
        count = self.rule[2]
        k = 0
        while count is None or k < count:
            start, end = self._nth(self.start, k), self._nth(self.end, k)
            if _utc(start) >= until:
                break
            if k in self.overrides:
                shift, _ = self.overrides[k]
                result[start] = (start + shift, end + shift)
            elif k not in self.exdates:
                result[start] = (start, end)
            k += 1
        return result

    def ics(self) -> str:
        lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//oxidav tests//EN"]
        lines += self._component(self.start, self.end, self.summary, master=True)
        for k, (shift, summary) in sorted(self.overrides.items()):
            rid = self._nth(self.start, k)
            start, end = rid + shift, self._nth(self.end, k) + shift
            lines += self._component(start, end, summary, recurrence_id=rid)
        lines.append("END:VCALENDAR")
        return "\r\n".join(lines) + "\r\n"

    def _component(
        self,
        start: datetime | date,
        end: datetime | date,
        summary: str,
        master: bool = False,
        recurrence_id: datetime | date | None = None,
    ) -> list[str]:
        lines = [
            "BEGIN:VEVENT",
            f"UID:{self.uid}",
            "DTSTAMP:20260101T000000Z",
            _prop("DTSTART", start),
            _prop("DTEND", end),
            f"SUMMARY:{summary}",
        ]
        if recurrence_id is not None:
            lines.append(_prop("RECURRENCE-ID", recurrence_id))
        if master and self.rule is not None:
            unit, interval, count = self.rule
            freq = {"day": "DAILY", "week": "WEEKLY", "month": "MONTHLY"}[unit]
            rule = f"RRULE:FREQ={freq};INTERVAL={interval}"
            lines.append(rule + (f";COUNT={count}" if count else ""))
            lines += [_prop("EXDATE", self._nth(self.start, k)) for k in self.exdates]
        lines.append("END:VEVENT")
        return lines


def _utc(value: datetime | date) -> datetime:
    """UTC reading of a value; DATEs are floating and read in UTC (the calendar has no zone)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def overlaps(occurrence: Occurrence, start: datetime, end: datetime) -> bool:
    return _utc(occurrence[0]) < end and _utc(occurrence[1]) > start


def build_events() -> list[EventSpec]:
    events: list[EventSpec] = []
    for i in range(100):
        zone = ZoneInfo(ZONES[i % 4])
        start = (datetime(2026, 2, 20, 8, 0) + timedelta(hours=11 * i)).replace(tzinfo=zone)
        end = start + timedelta(minutes=45 + 30 * (i % 3))
        events.append(EventSpec(f"single-{i}", f"Single {i}", start, end))
    for i in range(30):
        day = date(2026, 2, 16) + timedelta(days=2 * i + (1 if i % 7 == 6 else 0))
        length = 3 if i % 5 == 0 else 1
        events.append(EventSpec(f"allday-{i}", f"All day {i}", day, day + timedelta(days=length)))
    for i in range(40):
        zone = ZoneInfo(["Europe/Berlin", "America/New_York", "UTC"][i % 3])
        start = datetime(2026, 2, 10, 9, 30, tzinfo=zone) + timedelta(days=i)
        spec = EventSpec(
            f"daily-{i}",
            f"Daily {i}",
            start,
            start + timedelta(hours=1),
            rule=("day", 1 + i % 3, 10 + i % 7),
        )
        if i % 2 == 0:
            spec.exdates = [2]
        if i % 3 == 0:
            spec.overrides = {4: (timedelta(hours=3), f"Daily {i} moved")}
        events.append(spec)
    for i in range(15):
        zone = ZoneInfo(["America/New_York", "Europe/Berlin", "Asia/Tokyo"][i % 3])
        start = datetime(2025, 11, 3, 18, 0, tzinfo=zone) + timedelta(days=i)
        spec = EventSpec(
            f"weekly-{i}",
            f"Weekly {i}",
            start,
            start + timedelta(minutes=90),
            rule=("week", 1, None),
        )
        if i % 2 == 0:
            spec.exdates = [18]  # mid March 2026
        if i % 3 == 0:
            spec.overrides = {20: (timedelta(days=-1), f"Weekly {i} moved")}
        events.append(spec)
    for i in range(15):
        day = date(2026, 1, 1 + i)
        events.append(
            EventSpec(
                f"monthly-{i}",
                f"Monthly {i}",
                day,
                day + timedelta(days=1),
                rule=("month", 1, 6),
                exdates=[3] if i % 4 == 0 else [],
            )
        )
    return events


def todo_ics(i: int) -> str:
    due = datetime(2026, 3, 1, 12, tzinfo=UTC) + timedelta(days=i)
    return "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//oxidav tests//EN",
            "BEGIN:VTODO",
            f"UID:todo-{i}",
            "DTSTAMP:20260101T000000Z",
            f"DUE:{due.strftime('%Y%m%dT%H%M%SZ')}",
            f"SUMMARY:Task {i}",
            "STATUS:NEEDS-ACTION",
            "END:VTODO",
            "END:VCALENDAR",
            "",
        ]
    )


def expected_instances(
    events: list[EventSpec], start: datetime, end: datetime
) -> set[tuple[str, str]]:
    """(UID, instance start in UTC or as a date) of every occurrence overlapping [start, end)."""
    found: set[tuple[str, str]] = set()
    for spec in events:
        for occurrence in spec.occurrences(until=end).values():
            if overlaps(occurrence, start, end):
                found.add((spec.uid, instance_key(occurrence[0])))
    return found


def expected_objects(events: list[EventSpec], start: datetime, end: datetime) -> set[str]:
    return {uid for uid, _ in expected_instances(events, start, end)}


def instance_key(value: datetime | date) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return value.isoformat()
