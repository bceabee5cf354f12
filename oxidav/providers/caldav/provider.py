"""``CalendarsProvider``: CalDAV (RFC 4791) at ``/remote.php/dav/calendars/``.

URL layout below the mount point (docs/architecture.md#urls)::

    /                                   lists the authenticated user only
    /<user>/                            calendar home (RFC 4791 §6.2.1)
    /<user>/<calendar>/                 calendar collection (§4.2)
    /<user>/<calendar>/<object>.ics     calendar object resource (§4.1)

Another user's paths answer 404 (the authz middleware says so first; the provider checks again
so that it is safe when embedded without it). Calendars others shared with the user appear in
their home as ``<uri>_shared_by_<owner>`` (``CalendarHome.shared_calendar``); every write into
one is authorized first (``calendar_writes.authorize_write``). PUT, DELETE, COPY and MOVE of
objects are handled by ``calendar_writes``; MKCALENDAR and extended MKCOL by the home
(``OxiRequestServer`` calls it); the REPORTs live in ``calendar_reports``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from wsgidav.dav_error import HTTP_BAD_GATEWAY, HTTP_FORBIDDEN, HTTP_NOT_FOUND, DAVError

from oxidav.calendars.reads import CalendarInfo
from oxidav.calendars.store import DEFAULT_CALENDAR_URI
from oxidav.db import Database
from oxidav.environ import ENVIRON_CALENDARS
from oxidav.providers.caldav import writes as calendar_writes
from oxidav.providers.caldav.context import CalDavPath, CalendarBackend
from oxidav.providers.caldav.resources import (
    CalDavCollection,
    CalendarCollection,
    CalendarHome,
    CalendarObjectResource,
    CalendarsRoot,
)
from oxidav.providers.dav.collections import finite_depth
from oxidav.providers.dav.provider import CollectionProvider
from oxidav.settings import Settings


class CalendarsProvider(CollectionProvider[CalendarBackend, CalendarInfo]):
    """Serves every user's calendars from the database (``oxidav.calendars``)."""

    cache_key = ENVIRON_CALENDARS
    default_uri = DEFAULT_CALENDAR_URI

    def __init__(self, db: Database, settings: Settings) -> None:
        super().__init__(CalendarBackend(db, settings))

    def get_resource_inst(
        self, path: str, environ: dict[str, Any]
    ) -> CalDavCollection | CalendarObjectResource | None:
        target = CalDavPath.parse(path)
        if target.kind == "root":
            return CalendarsRoot(environ, self.backend, self.authenticated(environ))
        if target.kind == "invalid" or not self.visible(environ, target.user):
            return None
        home = self._home(environ, target)
        if home is None or target.kind == "home":
            return home
        calendar = self._collection(environ, home, target)
        if calendar is None or target.kind == "calendar":
            return calendar
        return calendar.get_member(target.name)

    def _home(self, environ: dict[str, Any], target: CalDavPath) -> CalendarHome | None:
        user = self.backend.user(target.user)
        if user is None:
            return None
        self.backend.prepare_home(user.id)
        return CalendarHome(f"/{target.user}/", environ, self.backend, user)

    def _collection(
        self, environ: dict[str, Any], home: CalendarHome, target: CalDavPath
    ) -> CalendarCollection | None:
        info = self.cached_collection(environ, home.user.id, target.calendar)
        if info is not None:
            return home.own_resource(info)
        return home.shared_member(target.calendar)

    def _transfer(
        self, environ: dict[str, Any], start_response: Any, source: CalDavPath
    ) -> Iterable[bytes]:
        """COPY / MOVE of an object; the Destination must be an object URL of the same user
        in this provider (else 502, as WsgiDAV answers cross-provider requests)."""
        if not self.visible(environ, source.user):
            raise DAVError(HTTP_NOT_FOUND)
        destination = unquote(urlsplit(environ.get("HTTP_DESTINATION", "")).path)
        base = environ.get("SCRIPT_NAME", "").rstrip("/")
        if not destination or not destination.startswith(base + "/"):
            raise DAVError(HTTP_BAD_GATEWAY, "the destination is not a calendar object URL")
        target = CalDavPath.parse(destination[len(base) :])
        if target.kind != "object" or target.user != source.user:
            raise DAVError(HTTP_FORBIDDEN, "objects move between calendars of one user only")
        home = self._home(environ, source)
        if home is None:
            raise DAVError(HTTP_NOT_FOUND)
        calendar = self._collection(environ, home, source)
        target_calendar = self._collection(environ, home, target)
        calendar_writes.authorize_transfer(
            environ, (calendar, source.name), (target_calendar, target.name)
        )
        return calendar_writes.transfer_object(
            environ, start_response, calendar, source.name, target_calendar, target.name
        )

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method == "PROPFIND":
            finite_depth(environ)
        target = CalDavPath.parse(environ["PATH_INFO"])
        if method in ("PUT", "DELETE") and target.kind == "object":
            if not self.visible(environ, target.user):
                raise DAVError(HTTP_NOT_FOUND)
            home = self._home(environ, target)
            calendar = None if home is None else self._collection(environ, home, target)
            calendar_writes.authorize_write(environ, calendar, target.name)
            if method == "PUT":
                return calendar_writes.put_object(environ, start_response, calendar, target.name)
            return calendar_writes.delete_object(environ, start_response, calendar, target.name)
        if method in ("COPY", "MOVE") and target.kind == "object":
            return self._transfer(environ, start_response, target)
        if method in ("MKCOL", "MKCALENDAR", "DELETE") and target.kind == "calendar":
            home = self._home(environ, target)
            if home is not None:
                self.forget_collection(environ, home.user.id, target.calendar)
        return default_handler(environ, start_response)  # type: ignore[no-any-return]
