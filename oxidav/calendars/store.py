"""Calendar storage: calendars and calendar object resources in the database.

``CalendarStore`` is the only way the rest of oxidav reads or writes calendars. Each method is
one transaction; every object change is logged in ``oxidav.sync`` in the same transaction, so
the sync token, the CTag and the data always agree. A calendar-query pre-filters candidates in
SQL on the indexed component type and time bounds, then tests only those exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.calendars.errors import (
    AlreadyExists,
    InvalidCalendarObject,
    NotFound,
    PreconditionFailed,
    UidConflict,
    UnsupportedComponent,
)
from oxidav.calendars.evaluate import FilterEvaluator
from oxidav.calendars.filters import CompFilter, TimeRange
from oxidav.calendars.freebusy import BusyTime, collect_busy, format_freebusy
from oxidav.calendars.object_rows import ObjectPut, check_preconditions, put_row
from oxidav.calendars.reads import (
    OBJECT_INFO_COLUMNS,
    CalendarInfo,
    ObjectInfo,
    StoredObject,
    calendar_at,
    components_of,
    object_info_pages,
    object_infos_named,
)
from oxidav.calendars.rules import DEFAULT_LIMITS, RecurrenceLimits
from oxidav.calendars.validation import KNOWN_COMPONENTS, validate_object
from oxidav.db import Database, utcnow
from oxidav.db.models.calendars import DEFAULT_COMPONENTS, Calendar, CalendarObject
from oxidav.db.models.users import User
from oxidav.sync import (
    ChangeKind,
    ChangeSet,
    changes_since,
    current_seq,
    current_token,
    drop_collection,
    init_collection,
    record_change,
)

SYNC_KIND = "calendar"
DEFAULT_CALENDAR_URI = "personal"
DEFAULT_CALENDAR_NAME = "Personal"


@dataclass(frozen=True)
class PutResult:
    etag: str
    created: bool


def make_etag(data: bytes) -> str:
    """A strong ETag (unquoted) of a resource's bytes."""
    return hashlib.sha256(data).hexdigest()[:40]


def _calendar_info(row: Calendar) -> CalendarInfo:
    return CalendarInfo(
        id=row.id,
        user_id=row.user_id,
        uri=row.uri,
        displayname=row.displayname,
        description=row.description,
        color=row.color,
        sort_order=row.sort_order,
        timezone=row.timezone,
        components=components_of(row.components),
        created_at=row.created_at,
    )


def _object_info(row: CalendarObject) -> ObjectInfo:
    return ObjectInfo(row.name, row.etag, row.size, row.component_type, row.uid, row.modified_at)


def _stored(row: CalendarObject) -> StoredObject:
    return StoredObject(
        row.name, row.etag, row.size, row.component_type, row.uid, row.modified_at, row.data
    )


def _object_row(session: Session, calendar_id: int, name: str) -> CalendarObject | None:
    return session.execute(
        select(CalendarObject).where(
            CalendarObject.calendar_id == calendar_id, CalendarObject.name == name
        )
    ).scalar_one_or_none()


