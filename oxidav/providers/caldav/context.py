"""Shared pieces of the CalDAV provider: the backend, the URL grammar, XML names, errors.

``CalendarBackend`` holds what lives as long as the process: the ``CalendarStore`` next to
the user lookups of ``HomeBackend``. ``CalDavPath`` parses a path below the provider's mount
point (``/<user>/<calendar>/<object>``). ``dav_error`` turns a calendars-room error into the
WsgiDAV error whose body is the RFC 4791 precondition element (never a 500).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wsgidav.dav_error import DAVError

from oxidav.calendars.errors import CALDAV_NS, CalendarError, PreconditionFailed
from oxidav.calendars.rules import RecurrenceLimits
from oxidav.calendars.store import CalendarStore
from oxidav.db import Database
from oxidav.providers.dav import xml as dav_xml
from oxidav.providers.dav.users import HomeBackend
from oxidav.providers.dav.xml import condition
from oxidav.settings import Settings

APPLE_NS = "http://apple.com/ns/ical/"
C = f"{{{CALDAV_NS}}}"
ICAL = f"{{{APPLE_NS}}}"

CALENDAR = C + "calendar"
CALENDAR_DATA = C + "calendar-data"
CALENDAR_DESCRIPTION = C + "calendar-description"
CALENDAR_TIMEZONE = C + "calendar-timezone"
SUPPORTED_COMPONENT_SET = C + "supported-calendar-component-set"
SUPPORTED_CALENDAR_DATA = C + "supported-calendar-data"
MAX_RESOURCE_SIZE = C + "max-resource-size"
MIN_DATE_TIME = C + "min-date-time"
MAX_DATE_TIME = C + "max-date-time"
CALENDAR_COLOR = ICAL + "calendar-color"
CALENDAR_ORDER = ICAL + "calendar-order"

#: Privileges of an owner on everything below their calendar home (RFC 3744 §3,
#: RFC 4791 §6.1.1 for read-free-busy).
OWNER_PRIVILEGES = (*dav_xml.OWNER_PRIVILEGES, C + "read-free-busy")
CALENDAR_CONTENT_TYPE = "text/calendar; charset=utf-8"


@dataclass(frozen=True)
class CalDavPath:
    """A path below the provider's mount point.

    ``kind`` is "root" (``/``), "home" (``/<user>/``), "calendar" (``/<user>/<cal>/``),
    "object" (``/<user>/<cal>/<name>``) or "invalid".
    """

    kind: str
    user: str = ""
    calendar: str = ""
    name: str = ""

    @classmethod
    def parse(cls, path: str) -> CalDavPath:
        parts = [part for part in path.split("/") if part]
        if len(parts) > 3 or any(part in (".", "..") for part in parts):
            return cls("invalid")
        kinds = ("root", "home", "calendar", "object")
        values = [*parts, "", "", ""][:3]
        return cls(kinds[len(parts)], *values)

    @property
    def calendar_path(self) -> str:
        return f"/{self.user}/{self.calendar}/"


class CalendarBackend(HomeBackend[CalendarStore]):
    """The calendar store and user lookups of one provider instance (a new home gets
    ``personal``)."""

    def __init__(self, db: Database, settings: Settings) -> None:
        recurrence = RecurrenceLimits(
            min_interval=settings.caldav_min_recurrence_interval,
            max_instances=settings.caldav_max_instances,
            max_work=settings.caldav_max_recurrence_work,
        )
        store = CalendarStore(
            db, max_resource_bytes=settings.max_resource_bytes, recurrence=recurrence
        )
        super().__init__(db, settings, store)


def dav_error(exc: Exception, href_of: Any = None) -> DAVError:
    """The DAVError for a calendars-room error; ``href_of(name)`` builds the href of the
    object named in a ``no-uid-conflict`` (RFC 4791 §5.3.2.1)."""
    if isinstance(exc, CalendarError):
        href = None
        if exc.href is not None and href_of is not None:
            href = href_of(exc.href)
        return DAVError(exc.status, str(exc), err_condition=condition(exc.condition, href))
    if isinstance(exc, PreconditionFailed):
        return DAVError(412, str(exc))
    status = getattr(exc, "status", 500)
    return DAVError(status, str(exc))
