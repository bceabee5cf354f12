"""CalDAV REPORTs: calendar-query (RFC 4791 §7.8), calendar-multiget (§7.9), free-busy-query
(§7.10) and, through ``sync_report``, sync-collection (RFC 6578) on calendars.

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
from urllib.parse import unquote, urlsplit

from lxml import etree
from wsgidav import util, xml_tools
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.calendars.errors import (
    CalendarError,
    InvalidCalendarData,
    InvalidFilter,
    InvalidTimeRange,
)
from oxidav.calendars.filters import parse_filter, parse_time_range
from oxidav.calendars.freebusy import BusyTime, format_freebusy
from oxidav.calendars.timeutil import timezone_by_id, timezone_from_ical
from oxidav.providers.calendar_context import CALENDAR_CONTENT_TYPE, C, dav_error
from oxidav.providers.calendar_props import CalendarPropRequest
from oxidav.providers.calendar_resources import (
    CalendarCollection,
    CalendarHome,
    CalendarObjectResource,
)
from oxidav.providers.request_server import register_report
from oxidav.providers.sync_report import (
    INSUFFICIENT_STORAGE,
    NOT_FOUND,
    SyncCollectionReport,
    status_response,
)

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
        limit = _limit(body)
        multistatus = xml_tools.make_multistatus_el()
        for obj in matched[:limit]:
            obj_res = calendar.object_resource(obj)
            util.add_property_response(
                multistatus, obj_res.get_href(), props.properties(obj_res, zone)
            )
        if limit is not None and len(matched) > limit:
            # RFC 5323 §5.17 / RFC 6352 §8.6.1: the rest is announced by a 507.
            status_response(
                multistatus,
                resource.get_href(),
                INSUFFICIENT_STORAGE,
                error="{DAV:}number-of-matches-within-limits",
            )
        return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


class CalendarMultigetReport:
    """RFC 4791 §7.9: the named objects of one calendar; an href that names no object of it
    gets its own 404 response."""

    name = CALENDAR_MULTIGET

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, CalendarCollection)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: CalendarCollection,
        body: etree._Element,
    ) -> Iterable[bytes]:
        props = CalendarPropRequest.from_body(body)
        hrefs = [(el.text or "").strip() for el in body.findall("{DAV:}href")]
        base = unquote(str(resource.get_href()))
        names = {href: _member_name(base, href) for href in hrefs}
        objects = resource.backend.store.get_objects(
            resource.info.id, [name for name in names.values() if name]
        )
        multistatus = xml_tools.make_multistatus_el()
        for href in hrefs:
            obj = objects.get(names[href] or "")
            if obj is None:
                status_response(multistatus, href, NOT_FOUND)
            else:
                obj_res = resource.object_resource(obj)
                util.add_property_response(
                    multistatus, href, props.properties(obj_res, resource.floating_tz)
                )
        return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


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
                [resource]
                if isinstance(resource, CalendarCollection)
                else resource.get_member_list()
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
    text = body.findtext("{DAV:}limit/{DAV:}nresults")
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise DAVError(HTTP_BAD_REQUEST, "DAV:limit needs an integer nresults") from None
    if value < 0:
        raise DAVError(HTTP_BAD_REQUEST, "nresults must not be negative")
    return value


def _member_name(base: str, href: str) -> str | None:
    """The object name an href names inside the collection at ``base`` (decoded), else None."""
    path = unquote(urlsplit(href).path)
    if not path.startswith(base):
        return None
    name = path[len(base) :]
    return name if name and "/" not in name else None


REPORT_NAMES = (CALENDAR_QUERY, CALENDAR_MULTIGET, FREE_BUSY_QUERY, SyncCollectionReport.name)

for _report in (
    CalendarQueryReport(),
    CalendarMultigetReport(),
    FreeBusyQueryReport(),
    SyncCollectionReport(CalendarCollection),
):
    register_report(_report)