def _valid_segment(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and len(name) <= 255


class CalendarStore:
    """Calendars of all users, on one ``Database``."""

    def __init__(
        self,
        db: Database,
        max_resource_bytes: int = 10 << 20,
        recurrence: RecurrenceLimits = DEFAULT_LIMITS,
    ) -> None:
        self.db = db
        self.max_resource_bytes = max_resource_bytes
        self.recurrence = recurrence

    # -- calendars ------------------------------------------------------------------------------

    def collections(self, user_id: int) -> list[CalendarInfo]:
        with self.db.read() as session:
            rows = session.execute(
                select(Calendar).where(Calendar.user_id == user_id).order_by(Calendar.id)
            ).scalars()
            return [_calendar_info(row) for row in rows]

    def collection(self, user_id: int, uri: str) -> CalendarInfo | None:
        """The calendar ``uri`` of the user (every CalDAV request below it asks: one prepared
        single read, no session)."""
        return calendar_at(self.db, user_id, uri)

    def collections_with_owners(self, ids: Collection[int]) -> list[tuple[CalendarInfo, str]]:
        """The calendars with these ids and their owners' user names, by id (one query;
        ids that name no calendar are left out). Lists the calendars shared with someone."""
        if not ids:
            return []
        with self.db.read() as session:
            rows = session.execute(
                select(Calendar, User.username)
                .join(User, User.id == Calendar.user_id)
                .where(Calendar.id.in_(sorted(set(ids))))
                .order_by(Calendar.id)
            ).all()
            return [(_calendar_info(row), str(username)) for row, username in rows]

    def ensure_default(self, user_id: int) -> list[CalendarInfo]:
        """The user's calendars, creating ``personal`` if the user has none (first use)."""
        calendars = self.collections(user_id)
        if calendars:
            return calendars
        with contextlib.suppress(AlreadyExists):  # a concurrent request created it
            self.create_collection(user_id, DEFAULT_CALENDAR_URI, displayname=DEFAULT_CALENDAR_NAME)
        return self.collections(user_id)

    def create_collection(
        self,
        user_id: int,
        uri: str,
        *,
        displayname: str = "",
        description: str = "",
        color: str = "",
        sort_order: int = 0,
        timezone: str = "",
        components: Collection[str] | None = None,
    ) -> CalendarInfo:
        """MKCALENDAR (RFC 4791 §5.3.1). Raises ``AlreadyExists`` if ``uri`` is taken."""
        if not _valid_segment(uri):
            raise ValueError(f"invalid calendar name {uri!r}")
        wanted = tuple(components) if components else tuple(DEFAULT_COMPONENTS.split(","))
        unknown = set(wanted) - KNOWN_COMPONENTS
        if unknown:
            raise InvalidCalendarObject(f"unsupported component types {sorted(unknown)}")
        try:
            with self.db.write() as session:
                row = Calendar(
                    user_id=user_id,
                    uri=uri,
                    displayname=displayname,
                    description=description,
                    color=color,
                    sort_order=sort_order,
                    timezone=timezone,
                    components=",".join(dict.fromkeys(wanted)),
                )
                session.add(row)
                session.flush()
                init_collection(session, SYNC_KIND, row.id)
                return _calendar_info(row)
        except IntegrityError:
            raise AlreadyExists(f"calendar {uri!r} exists") from None

    def update_collection(self, calendar_id: int, **changes: Any) -> CalendarInfo:
        """PROPPATCH of displayname, description, color, sort_order, timezone, components."""
        allowed = {"displayname", "description", "color", "sort_order", "timezone", "components"}
        if set(changes) - allowed:
            raise ValueError(f"cannot change {sorted(set(changes) - allowed)}")
        if "components" in changes:
            changes["components"] = ",".join(changes["components"])
        with self.db.write() as session:
            row = session.get(Calendar, calendar_id)
            if row is None:
                raise NotFound("no such calendar")
            for key, value in changes.items():
                setattr(row, key, value)
            session.flush()
            return _calendar_info(row)

    def delete_collection(self, calendar_id: int) -> None:
        with self.db.write() as session:
            session.execute(delete(CalendarObject).where(CalendarObject.calendar_id == calendar_id))
            session.execute(delete(Calendar).where(Calendar.id == calendar_id))
            drop_collection(session, SYNC_KIND, calendar_id)

    def sync_state(self, calendar_id: int) -> tuple[int, str]:
        """(CTag sequence number, DAV:sync-token) of a calendar."""
        with self.db.read() as session:
            return (
                current_seq(session, SYNC_KIND, calendar_id),
                current_token(session, SYNC_KIND, calendar_id),
            )

    def sync_token(self, calendar_id: int) -> str:
        """The calendar's current DAV:sync-token."""
        with self.db.read() as session:
            return current_token(session, SYNC_KIND, calendar_id)

    # -- objects --------------------------------------------------------------------------------

    def objects(self, calendar_id: int) -> list[ObjectInfo]:
        with self.db.read() as session:
            rows = session.execute(
                select(*OBJECT_INFO_COLUMNS)
                .where(CalendarObject.calendar_id == calendar_id)
                .order_by(CalendarObject.name)
            ).all()
            return [ObjectInfo(*row) for row in rows]

    def object_infos(self, calendar_id: int, names: Collection[str]) -> dict[str, ObjectInfo]:
        """The named objects' metadata (no data), with statements built once
        (``object_infos_named``)."""
        return object_infos_named(self.db, calendar_id, list(names))

    def every_object_info(self, calendar_id: int) -> Iterator[list[ObjectInfo]]:
        """Every object's metadata (no data), by name, a page at a time (a first sync)."""
        return object_info_pages(self.db, calendar_id)

    def object(self, calendar_id: int, name: str) -> StoredObject | None:
        found = self.objects_named(calendar_id, [name])
        return found.get(name)

    def objects_named(self, calendar_id: int, names: Collection[str]) -> dict[str, StoredObject]:
        """The named objects with their data, in batches of 500 names per query."""
        wanted = list(names)
        found: dict[str, StoredObject] = {}
        with self.db.read() as session:
            for start in range(0, len(wanted), 500):
                rows = session.execute(
                    select(CalendarObject).where(
                        CalendarObject.calendar_id == calendar_id,
                        CalendarObject.name.in_(wanted[start : start + 500]),
                    )
                ).scalars()
                found.update({row.name: _stored(row) for row in rows})
        return found

    def put_object(
        self,
        calendar: CalendarInfo,
        name: str,
        data: bytes,
        *,
        if_match: Sequence[str] | None = None,
        if_none_match: Sequence[str] | None = None,
    ) -> PutResult:
        """Store (create or replace) a calendar object resource (RFC 4791 §5.3.2)."""
        if not _valid_segment(name):
            raise ValueError(f"invalid object name {name!r}")
        valid = validate_object(
            data,
            allowed_components=calendar.components,
            max_size=self.max_resource_bytes,
            limits=self.recurrence,
        )
        put = ObjectPut(calendar.id, name, valid, make_etag(data), if_match, if_none_match)
        try:
            return self._put(put)
        except IntegrityError:
            # A concurrent writer took the UID or the name first; report it as they now stand.
            return self._put(put)

    def _put(self, put: ObjectPut) -> PutResult:
        """The row and its change log entry, in one Core write transaction."""
        with self.db.write_core() as connection:
            created = put_row(connection, put)
            change: ChangeKind = "added" if created else "modified"
            record_change(connection, SYNC_KIND, put.calendar_id, put.name, change)
        return PutResult(etag=put.etag, created=created)

    def delete_object(
        self, calendar_id: int, name: str, *, if_match: Sequence[str] | None = None
    ) -> None:
        with self.db.write() as session:
            row = session.execute(
                select(CalendarObject).where(
                    CalendarObject.calendar_id == calendar_id, CalendarObject.name == name
                )
            ).scalar_one_or_none()
            check_preconditions(None if row is None else row.etag, if_match, None)
            if row is None:
                raise NotFound(f"no object {name!r}")
            session.delete(row)
            session.flush()
            record_change(session, SYNC_KIND, calendar_id, name, "removed")

    def transfer(
        self,
        source: CalendarInfo,
        name: str,
        target: CalendarInfo,
        target_name: str,
        *,
        move: bool,
        overwrite: bool = True,
    ) -> PutResult:
        """COPY or MOVE of an object (RFC 4918 §9.8, §9.9) with the RFC 4791 §5.3.2.1
        preconditions on the target: a component it accepts, no UID already there."""
        if not _valid_segment(target_name):
            raise ValueError(f"invalid object name {target_name!r}")
        if source.id == target.id and name == target_name:
            raise ValueError("source and destination are the same")
        with self.db.write() as session:
            row = _object_row(session, source.id, name)
            if row is None:
                raise NotFound(f"no object {name!r}")
            if row.component_type not in target.components:
                raise UnsupportedComponent(
                    f"the target calendar does not accept {row.component_type}"
                )
            existing = _object_row(session, target.id, target_name)
            if existing is not None and not overwrite:
                raise PreconditionFailed("the destination exists and Overwrite is F")
            renaming = move and source.id == target.id
            conflict = session.execute(
                select(CalendarObject.name).where(
                    CalendarObject.calendar_id == target.id,
                    CalendarObject.uid == row.uid,
                    CalendarObject.name != target_name,
                    CalendarObject.name != (name if renaming else ""),
                )
            ).scalar_one_or_none()
            if conflict is not None:
                raise UidConflict(f"UID already used by {conflict}", href=conflict)
            if existing is not None:
                session.delete(existing)
                session.flush()
            copy = CalendarObject(
                calendar_id=target.id,
                name=target_name,
                uid=row.uid,
                component_type=row.component_type,
                data=row.data,
                etag=row.etag,
                size=row.size,
                first_start=row.first_start,
                last_end=row.last_end,
                modified_at=utcnow(),
            )
            if move:
                session.delete(row)
                session.flush()
                record_change(session, SYNC_KIND, source.id, name, "removed")
            session.add(copy)
            session.flush()
            change: ChangeKind = "modified" if existing is not None else "added"
            record_change(session, SYNC_KIND, target.id, target_name, change)
            return PutResult(etag=copy.etag, created=existing is None)

    # -- queries --------------------------------------------------------------------------------

    def candidates(
        self, calendar_id: int, component_type: str | None, rng: TimeRange | None
    ) -> list[StoredObject]:
        """Objects that may match: right component type, index bounds touching ``rng``."""
        stmt = select(CalendarObject).where(CalendarObject.calendar_id == calendar_id)
        if component_type is not None:
            stmt = stmt.where(CalendarObject.component_type == component_type)
        if rng is not None and rng.start is not None:
            stmt = stmt.where(
                or_(CalendarObject.last_end.is_(None), CalendarObject.last_end >= rng.start)
            )
        if rng is not None and rng.end is not None:
            stmt = stmt.where(
                or_(CalendarObject.first_start.is_(None), CalendarObject.first_start <= rng.end)
            )
        with self.db.read() as session:
            rows = session.execute(stmt.order_by(CalendarObject.name)).scalars()
            return [_stored(row) for row in rows]

    def query(
        self, calendar: CalendarInfo, root: CompFilter, floating: tzinfo | None = None
    ) -> list[StoredObject]:
        """calendar-query (RFC 4791 §7.8): the objects whose data match ``root`` exactly."""
        component_type, rng = _prefilter(root)
        evaluator = FilterEvaluator(
            floating or calendar.floating_tz, budget=self.recurrence.budget()
        )
        return [
            obj
            for obj in self.candidates(calendar.id, component_type, rng)
            if evaluator.matches(obj.parsed(), root)
        ]

    def busy_time(
        self, calendar: CalendarInfo, rng: TimeRange, floating: tzinfo | None = None
    ) -> BusyTime:
        """The busy periods of one calendar in ``rng`` (RFC 4791 §7.10), by FBTYPE."""
        objects = self.candidates(calendar.id, "VEVENT", rng) + self.candidates(
            calendar.id, "VFREEBUSY", rng
        )
        zone = floating or calendar.floating_tz
        return collect_busy((obj.parsed() for obj in objects), rng, zone, self.recurrence.budget())

    def free_busy(
        self, calendar: CalendarInfo, rng: TimeRange, floating: tzinfo | None = None
    ) -> str:
        """free-busy-query (RFC 4791 §7.10) over one calendar: a VCALENDAR text."""
        return format_freebusy(self.busy_time(calendar, rng, floating), rng)

    def changes_since(
        self, calendar_id: int, token: str | None, limit: int | None = None
    ) -> ChangeSet:
        """sync-collection (RFC 6578): the changes since ``token`` (all present objects if
        None). Raises ``oxidav.sync.InvalidSyncToken``."""
        with self.db.read() as session:
            return changes_since(session, SYNC_KIND, calendar_id, token, limit)


def _prefilter(root: CompFilter) -> tuple[str | None, TimeRange | None]:
    """The component type and time range the SQL pre-filter may use, from the comp-filters
    directly below VCALENDAR."""
    for cf in root.comp_filters:
        if not cf.is_not_defined and cf.name in KNOWN_COMPONENTS:
            return cf.name, cf.time_range
    return None, None


__all__ = [
    "CalendarInfo",
    "CalendarStore",
    "ObjectInfo",
    "PutResult",
    "StoredObject",
    "check_preconditions",
    "make_etag",
]
