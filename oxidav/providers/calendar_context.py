"""Shared pieces of the CalDAV provider: the backend, the URL grammar, XML names, errors.

``CalendarBackend`` holds what lives as long as the process: the ``CalendarStore``, the
settings and a short user-id cache. ``CalDavPath`` parses a path below the provider's mount
point (``/<user>/<calendar>/<object>``). ``dav_error`` turns a calendars-room error into the
WsgiDAV error whose body is the RFC 4791 precondition element (never a 500).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from lxml import etree
from sqlalchemy import select
from wsgidav.dav_error import DAVError, DAVErrorCondition

from oxidav.calendars.errors import CALDAV_NS, CalendarError, PreconditionFailed
from oxidav.calendars.storage import CalendarStore
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.settings import Settings

CALSERVER_NS = "http://calendarserver.org/ns/"
APPLE_NS = "http://apple.com/ns/ical/"
C = f"{{{CALDAV_NS}}}"
CS = f"{{{CALSERVER_NS}}}"
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
CALENDAR_HOME_SET = C + "calendar-home-set"
CALENDAR_USER_ADDRESS_SET = C + "calendar-user-address-set"
CALENDAR_USER_TYPE = C + "calendar-user-type"
GETCTAG = CS + "getctag"
CALENDAR_COLOR = ICAL + "calendar-color"
CALENDAR_ORDER = ICAL + "calendar-order"
SYNC_TOKEN = "{DAV:}sync-token"
GETETAG = "{DAV:}getetag"
DISPLAYNAME = "{DAV:}displayname"
RESOURCETYPE = "{DAV:}resourcetype"
SUPPORTED_REPORT_SET = "{DAV:}supported-report-set"
CURRENT_USER_PRIVILEGE_SET = "{DAV:}current-user-privilege-set"
CURRENT_USER_PRINCIPAL = "{DAV:}current-user-principal"
OWNER = "{DAV:}owner"

#: Privileges of an owner on everything below their calendar home (RFC 3744 §3,
#: RFC 4791 §6.1.1 for read-free-busy).
OWNER_PRIVILEGES = (
    "{DAV:}read",
    "{DAV:}write",
    "{DAV:}write-properties",
    "{DAV:}write-content",
    "{DAV:}bind",
    "{DAV:}unbind",
    "{DAV:}read-current-user-privilege-set",
    C + "read-free-busy",
)
USER_CACHE_SECONDS = 30.0
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


@dataclass(frozen=True)
class UserRecord:
    id: int
    username: str
    display_name: str
    email: str | None


class CalendarBackend:
    """The calendar store and user lookups of one provider instance."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.store = CalendarStore(db, max_resource_bytes=settings.max_resource_bytes)
        self._users: dict[str, tuple[float, UserRecord | None]] = {}
        self._defaults: set[int] = set()
        self._lock = threading.Lock()

    def ensure_default_once(self, user_id: int) -> None:
        """The first use of a calendar home in this process creates ``personal`` if the user
        has no calendar at all (DESIGN §4); one query per user per process."""
        with self._lock:
            if user_id in self._defaults:
                return
        self.store.ensure_default(user_id)
        with self._lock:
            self._defaults.add(user_id)

    def user(self, username: str) -> UserRecord | None:
        """The user named ``username`` (None if there is none), cached for a few seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._users.get(username)
        if cached is not None and now - cached[0] < USER_CACHE_SECONDS:
            return cached[1]
        with self.db.read() as session:
            row = session.execute(
                select(User.id, User.username, User.display_name, User.email).where(
                    User.username == username
                )
            ).one_or_none()
        record = None if row is None else UserRecord(int(row[0]), row[1], row[2] or "", row[3])
        with self._lock:
            if len(self._users) > 10_000:
                self._users.clear()
            self._users[username] = (now, record)
        return record


def condition(clark_name: str, href: str | None = None) -> DAVErrorCondition:
    """A ``DAV:error`` body naming ``clark_name``, with an optional ``DAV:href`` inside."""
    cond = DAVErrorCondition(clark_name)
    if href is not None:
        cond.hrefs.append(href)
    return cond


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


def href_element(tag: str, *hrefs: str) -> etree._Element:
    element = etree.Element(tag)
    for href in hrefs:
        etree.SubElement(element, "{DAV:}href").text = href
    return element


def privilege_set(privileges: tuple[str, ...] = OWNER_PRIVILEGES) -> etree._Element:
    """DAV:current-user-privilege-set (RFC 3744 §5.4)."""
    element = etree.Element(CURRENT_USER_PRIVILEGE_SET)
    for name in privileges:
        etree.SubElement(etree.SubElement(element, "{DAV:}privilege"), name)
    return element


def text_element(tag: str, text: str) -> etree._Element:
    element = etree.Element(tag)
    element.text = text
    return element


def finite_depth(environ: dict[str, Any]) -> None:
    """PROPFIND with Depth: infinity (or none, which means infinity) is answered as Depth: 1,
    as SabreDAV does: the calendar tree is at most two levels deep below a home, and a client
    that omits the header still gets its answer (RFC 4918 §9.1 lets a server limit depth)."""
    if environ.get("HTTP_DEPTH", "infinity").strip().lower() not in ("0", "1"):
        environ["HTTP_DEPTH"] = "1"
