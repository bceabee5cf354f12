"""Calendar properties in requests: what a REPORT asks to see of each object, and the
collection properties MKCALENDAR (RFC 4791 §5.3.1), extended MKCOL (RFC 5689) and PROPPATCH
set.

``CalendarPropRequest`` reads the ``DAV:prop`` / ``allprop`` / ``propname`` of a REPORT body,
including how ``CALDAV:calendar-data`` is to be shaped (§9.6), and produces each object's
property list for ``util.add_property_response``. ``collection_settings`` turns a DAV:prop
element into ``CalendarStore`` fields.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError

from oxidav.calendars.caldata import CalendarDataRequest, parse_calendar_data
from oxidav.calendars.errors import CalendarError, InvalidCalendarData
from oxidav.calendars.timeutil import timezone_from_ical
from oxidav.calendars.validation import KNOWN_COMPONENTS
from oxidav.providers.caldav.context import (
    CALENDAR,
    CALENDAR_COLOR,
    CALENDAR_DATA,
    CALENDAR_DESCRIPTION,
    CALENDAR_ORDER,
    CALENDAR_TIMEZONE,
    SUPPORTED_COMPONENT_SET,
    C,
    dav_error,
)
from oxidav.providers.dav.reports import ReportProps
from oxidav.providers.dav.xml import DISPLAYNAME, RESOURCETYPE, condition, element_text

if TYPE_CHECKING:
    from oxidav.providers.caldav.resources import CalendarObjectResource

#: Collection property -> ``CalendarStore`` field it is stored in.
SETTABLE = {
    DISPLAYNAME: "displayname",
    CALENDAR_DESCRIPTION: "description",
    CALENDAR_TIMEZONE: "timezone",
    CALENDAR_COLOR: "color",
    CALENDAR_ORDER: "sort_order",
}


class CalendarPropRequest(ReportProps):
    """The properties a REPORT asks for: names, and how to render ``calendar-data``."""

    data_property = CALENDAR_DATA

    def __init__(self, prop: etree._Element | None, mode: str = "named") -> None:
        self.calendar_data = CalendarDataRequest()
        super().__init__(prop, mode)

    def read_data_request(self, element: etree._Element) -> None:
        try:
            self.calendar_data = parse_calendar_data(element)
        except CalendarError as exc:
            raise dav_error(exc) from None

    def properties(
        self, resource: CalendarObjectResource, floating: tzinfo
    ) -> list[tuple[str, Any]]:
        return self.property_list(resource, lambda: resource.render(self.calendar_data, floating))


def property_setting(name: str, element: etree._Element | None) -> tuple[str, Any]:
    """The ``CalendarStore`` field and value a property element sets (None removes it);
    raises DAVError for a protected property or an invalid value."""
    field = SETTABLE.get(name)
    if field is None:
        raise DAVError(
            HTTP_FORBIDDEN, err_condition=condition("{DAV:}cannot-modify-protected-property")
        )
    if element is None:
        return field, 0 if field == "sort_order" else ""
    text = element_text(element).strip() if field != "timezone" else element_text(element)
    if field == "sort_order":
        try:
            return field, int(text or "0")
        except ValueError:
            raise DAVError(HTTP_FORBIDDEN, "calendar-order must be an integer") from None
    if field == "timezone" and text.strip() and timezone_from_ical(text) is None:
        raise dav_error(InvalidCalendarData("calendar-timezone holds no usable VTIMEZONE"))
    if len(text) > (255 if field in ("displayname", "color") else 100_000):
        raise DAVError(HTTP_FORBIDDEN, f"{name} is too long")
    return field, text


def component_set(element: etree._Element) -> list[str]:
    """The component names of a CALDAV:supported-calendar-component-set element."""
    names = [(comp.get("name") or "").upper() for comp in element.iter(C + "comp")]
    if not names or not set(names) <= KNOWN_COMPONENTS:
        raise DAVError(
            HTTP_FORBIDDEN,
            "unsupported component set",
            err_condition=condition(C + "supported-calendar-component"),
        )
    return names


def collection_settings(body: etree._Element | None, *, extended_mkcol: bool) -> dict[str, Any]:
    """``create_collection`` keyword arguments from an MKCALENDAR or extended MKCOL body.

    For extended MKCOL the resourcetype must name a calendar (else DAV:valid-resourcetype).
    Properties the server does not keep are ignored."""
    settings: dict[str, Any] = {}
    if body is None:
        if extended_mkcol:
            raise DAVError(HTTP_FORBIDDEN, err_condition=condition("{DAV:}valid-resourcetype"))
        return settings
    expected = "{DAV:}mkcol" if extended_mkcol else C + "mkcalendar"
    if body.tag != expected:
        raise DAVError(400, f"the body must be a {expected} element")
    is_calendar = not extended_mkcol
    for prop in body.iterfind("{DAV:}set/{DAV:}prop/*"):
        if prop.tag == RESOURCETYPE:
            kinds = {child.tag for child in prop}
            if not kinds <= {"{DAV:}collection", CALENDAR}:
                raise DAVError(
                    HTTP_FORBIDDEN,
                    "only calendars can be created here",
                    err_condition=condition("{DAV:}valid-resourcetype"),
                )
            is_calendar = CALENDAR in kinds
        elif prop.tag == SUPPORTED_COMPONENT_SET:
            settings["components"] = component_set(prop)
        elif prop.tag in SETTABLE:
            field, value = property_setting(prop.tag, prop)
            settings[field] = value
    if not is_calendar:
        raise DAVError(
            HTTP_FORBIDDEN,
            "a calendar home holds calendars only",
            err_condition=condition("{DAV:}valid-resourcetype"),
        )
    return settings
