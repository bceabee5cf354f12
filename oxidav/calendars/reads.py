"""What ``CalendarStore`` hands out and its hot single reads.

The snapshot records (``CalendarInfo``, ``ObjectInfo``, ``StoredObject``: plain values, not
tied to a session) and the reads every CalDAV request makes, with statements built once and
run outside any transaction (``PreparedRead``): the calendar at a URL, the metadata of a few
named objects (a sync-collection of a few changes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

from sqlalchemy import BindParameter, bindparam, select
from sqlalchemy.sql import Select

from oxidav.calendars.cache import ParsedCache
from oxidav.calendars.timeutil import timezone_from_ical
from oxidav.db import Database
from oxidav.db.models.calendars import Calendar, CalendarObject
from oxidav.db.prepared import PreparedRead, PreparedReadsByCount

if TYPE_CHECKING:
    import icalendar

_PARSED = ParsedCache()


@dataclass(frozen=True)
class CalendarInfo:
    """A calendar collection's properties (a snapshot; not tied to a session)."""

    id: int
    user_id: int
    uri: str
    displayname: str
    description: str
    color: str
    sort_order: int
    timezone: str
    components: tuple[str, ...]
    created_at: datetime

    @property
    def floating_tz(self) -> tzinfo:
        """The zone of DATEs and floating times in this calendar (calendar-timezone or UTC)."""
        return timezone_from_ical(self.timezone) or UTC


@dataclass(frozen=True)
class ObjectInfo:
    name: str
    etag: str
    size: int
    component_type: str
    uid: str
    modified_at: datetime


@dataclass(frozen=True)
class StoredObject(ObjectInfo):
    data: str

    def parsed(self) -> icalendar.Calendar:
        """The parsed object (shared, read-only)."""
        return _PARSED.get(self.etag, self.data)


OBJECT_INFO_COLUMNS = (
    CalendarObject.name,
    CalendarObject.etag,
    CalendarObject.size,
    CalendarObject.component_type,
    CalendarObject.uid,
    CalendarObject.modified_at,
)


def components_of(text: str) -> tuple[str, ...]:
    """The component types a calendar's ``components`` column lists."""
    return tuple(c for c in text.split(",") if c)


_CALENDAR_AT = PreparedRead(
    select(
        Calendar.id,
        Calendar.user_id,
        Calendar.uri,
        Calendar.displayname,
        Calendar.description,
        Calendar.color,
        Calendar.sort_order,
        Calendar.timezone,
        Calendar.components,
        Calendar.created_at,
    ).where(Calendar.user_id == bindparam("user_id"), Calendar.uri == bindparam("uri"))
)


def calendar_at(db: Database, user_id: int, uri: str) -> CalendarInfo | None:
    """The calendar ``uri`` of the user, or None."""
    row = _CALENDAR_AT.first(db, {"user_id": user_id, "uri": uri})
    if row is None:
        return None
    calendar_id, user, name, displayname, description, color, order, zone, kinds, made = row
    return CalendarInfo(
        calendar_id,
        user,
        name,
        displayname,
        description,
        color,
        order,
        zone,
        components_of(kinds),
        made,
    )


def _infos_named(
    names: list[BindParameter[str]],
) -> Select[str, str, int, str, str, datetime]:
    return select(*OBJECT_INFO_COLUMNS).where(
        CalendarObject.calendar_id == bindparam("calendar_id"), CalendarObject.name.in_(names)
    )


_INFOS_NAMED = PreparedReadsByCount("name", _infos_named)


def object_infos_named(
    db: Database, calendar_id: int, names: Sequence[str]
) -> dict[str, ObjectInfo]:
    """The metadata of the objects of ``calendar_id`` among ``names``."""
    rows = _INFOS_NAMED.rows(db, names, calendar_id=calendar_id)
    return {row[0]: ObjectInfo(*row) for row in rows}


#: Objects read at a time by ``object_info_pages``.
INFO_PAGE = 500

_INFO_PAGE = PreparedRead(
    select(*OBJECT_INFO_COLUMNS)
    .where(
        CalendarObject.calendar_id == bindparam("calendar_id"),
        CalendarObject.name > bindparam("after"),
    )
    .order_by(CalendarObject.name)
    .limit(INFO_PAGE)
)


def object_info_pages(db: Database, calendar_id: int) -> Iterator[list[ObjectInfo]]:
    """The metadata of every object of ``calendar_id``, by name, ``INFO_PAGE`` at a time (each
    page is its own snapshot)."""
    for rows in _INFO_PAGE.pages(db, {"calendar_id": calendar_id}, INFO_PAGE):
        yield [ObjectInfo(*row) for row in rows]
