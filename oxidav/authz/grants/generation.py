"""The grants generation counter: one row, incremented with every change of who may do what.

Every transaction that changes grants or group membership calls ``bump`` (in that same
transaction, and first, so that on PostgreSQL the row lock also serializes such writers). A
cache of grant rows remembers the generation it was read under and is used only while
``current`` still returns that generation: a revocation committed before a request starts is
seen by that request, in every process, at the cost of one primary-key read.

``local_changes`` counts the bumps made by this process. It lets a cache that may only *hide*
access for a moment (never grant it), such as "this user has no mounts", skip the read: it is
dropped at once on a change made here, and after a short TTL on a change made elsewhere.
"""

from __future__ import annotations

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from oxidav.db.models.authz import AuthzState

_ROW = 1
_local_changes = 0


def local_changes() -> int:
    """How many generation bumps this process has made (see the module docstring)."""
    return _local_changes


def current(session: Session) -> int:
    """The generation now (0 on a database whose row is missing)."""
    value = session.scalar(select(AuthzState.generation).where(AuthzState.id == _ROW))
    return int(value or 0)


def bump(session: Session) -> None:
    """Increment the generation in the caller's transaction (call it before the change)."""
    global _local_changes
    _local_changes += 1
    result = session.execute(
        update(AuthzState)
        .where(AuthzState.id == _ROW)
        .values(generation=AuthzState.generation + 1)
        .execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 1) == 0:
        session.execute(insert(AuthzState).values(id=_ROW, generation=1))
