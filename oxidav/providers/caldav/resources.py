"""The DAV resources of CalDAV (RFC 4791): calendar home, calendars, calendar objects.

Every resource is built from rows already loaded (a ``CalendarInfo``, an ``ObjectInfo``), so
property reads are O(1) and a PROPFIND Depth 1 of a calendar is one query for all its objects
(without their data). Live properties come from a name -> getter table per class; allprop
keeps to RFC 4918's live properties, propname lists them all.

A calendar home lists the user's own calendars, then the calendars others shared with them
(``SharedCalendarCollection``, named ``<uri>_shared_by_<owner>``; ``dav_shared``); the grants
are asked of ``oxidav.authz.grants.collections``, one grant-set read for the whole listing and one
query for all the shared calendars' rows.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from datetime import tzinfo
from typing import Any

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError, PRECONDITION_CODE_ProtectedProperty

from oxidav.authz.grants.collections import Reach
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.calendars.caldata import CalendarDataRequest, render_calendar_data
from oxidav.calendars.errors import AlreadyExists, CalendarError, NotFound
from oxidav.calendars.reads import CalendarInfo, ObjectInfo, StoredObject
from oxidav.calendars.timeutil import MAX_DATE_TIME as MAX_DT
from oxidav.calendars.timeutil import MIN_DATE_TIME as MIN_DT
from oxidav.calendars.timeutil import format_utc
from oxidav.providers.caldav.context import (
    CALENDAR,
    CALENDAR_COLOR,
    CALENDAR_CONTENT_TYPE,
    CALENDAR_DATA,
    CALENDAR_DESCRIPTION,
    CALENDAR_ORDER,
    CALENDAR_TIMEZONE,
    MAX_DATE_TIME,
    MAX_RESOURCE_SIZE,
    MIN_DATE_TIME,
    OWNER_PRIVILEGES,
    SUPPORTED_CALENDAR_DATA,
    SUPPORTED_COMPONENT_SET,
    C,
    CalendarBackend,
    dav_error,
)
from oxidav.providers.caldav.props import (
    SETTABLE,
    CalendarPropRequest,
    collection_settings,
    property_setting,
)
from oxidav.providers.dav.collections import (
    Getter,
    ObjectCollection,
    OwnedCollection,
    TextObjectResource,
    row_etag,
)
from oxidav.providers.dav.home import CollectionHome
from oxidav.providers.dav.shared import (
    SharedObjectCollection,
    SharedState,
    forget_shares,
    shared_name,
)
from oxidav.providers.dav.users import UserRecord
from oxidav.providers.dav.xml import (
    CURRENT_USER_PRIVILEGE_SET,
    DISPLAYNAME,
    GETETAG,
    OWNER,
    condition,
    text_element,
)
from oxidav.sync import ChangeSet
from oxidav.urls import calendar_home_href


class CalDavCollection(OwnedCollection[CalendarBackend]):
    """Base of the CalDAV collections: the owner and the backend, read-only by default."""

    privileges: tuple[str, ...] = OWNER_PRIVILEGES


class CalendarsRoot(CalDavCollection):
    """``/``: leads to the authenticated user's calendar home, nothing else."""

    def __init__(self, environ: dict[str, Any], backend: CalendarBackend, owner_name: str) -> None:
        super().__init__("/", environ, backend, owner_name)

    def get_member_names(self) -> list[str]:
        return [self.owner_name] if self.owner_name else []


class CalendarHome(
    CollectionHome[CalendarBackend, CalendarInfo, "CalendarCollection", "SharedCalendarCollection"],
    CalDavCollection,
):
    """``/<user>/``: the calendar home (RFC 4791 §6.2.1); ``personal`` is created on first
    use. New calendars come from MKCALENDAR or extended MKCOL."""

    shared_kind = ResourceKind.CALENDAR

    def __init__(
        self, path: str, environ: dict[str, Any], backend: CalendarBackend, user: UserRecord
    ) -> None:
        super().__init__(path, environ, backend, user.username, user.id)
        self.user = user

    def own_resource(self, info: CalendarInfo) -> CalendarCollection:
        path = f"{self.path.rstrip('/')}/{info.uri}/"
        return CalendarCollection(path, self.environ, self.backend, self.owner_name, info)

    def shared_resource(
        self, info: CalendarInfo, owner: str, reach: Reach
    ) -> SharedCalendarCollection:
        path = f"{self.path.rstrip('/')}/{shared_name(info.uri, owner)}/"
        state = SharedState(
            reach,
            owner,
            f"{calendar_home_href(owner, self.provider.mount_path)}{info.uri}/",
            (C + "read-free-busy",),
            mount=self.provider.mount_path,
        )
        return SharedCalendarCollection(path, self.environ, self.backend, owner, info, state)

    def _create(self, name: str, settings: dict[str, Any]) -> None:
        try:
            self.backend.store.create_collection(self.user.id, name, **settings)
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


