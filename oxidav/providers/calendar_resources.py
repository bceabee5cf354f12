"""The DAV resources of CalDAV (RFC 4791): calendar home, calendars, calendar objects.

Every resource is built from rows already loaded (a ``CalendarInfo``, an ``ObjectInfo``), so
property reads are O(1) and a PROPFIND Depth 1 of a calendar is one query for all its objects
(without their data). Live properties come from a name -> getter table per class; allprop
keeps to RFC 4918's live properties, propname lists them all.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import Any
from urllib.parse import quote

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError, PRECONDITION_CODE_ProtectedProperty
from wsgidav.dav_provider import DAVCollection, DAVNonCollection

from oxidav.calendars.caldata import CalendarDataRequest, render_calendar_data
from oxidav.calendars.errors import AlreadyExists, CalendarError, NotFound
from oxidav.calendars.storage import CalendarInfo, ObjectInfo, StoredObject
from oxidav.calendars.timeutil import MAX_DATE_TIME as MAX_DT
from oxidav.calendars.timeutil import MIN_DATE_TIME as MIN_DT
from oxidav.calendars.timeutil import format_utc
from oxidav.providers.calendar_context import (
    CALENDAR,
    CALENDAR_COLOR,
    CALENDAR_CONTENT_TYPE,
    CALENDAR_DATA,
    CALENDAR_DESCRIPTION,
    CALENDAR_ORDER,
    CALENDAR_TIMEZONE,
    CURRENT_USER_PRINCIPAL,
    CURRENT_USER_PRIVILEGE_SET,
    GETCTAG,
    GETETAG,
    MAX_DATE_TIME,
    MAX_RESOURCE_SIZE,
    MIN_DATE_TIME,
    OWNER,
    RESOURCETYPE,
    SUPPORTED_CALENDAR_DATA,
    SUPPORTED_COMPONENT_SET,
    SUPPORTED_REPORT_SET,
    SYNC_TOKEN,
    C,
    CalendarBackend,
    UserRecord,
    condition,
    dav_error,
    href_element,
    privilege_set,
    text_element,
)
from oxidav.providers.calendar_props import (
    SETTABLE,
    calendar_data_element,
    collection_settings,
    property_setting,
)
from oxidav.providers.request_server import supported_reports
from oxidav.providers.urls import principal_href
from oxidav.sync import ChangeSet

Getter = Callable[[], Any]


class _Properties:
    """Mixin: live properties from a ``{name: getter}`` table, before WsgiDAV's own."""

    environ: dict[str, Any]
    owner_name: str

    def live_properties(self) -> dict[str, Getter]:
        return {
            CURRENT_USER_PRINCIPAL: self._current_user_principal,
            CURRENT_USER_PRIVILEGE_SET: privilege_set,
            OWNER: lambda: href_element(OWNER, principal_href(self.owner_name)),
            SUPPORTED_REPORT_SET: self._supported_report_set,
        }

    def prevent_locking(self) -> bool:
        """No LOCK on calendars or their objects: clients synchronise with ETags."""
        return True

    def _current_user_principal(self) -> etree._Element:
        user = self.environ.get("wsgidav.auth.user_name") or self.owner_name
        return href_element(CURRENT_USER_PRINCIPAL, principal_href(user))

    def _supported_report_set(self) -> etree._Element:
        element = etree.Element(SUPPORTED_REPORT_SET)
        for name in supported_reports(self):
            report = etree.SubElement(
                etree.SubElement(element, "{DAV:}supported-report"), "{DAV:}report"
            )
            etree.SubElement(report, name)
        return element


class CalDavCollection(_Properties, DAVCollection):  # type: ignore[misc]
    """Base of the CalDAV collections: the owner and the backend, read-only by default."""

    def __init__(
        self, path: str, environ: dict[str, Any], backend: CalendarBackend, owner_name: str
    ) -> None:
        super().__init__(path, environ)
        self.backend = backend
        self.owner_name = owner_name

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        if is_allprop:
            return names
        return names + [name for name in self.live_properties() if name not in names]

    def get_property_value(self, name: str) -> Any:
        getter = self.live_properties().get(name)
        if getter is not None:
            return getter()
        return super().get_property_value(name)

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)


class CalendarsRoot(CalDavCollection):
    """``/``: leads to the authenticated user's calendar home, nothing else."""

    def __init__(self, environ: dict[str, Any], backend: CalendarBackend, owner_name: str) -> None:
        super().__init__("/", environ, backend, owner_name)

    def get_member_names(self) -> list[str]:
        return [self.owner_name] if self.owner_name else []


