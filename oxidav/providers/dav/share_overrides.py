"""A recipient's own values for the personal properties of a collection shared with them.

Nextcloud lets a sharee rename and recolour a shared calendar for themselves; Apple Calendar
and others also PROPPATCH ``calendar-order`` of every calendar when the user reorders them.
These values are stored per recipient (``share_overrides``), shown to that recipient in place
of the owner's, and never change the owner's collection. ``dav_shared`` decides which
properties are personal; this module only reads and writes the rows.
"""

from __future__ import annotations

from sqlalchemy import delete, select

from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.db import Database
from oxidav.db.models.share_overrides import ShareOverride
from oxidav.db.upsert import upsert


def load_all(db: Database, user_id: int, kind: ResourceKind) -> dict[int, dict[str, str]]:
    """Collection id -> property name -> XML text: ``user_id``'s values on every collection
    of ``kind`` (one query, whatever the number of shared collections in a listing)."""
    found: dict[int, dict[str, str]] = {}
    with db.read() as session:
        rows = session.execute(
            select(ShareOverride.resource_id, ShareOverride.name, ShareOverride.value).where(
                ShareOverride.user_id == user_id, ShareOverride.resource_kind == kind.value
            )
        )
        for resource_id, name, value in rows:
            found.setdefault(int(resource_id), {})[str(name)] = str(value)
    return found


def save(db: Database, user_id: int, resource: Resource, name: str, value: str | None) -> None:
    """Set (or, ``value`` None, remove) ``user_id``'s value of ``name`` on ``resource``."""
    key = {
        "user_id": user_id,
        "resource_kind": resource.kind.value,
        "resource_id": resource.id,
        "name": name,
    }
    with db.write() as session:
        if value is None:
            session.execute(
                delete(ShareOverride).where(
                    *(getattr(ShareOverride, column) == v for column, v in key.items())
                )
            )
            return
        stmt = upsert(session.get_bind().dialect.name, ShareOverride).values(**key, value=value)
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=list(key), set_={"value": stmt.excluded.value}
            )
        )


def drop(db: Database, resource: Resource, user_id: int | None = None) -> None:
    """Remove the values on ``resource`` (of one recipient, or of all when it is deleted)."""
    with db.write() as session:
        stmt = delete(ShareOverride).where(
            ShareOverride.resource_kind == resource.kind.value,
            ShareOverride.resource_id == resource.id,
        )
        if user_id is not None:
            stmt = stmt.where(ShareOverride.user_id == user_id)
        session.execute(stmt)
