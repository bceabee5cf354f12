"""CalDAV REPORTs: calendar-query (RFC 4791 §7.8), free-busy-query (§7.10; on a home, the
user's own calendars, not those shared with them), and the generic
calendar-multiget (§7.9, ``dav_reports.MultigetReport``) and sync-collection (RFC 6578,
``sync_report``) on calendars.

calendar-query runs through ``CalendarStore.query``: an SQL pre-filter on the indexed
component type and time bounds, then the exact filter on those candidates. Floating times and
DATEs are read in the query's CALDAV:timezone (or RFC 7809 timezone-id), else the calendar's
calendar-timezone, else UTC. It honours ``DAV:limit`` (RFC 5323 §5.17) as CardDAV does: at
most nresults objects, then a 507 for the request-URI.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import tzinfo
from typing import Any

from lxml import etree

from oxidav.calendars.errors import (
    CalendarError,
    InvalidCalendarData,
    InvalidFilter,
    InvalidTimeRange,
)
from oxidav.calendars.filters import parse_filter, parse_time_range
from oxidav.calendars.freebusy import BusyTime, format_freebusy
from oxidav.calendars.timeutil import timezone_by_id, timezone_from_ical
from oxidav.providers.caldav.context import CALENDAR_CONTENT_TYPE, C, dav_error
from oxidav.providers.caldav.props import CalendarPropRequest
from oxidav.providers.caldav.resources import (
    CalendarCollection,
    CalendarHome,
    CalendarObjectResource,
)
from oxidav.providers.dav.reports import MultigetReport, matches_response, nresults
from oxidav.providers.dav.request_server import Report
from oxidav.providers.dav.sync_report import SyncCollectionReport

CALENDAR_QUERY = C + "calendar-query"
CALENDAR_MULTIGET = C + "calendar-multiget"
FREE_BUSY_QUERY = C + "free-busy-query"


def query_timezone(body: etree._Element, calendar: CalendarCollection) -> tzinfo:
    """The floating time zone of a calendar-query (RFC 4791 §9.8, RFC 7809 §5.2)."""
    text = body.findtext(C + "timezone")
    if text is not None and text.strip():
        zone = timezone_from_ical(text)
        if zone is None:
            raise dav_error(InvalidCalendarData("CALDAV:timezone holds no usable VTIMEZONE"))
        return zone
    tzid = body.findtext(C + "timezone-id")
    if tzid is not None and tzid.strip():
        zone = timezone_by_id(tzid.strip())
        if zone is None:
            raise dav_error(InvalidFilter(f"unknown timezone-id {tzid.strip()!r}"))
        return zone
    return calendar.floating_tz


class CalendarQueryReport:
    """RFC 4791 §7.8 on a calendar (its objects) or on one calendar object (itself)."""

    name = CALENDAR_QUERY

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, CalendarCollection | CalendarObjectResource)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: CalendarCollection | CalendarObjectResource,
        body: etree._Element,
    ) -> Iterable[bytes]:
        calendar = resource if isinstance(resource, CalendarCollection) else resource.calendar
        props = CalendarPropRequest.from_body(body)
        filter_el = body.find(C + "filter")
        try:
            if filter_el is None:
                raise InvalidFilter("calendar-query needs a CALDAV:filter")
            root = parse_filter(filter_el)
            zone = query_timezone(body, calendar)
            store = calendar.backend.store
            if isinstance(resource, CalendarObjectResource):
                from oxidav.calendars.evaluate import FilterEvaluator

                stored = resource.stored()
                matched = [stored] if FilterEvaluator(zone).matches(stored.parsed(), root) else []
            else:
                matched = store.query(calendar.info, root, zone)
        except CalendarError as exc:
            raise dav_error(exc) from None
        # RFC 5323 §5.17 / RFC 6352 §8.6.1: at most nresults, the rest announced by a 507.
        limit = _limit(body)
        found = [calendar.member_resource(obj) for obj in matched[:limit]]
        return matches_response(
            environ,
            start_response,
            resource.get_href(),
            ((obj.get_href(), props.properties(obj, zone)) for obj in found),
            truncated=limit is not None and len(matched) > limit,
        )


class FreeBusyQueryReport:
    """RFC 4791 §7.10: busy time of one calendar, or of all calendars of a home, as one
    VFREEBUSY (200 text/calendar, not a multistatus)."""

    name = FREE_BUSY_QUERY

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, CalendarCollection | CalendarHome)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: CalendarCollection | CalendarHome,
        body: etree._Element,
    ) -> Iterable[bytes]:
        range_el = body.find(C + "time-range")
        try:
            if range_el is None:
                raise InvalidTimeRange("free-busy-query needs a CALDAV:time-range")
            rng = parse_time_range(range_el)
            if rng.start is None or rng.end is None:
                raise InvalidTimeRange("free-busy-query needs both start and end")
            calendars = (
                [resource] if isinstance(resource, CalendarCollection) else resource.own_members()
            )
            busy: BusyTime = {}
            for calendar in calendars:
                found = calendar.backend.store.busy_time(calendar.info, rng, calendar.floating_tz)
                for fbtype, periods in found.items():
                    busy.setdefault(fbtype, []).extend(periods)
            text = format_freebusy(busy, rng)
        except CalendarError as exc:
            raise dav_error(exc) from None
        data = text.encode("utf-8")
        start_response(
            "200 OK",
            [("Content-Type", CALENDAR_CONTENT_TYPE), ("Content-Length", str(len(data)))],
        )
        return [data]


def _limit(body: etree._Element) -> int | None:
    """``DAV:limit/DAV:nresults`` of a calendar-query (RFC 5323 §5.17), if any."""
    if body.find("{DAV:}limit/{DAV:}nresults") is None:
        return None
    return nresults(body.find("{DAV:}limit"))


REPORT_NAMES = (CALENDAR_QUERY, CALENDAR_MULTIGET, FREE_BUSY_QUERY, SyncCollectionReport.name)

#: The REPORTs of CalDAV (``make_app`` hands them to the request server).
REPORTS: tuple[Report, ...] = (
    CalendarQueryReport(),
    MultigetReport(CALENDAR_MULTIGET, CalendarCollection, CalendarPropRequest),
    FreeBusyQueryReport(),
    SyncCollectionReport(CalendarCollection),
)