class CalendarHome(CalDavCollection):
    """``/<user>/``: the calendar home (RFC 4791 §6.2.1); ``personal`` is created on first
    use (DESIGN §4). New calendars come from MKCALENDAR or extended MKCOL."""

    def __init__(
        self, path: str, environ: dict[str, Any], backend: CalendarBackend, user: UserRecord
    ) -> None:
        super().__init__(path, environ, backend, user.username)
        self.user = user

    def calendars(self) -> list[CalendarInfo]:
        return self.backend.store.ensure_default(self.user.id)

    def calendar_resource(self, info: CalendarInfo) -> CalendarCollection:
        path = f"{self.path.rstrip('/')}/{info.uri}/"
        return CalendarCollection(path, self.environ, self.backend, self.owner_name, info)

    def get_member_names(self) -> list[str]:
        return [info.uri for info in self.calendars()]

    def get_member_list(self) -> list[CalendarCollection]:
        return [self.calendar_resource(info) for info in self.calendars()]

    def _create(self, name: str, settings: dict[str, Any]) -> None:
        try:
            self.backend.store.create_calendar(self.user.id, name, **settings)
        except AlreadyExists:
            raise DAVError(405, "the calendar already exists") from None
        except ValueError as exc:
            raise DAVError(403, str(exc)) from None
        except CalendarError as exc:
            raise dav_error(exc) from None

    def create_calendar_collection(self, name: str, body: etree._Element | None) -> None:
        """MKCALENDAR (RFC 4791 §5.3.1)."""
        self._create(name, collection_settings(body, extended_mkcol=False))

    def create_extended_collection(self, name: str, body: etree._Element | None) -> None:
        """Extended MKCOL (RFC 5689 §3) with a calendar resourcetype."""
        self._create(name, collection_settings(body, extended_mkcol=True))

    def create_collection(self, name: str) -> None:
        """A plain MKCOL cannot say what to create: a calendar home holds calendars only."""
        raise DAVError(
            HTTP_FORBIDDEN,
            "use MKCALENDAR or an extended MKCOL to create a calendar",
            err_condition=condition("{DAV:}valid-resourcetype"),
        )


class CalendarCollection(CalDavCollection):
    """``/<user>/<calendar>/``: a calendar collection (RFC 4791 §4.2)."""

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: CalendarBackend,
        owner_name: str,
        info: CalendarInfo,
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self.info = info
        self._state: tuple[int, str] | None = None

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        info = self.info
        props.update(
            {
                RESOURCETYPE: self._resourcetype,
                CALENDAR_DESCRIPTION: lambda: text_element(CALENDAR_DESCRIPTION, info.description),
                CALENDAR_TIMEZONE: lambda: text_element(CALENDAR_TIMEZONE, info.timezone),
                SUPPORTED_COMPONENT_SET: self._component_set,
                SUPPORTED_CALENDAR_DATA: _supported_calendar_data,
                MAX_RESOURCE_SIZE: lambda: str(self.backend.store.max_resource_bytes),
                MIN_DATE_TIME: lambda: format_utc(MIN_DT),
                MAX_DATE_TIME: lambda: format_utc(MAX_DT),
                GETCTAG: lambda: self.sync_state()[1],
                SYNC_TOKEN: lambda: self.sync_state()[1],
                CALENDAR_COLOR: lambda: text_element(CALENDAR_COLOR, info.color),
                CALENDAR_ORDER: lambda: str(info.sort_order),
            }
        )
        if not info.description:
            props.pop(CALENDAR_DESCRIPTION)
        if not info.timezone:
            props.pop(CALENDAR_TIMEZONE)
        if not info.color:
            props.pop(CALENDAR_COLOR)
        return props

    def sync_state(self) -> tuple[int, str]:
        """(CTag, DAV:sync-token): both change with every object change (RFC 6578 §4)."""
        if self._state is None:
            self._state = self.backend.store.sync_state(self.info.id)
        return self._state

    def _resourcetype(self) -> etree._Element:
        element = etree.Element(RESOURCETYPE)
        etree.SubElement(element, "{DAV:}collection")
        etree.SubElement(element, CALENDAR)
        return element

    def _component_set(self) -> etree._Element:
        element = etree.Element(SUPPORTED_COMPONENT_SET)
        for name in self.info.components:
            etree.SubElement(element, C + "comp", name=name)
        return element

    @property
    def floating_tz(self) -> tzinfo:
        return self.info.floating_tz

    def get_display_name(self) -> str:
        return self.info.displayname or self.info.uri

    def get_creation_date(self) -> float:
        return self.info.created_at.timestamp()

    def object_href(self, name: str) -> str:
        return str(self.get_href()) + _quote_segment(name)

    def object_resource(self, obj: ObjectInfo) -> CalendarObjectResource:
        return CalendarObjectResource(
            f"{self.path.rstrip('/')}/{obj.name}", self.environ, self, obj
        )

    def get_member_names(self) -> list[str]:
        return [obj.name for obj in self.backend.store.list_objects(self.info.id)]

    def get_member_list(self) -> list[CalendarObjectResource]:
        return [self.object_resource(obj) for obj in self.backend.store.list_objects(self.info.id)]

    def get_member(self, name: str) -> CalendarObjectResource | None:
        obj = self.backend.store.get_object(self.info.id, name)
        return None if obj is None else self.object_resource(obj)

    def handle_delete(self) -> bool:
        """DELETE of the calendar: its objects and change log go with it."""
        self.backend.store.delete_calendar(self.info.id)
        return True

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        """PROPPATCH of displayname, calendar-description, calendar-timezone, calendar-color
        and calendar-order; everything else is protected (RFC 4791 §5.2)."""
        if name not in SETTABLE:
            raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)
        field, setting = property_setting(name, value)
        if dry_run:
            return
        try:
            self.info = self.backend.store.update_calendar(self.info.id, **{field: setting})
        except NotFound:
            raise DAVError(404) from None

    # --- SyncCollection (oxidav.providers.sync_report) -------------------------------------

    def sync_changes(self, token: str | None, limit: int | None) -> ChangeSet:
        return self.backend.store.changes(self.info.id, token, limit)

    def sync_member_href(self, name: str) -> str:
        return self.object_href(name)

    def sync_member_responses(
        self, names: Sequence[str], prop: etree._Element | None
    ) -> dict[str, list[tuple[str, Any]]]:
        from oxidav.providers.calendar_props import CalendarPropRequest

        request = CalendarPropRequest(prop)
        store = self.backend.store
        objects: dict[str, Any] = (
            store.get_objects(self.info.id, names)
            if request.wants_data or request.mode != "named"
            else store.object_infos(self.info.id, names)
        )
        return {
            name: request.properties(self.object_resource(obj), self.floating_tz)
            for name, obj in objects.items()
        }