class CalendarCollection(ObjectCollection[CalendarBackend]):
    """``/<user>/<calendar>/``: a calendar collection (RFC 4791 §4.2)."""

    info: CalendarInfo
    kinds: tuple[str, ...] = (CALENDAR,)
    privileges: tuple[str, ...] = OWNER_PRIVILEGES

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        info = self.info
        props.update(
            {
                CALENDAR_DESCRIPTION: lambda: text_element(CALENDAR_DESCRIPTION, info.description),
                CALENDAR_TIMEZONE: lambda: text_element(CALENDAR_TIMEZONE, info.timezone),
                SUPPORTED_COMPONENT_SET: self._component_set,
                SUPPORTED_CALENDAR_DATA: _supported_calendar_data,
                MAX_RESOURCE_SIZE: lambda: str(self.backend.store.max_resource_bytes),
                MIN_DATE_TIME: lambda: format_utc(MIN_DT),
                MAX_DATE_TIME: lambda: format_utc(MAX_DT),
                **self.sync_properties(),
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

    def load_sync_token(self) -> str:
        # The CTag and the sync-token both change with every object change (RFC 6578 §4).
        return self.backend.store.sync_token(self.info.id)

    def _component_set(self) -> etree._Element:
        element = etree.Element(SUPPORTED_COMPONENT_SET)
        for name in self.info.components:
            etree.SubElement(element, C + "comp", name=name)
        return element

    @property
    def floating_tz(self) -> tzinfo:
        return self.info.floating_tz

    def member_resource(self, row: ObjectInfo) -> CalendarObjectResource:
        return CalendarObjectResource(self.member_path(row.name), self.environ, self, row)

    def load_rows(self) -> list[ObjectInfo]:
        return self.backend.store.objects(self.info.id)

    def load_row(self, name: str) -> ObjectInfo | None:
        return self.backend.store.object(self.info.id, name)

    def handle_delete(self) -> bool:
        """DELETE of the calendar: its objects, change log and shares go with it."""
        forget_shares(self.backend.shares, Resource.calendar(self.info.id, self.info.user_id))
        self.backend.store.delete_collection(self.info.id)
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
            self.info = self.backend.store.update_collection(self.info.id, **{field: setting})
        except NotFound:
            raise DAVError(404) from None

    # --- SyncCollection (oxidav.providers.dav.sync_report) -------------------------------------

    def sync_changes(self, token: str | None, limit: int | None) -> ChangeSet:
        return self.backend.store.changes_since(self.info.id, token, limit)

    def sync_member_responses(
        self, names: Sequence[str], prop: etree._Element | None
    ) -> dict[str, list[tuple[str, Any]]]:
        request = CalendarPropRequest(prop)
        store = self.backend.store
        objects: Mapping[str, ObjectInfo] = (
            store.objects_named(self.info.id, names)
            if request.wants_data or request.mode != "named"
            else store.object_infos(self.info.id, names)
        )
        return {name: self.member_properties(request, obj) for name, obj in objects.items()}

    def sync_every_member(self, prop: etree._Element | None) -> Iterator[tuple[str, Any]]:
        request = CalendarPropRequest(prop)
        for page in self.backend.store.every_object_info(self.info.id):
            for obj in page:
                yield obj.name, self.member_properties(request, obj)

    # --- MultigetReport (oxidav.providers.dav.reports) ---------------------------------------

    def load_members(self, names: Sequence[str]) -> Mapping[str, StoredObject]:
        return self.backend.store.objects_named(self.info.id, names)

    def member_properties(
        self, request: CalendarPropRequest, obj: ObjectInfo
    ) -> list[tuple[str, Any]]:
        if request.etag_only:
            return [(GETETAG, row_etag(obj))]
        return request.properties(self.member_resource(obj), self.floating_tz)


class SharedCalendarCollection(SharedObjectCollection[CalendarBackend], CalendarCollection):
    """Another user's calendar in the recipient's home (``<uri>_shared_by_<owner>``): the
    owner's objects, sync token and properties; what the recipient may do follows from the
    grant (``dav_shared.SharedState``). Its name, colour and order are the recipient's own
    once they set them."""

    personal_properties = frozenset({DISPLAYNAME, CALENDAR_COLOR, CALENDAR_ORDER})

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: CalendarBackend,
        owner_name: str,
        info: CalendarInfo,
        share: SharedState,
    ) -> None:
        super().__init__(path, environ, backend, owner_name, info)
        self.bind_share(share)

    def check_personal_value(self, name: str, value: etree._Element | None) -> None:
        property_setting(name, value)  # the owner's rules: a valid colour, an integer order


class CalendarObjectResource(TextObjectResource):
    """One calendar object resource (RFC 4791 §4.1): the stored text, served unchanged."""

    row: ObjectInfo
    data_property = CALENDAR_DATA
    listed_properties = (CURRENT_USER_PRIVILEGE_SET, OWNER, CALENDAR_DATA)
    privileges: tuple[str, ...] = OWNER_PRIVILEGES

    def __init__(
        self, path: str, environ: dict[str, Any], calendar: CalendarCollection, obj: ObjectInfo
    ) -> None:
        super().__init__(path, environ, calendar, obj)
        self.calendar = calendar
        self._stored = obj if isinstance(obj, StoredObject) else None

    def stored(self) -> StoredObject:
        if self._stored is None:
            found = self.calendar.backend.store.object(self.calendar.info.id, self.row.name)
            if found is None:
                raise DAVError(404)
            self._stored = found
        return self._stored

    def text(self) -> str:
        return self.stored().data

    def render(self, request: CalendarDataRequest, floating: tzinfo) -> str:
        stored = self.stored()
        if request.is_plain:
            return stored.data
        try:
            return render_calendar_data(stored.data, stored.parsed(), request, floating)
        except CalendarError as exc:  # e.g. an expand beyond the recurrence budget
            raise dav_error(exc) from None

    def get_content_type(self) -> str:
        return f"{CALENDAR_CONTENT_TYPE}; component={self.row.component_type.lower()}"

    def get_content(self) -> io.BytesIO:
        return io.BytesIO(self.text().encode("utf-8"))


def _supported_calendar_data() -> etree._Element:
    """CALDAV:supported-calendar-data (RFC 4791 §5.2.4): iCalendar 2.0."""
    element = etree.Element(SUPPORTED_CALENDAR_DATA)
    etree.SubElement(
        element, C + "calendar-data", {"content-type": "text/calendar", "version": "2.0"}
    )
    return element
