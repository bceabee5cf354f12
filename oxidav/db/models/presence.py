"""The table of running processes: one row per ``oxidav serve`` process and per maintenance
command that needs the servers stopped (``oxidav.presence``).

A row is kept alive by a heartbeat (``heartbeat_at``) and removed on a clean stop; a row whose
heartbeat is older than ``oxidav.presence.STALE_AFTER`` belongs to a process that died and is
ignored (and purged by the next registration).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, utcnow


class ProcessPresence(Base):
    """One live (or dead, until purged) oxidav process that uses this database."""

    __tablename__ = "process_presence"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: ``server`` or ``maintenance``.
    kind: Mapped[str] = mapped_column(String(16), index=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    #: What the process does: the blob store a server writes to, the command of a maintenance.
    what: Mapped[str] = mapped_column(String(2048))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
