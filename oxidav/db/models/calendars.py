"""Tables of the calendars room: calendar collections and calendar object resources.

A calendar object keeps the iCalendar text exactly as the client sent it (so ``GET`` returns the
same bytes and the ETag can be a hash of them) plus the columns a calendar-query needs to
pre-filter in SQL (RFC 4791 §7.8; docs/architecture.md#calendars-and-contacts): the component type,
the UID, and the first start and last end of all its instances in UTC. ``first_start`` NULL means
"unbounded in the past",
``last_end`` NULL "unbounded in the future" (an infinite RRULE); both bounds are conservative,
the exact test happens in Python on the candidates only.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, utcnow

#: Component types a new calendar accepts unless told otherwise (RFC 4791 §5.2.3).
DEFAULT_COMPONENTS = "VEVENT,VTODO,VJOURNAL"


class Calendar(Base):
    """A calendar collection owned by one user, at ``calendars/<user>/<uri>/``."""

    __tablename__ = "calendars"
    __table_args__ = (UniqueConstraint("user_id", "uri", name="uq_calendars_user_id_uri"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    uri: Mapped[str] = mapped_column(String(255))
    displayname: Mapped[str] = mapped_column(String(255), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    #: Apple ``calendar-color``, e.g. ``#0082C9FF``; empty: not set.
    color: Mapped[str] = mapped_column(String(32), default="")
    #: Apple ``calendar-order``.
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    #: CALDAV:calendar-timezone, a VCALENDAR with one VTIMEZONE; empty: not set (UTC).
    timezone: Mapped[str] = mapped_column(Text, default="")
    #: Comma-separated supported-calendar-component-set, e.g. ``VEVENT,VTODO``.
    components: Mapped[str] = mapped_column(String(64), default=DEFAULT_COMPONENTS)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CalendarObject(Base):
    """One calendar object resource (``<name>.ics``) of a calendar."""

    __tablename__ = "calendar_objects"
    __table_args__ = (
        UniqueConstraint("calendar_id", "name", name="uq_calendar_objects_calendar_id_name"),
        UniqueConstraint("calendar_id", "uid", name="uq_calendar_objects_calendar_id_uid"),
        Index(
            "ix_calendar_objects_time_range",
            "calendar_id",
            "component_type",
            "first_start",
            "last_end",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    calendar_id: Mapped[int] = mapped_column(ForeignKey("calendars.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    uid: Mapped[str] = mapped_column(String(512))
    component_type: Mapped[str] = mapped_column(String(16))
    data: Mapped[str] = mapped_column(Text)
    etag: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    first_start: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_end: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    modified_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