class CalendarObjectResource(_Properties, DAVNonCollection):  # type: ignore[misc]
    """One calendar object resource (RFC 4791 §4.1): the stored text, served unchanged."""

    def __init__(
        self, path: str, environ: dict[str, Any], calendar: CalendarCollection, obj: ObjectInfo
    ) -> None:
        super().__init__(path, environ)
        self.calendar = calendar
        self.obj = obj
        self.owner_name = calendar.owner_name
        self._stored = obj if isinstance(obj, StoredObject) else None

    def stored(self) -> StoredObject:
        if self._stored is None:
            found = self.calendar.backend.store.get_object(self.calendar.info.id, self.obj.name)
            if found is None:
                raise DAVError(404)
            self._stored = found
        return self._stored

    def render(self, request: CalendarDataRequest, floating: tzinfo) -> str:
        stored = self.stored()
        if request.is_plain:
            return stored.data
        return render_calendar_data(stored.data, stored.parsed(), request, floating)

    def get_content_length(self) -> int:
        return self.obj.size

    def get_content_type(self) -> str:
        return f"{CALENDAR_CONTENT_TYPE}; component={self.obj.component_type.lower()}"

    def get_content(self) -> io.BytesIO:
        return io.BytesIO(self.stored().data.encode("utf-8"))

    def get_etag(self) -> str:
        return self.obj.etag

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return False

    def get_last_modified(self) -> float:
        return self.obj.modified_at.timestamp()

    def get_display_name(self) -> str:
        return str(self.name)

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        return names if is_allprop else [*names, CURRENT_USER_PRIVILEGE_SET, OWNER, CALENDAR_DATA]

    def get_property_value(self, name: str) -> Any:
        if name == GETETAG:
            # Quoted, exactly as in the ETag header (WsgiDAV would send it bare).
            return f'"{self.obj.etag}"'
        if name == CALENDAR_DATA:
            return calendar_data_element(self.stored().data)
        getter = self.live_properties().get(name)
        if getter is not None:
            return getter()
        return super().get_property_value(name)

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)


def _supported_calendar_data() -> etree._Element:
    """CALDAV:supported-calendar-data (RFC 4791 §5.2.4): iCalendar 2.0."""
    element = etree.Element(SUPPORTED_CALENDAR_DATA)
    etree.SubElement(
        element, C + "calendar-data", {"content-type": "text/calendar", "version": "2.0"}
    )
    return element


def _quote_segment(name: str) -> str:
    # The characters WsgiDAV's get_href() leaves unquoted, so both spell an href alike.
    return quote(name, safe="!*'(),$-_|.")
