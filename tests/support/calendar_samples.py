"""Helpers of the calendars tests: iCalendar and filter XML builders."""

from __future__ import annotations

from lxml import etree

from oxidav.calendars.filters import CompFilter, parse_filter

CAL_NS = "urn:ietf:params:xml:ns:caldav"


def make_ics(*components: str, extra: str = "") -> str:
    """A VCALENDAR around ``components`` (each the lines of one component)."""
    body = "\n".join(c.strip("\n") for c in components)
    text = f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//EN\n{extra}{body}\nEND:VCALENDAR\n"
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def filter_xml(inner: str) -> str:
    return (
        f'<C:filter xmlns:C="{CAL_NS}"><C:comp-filter name="VCALENDAR">{inner}'
        "</C:comp-filter></C:filter>"
    )


def make_filter(inner: str) -> CompFilter:
    """A filter with ``inner`` inside the VCALENDAR comp-filter (prefix ``C:``)."""
    return parse_filter(etree.fromstring(filter_xml(inner)))


def event(uid: str, *props: str) -> str:
    lines = ["BEGIN:VEVENT", f"UID:{uid}", "DTSTAMP:20260101T000000Z", *props, "END:VEVENT"]
    return "\n".join(lines)
