"""The row writes of a calendar object PUT, as statements built once (``db.prepared``).

``put_row`` runs in the caller's write transaction: it reads the object's row (locked on
PostgreSQL, so two PUTs of one name cannot both pass an ``If-Match``), checks the
preconditions and that the UID stays unique in the calendar, then inserts or updates the row.
The change log entry is the caller's (``sync.record_change``), in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, insert, select, update

from oxidav.calendars.errors import PreconditionFailed, UidConflict
from oxidav.calendars.validation import ValidObject
from oxidav.db import utcnow
from oxidav.db.models.calendars import CalendarObject
from oxidav.db.prepared import Prepared

_OBJECT_FOR_PUT = Prepared(
    select(CalendarObject.id, CalendarObject.etag, CalendarObject.uid)
    .where(
        CalendarObject.calendar_id == bindparam("o_calendar"),
        CalendarObject.name == bindparam("o_name"),
    )
    .with_for_update()
)
_UID_ELSEWHERE = Prepared(
    select(CalendarObject.name).where(
        CalendarObject.calendar_id == bindparam("o_calendar"),
        CalendarObject.uid == bindparam("o_uid"),
        CalendarObject.name != bindparam("o_name"),
    )
)
_CONTENT = {
    "component_type": bindparam("o_component"),
    "data": bindparam("o_data"),
    "etag": bindparam("o_etag"),
    "size": bindparam("o_size"),
    "first_start": bindparam("o_first_start", type_=CalendarObject.first_start.type),
    "last_end": bindparam("o_last_end", type_=CalendarObject.last_end.type),
    "modified_at": bindparam("o_modified", type_=CalendarObject.modified_at.type),
}
_INSERT = Prepared(
    insert(CalendarObject).values(
        calendar_id=bindparam("o_calendar"),
        name=bindparam("o_name"),
        uid=bindparam("o_uid"),
        **_CONTENT,
    )
)
_UPDATE = Prepared(
    update(CalendarObject).where(CalendarObject.id == bindparam("o_id")).values(**_CONTENT)
)


def check_preconditions(
    current_etag: str | None,
    if_match: Sequence[str] | None,
    if_none_match: Sequence[str] | None,
) -> None:
    """RFC 9110 §13.1.1-13.1.2 on a resource whose ETag is ``current_etag`` (None: missing).

    ``if_match`` / ``if_none_match`` are the unquoted ETags of the header, or ``["*"]``."""
    if if_match is not None and (
        current_etag is None or ("*" not in if_match and current_etag not in if_match)
    ):
        raise PreconditionFailed("If-Match does not hold")
    if (
        if_none_match is not None
        and current_etag is not None
        and ("*" in if_none_match or current_etag in if_none_match)
    ):
        raise PreconditionFailed("If-None-Match does not hold")


@dataclass(frozen=True)
class ObjectPut:
    """One PUT of a calendar object: where, what (validated), its ETag and the client's
    conditions (unquoted ETags, or ``["*"]``)."""

    calendar_id: int
    name: str
    valid: ValidObject
    etag: str
    if_match: Sequence[str] | None
    if_none_match: Sequence[str] | None


def put_row(connection: Connection, put: ObjectPut) -> bool:
    """Create (True) or replace (False) the object of ``put`` (module docstring). Raises
    ``PreconditionFailed`` and ``UidConflict`` as ``check_preconditions`` and RFC 4791
    §5.3.2.1 say; a concurrent writer's unique violation comes out as ``IntegrityError``."""
    valid = put.valid
    key = {"o_calendar": put.calendar_id, "o_name": put.name}
    row = _OBJECT_FOR_PUT.run(connection, key).first()
    check_preconditions(None if row is None else row[1], put.if_match, put.if_none_match)
    if row is not None and row[2] != valid.uid:
        raise UidConflict("an overwrite must keep the object's UID", href=put.name)
    other = _UID_ELSEWHERE.run(connection, {**key, "o_uid": valid.uid}).first()
    if other is not None:
        raise UidConflict(f"UID already used by {other[0]}", href=other[0])
    content = {
        "o_component": valid.component_type,
        "o_data": valid.text,
        "o_etag": put.etag,
        "o_size": valid.size,
        "o_first_start": valid.first_start,
        "o_last_end": valid.last_end,
        "o_modified": utcnow(),
    }
    if row is None:
        _INSERT.run(connection, {**key, "o_uid": valid.uid, **content})
        return True
    _UPDATE.run(connection, {"o_id": row[0], **content})
    return False
