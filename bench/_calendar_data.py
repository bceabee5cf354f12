"""The calendar data of the CalDAV benchmarks: the events they PUT and the MKCALENDAR body.

No import of ``oxidav`` or of the test support: ``_put_cpu_worker`` imports this before it
imports the ``oxidav`` package it measures.
"""

from __future__ import annotations

from datetime import datetime, timedelta

CAL = "urn:ietf:params:xml:ns:caldav"
ZONES = ("UTC", "Europe/Berlin", "America/New_York")

MKCALENDAR = (
    '<?xml version="1.0" encoding="utf-8"?>'
    f'<C:mkcalendar xmlns:D="DAV:" xmlns:C="{CAL}"><D:set><D:prop>'
    "<D:displayname>Bench</D:displayname></D:prop></D:set></C:mkcalendar>"
)


def event(i: int, summary: str = "") -> str:
    """Event ``i``: every tenth a weekly series (half of them with an end), the rest single
    events spread over 2026 in three time zones."""
    zone = ZONES[i % 3]
    start = datetime(2026, 1, 1, 7) + timedelta(hours=(i * 37) % 8760)
    stamp = start.strftime("%Y%m%dT%H%M%S")
    when = f"DTSTART:{stamp}Z" if zone == "UTC" else f"DTSTART;TZID={zone}:{stamp}"
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//oxidav bench//EN",
        "BEGIN:VEVENT",
        f"UID:bench-{i:05d}",
        "DTSTAMP:20260101T000000Z",
        when,
        "DURATION:PT1H",
        f"SUMMARY:{summary or f'Event {i}'}",
        f"DESCRIPTION:Benchmark event number {i} with a little text to parse",
        f"LOCATION:Room {i % 50}",
    ]
    if i % 10 == 0:
        lines.append("RRULE:FREQ=WEEKLY" + (";COUNT=20" if i % 20 == 0 else ""))
    lines += ["END:VEVENT", "END:VCALENDAR"]
    return "\r\n".join(lines) + "\r\n"
