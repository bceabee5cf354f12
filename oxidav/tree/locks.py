"""WebDAV locks (RFC 4918 §6) as rows, in WsgiDAV's lock dictionary shape.

These functions are the storage under ``oxidav.providers.files.locks`` (WsgiDAV's
``LockStorage`` interface) and are also used directly where a tree operation must drop locks in
its own transaction (DELETE and MOVE remove the locks of the source, §9.6.1 and §9.9.1). Lock
roots are normalized URLs without a trailing slash; the locks below a root are one range query.
Expired locks are never returned and are deleted whenever a lock is created. The check every
write makes (``list_locks_at``) runs pre-built statements on the session's connection; a read
outside any transaction (``read_locks``: a PROPFIND's locks of what it lists, WsgiDAV's
``get_lock_list``) is one prepared read on its own.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    ColumnElement,
    bindparam,
    delete,
    literal_column,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from oxidav.db import Database, Transaction, core
from oxidav.db.models.tree import DavLock
from oxidav.db.prepared import PreparedRead

DEFAULT_TIMEOUT = 604800.0
MAX_TIMEOUT = 4 * 604800.0

LockDict = dict[str, Any]


def normalize_root(root: str) -> str:
    """``"/a/b/"`` -> ``"/a/b"``; ``""`` -> ``"/"`` (WsgiDAV's normalize_lock_root)."""
    return "/" + root.strip("/")


def _clamp(timeout: float | None, max_timeout: float) -> float:
    """The timeout a lock gets: the client's (RFC 4918 §10.7: a request, not an order), at
    most ``max_timeout``; none asked: ``DEFAULT_TIMEOUT``; ``Infinite`` (-1): the maximum."""
    if timeout is None:
        return min(DEFAULT_TIMEOUT, max_timeout)
    if timeout < 0 or timeout > max_timeout:
        return max_timeout
    return float(timeout)


def _as_dict(lock: DavLock) -> LockDict:
    return {
        "token": lock.token,
        "root": lock.root,
        "type": lock.lock_type,
        "scope": lock.scope,
        "depth": lock.depth,
        "owner": lock.owner,
        "timeout": lock.timeout,
        "expire": lock.expire,
        "principal": lock.principal,
    }


def _alive(now: float) -> ColumnElement[bool]:
    return or_(DavLock.expire < 0, DavLock.expire >= now)


def _below_bounds(root: str) -> tuple[str, str]:
    """``(lower, upper)``: the roots strictly below ``root`` (normalized) are those from
    ``lower`` up to, not including, ``upper``."""
    prefix = "/" if root == "/" else root + "/"
    return prefix, prefix[:-1] + "0"


def _below(root: str) -> ColumnElement[bool]:
    lower, upper = _below_bounds(root)
    return (DavLock.root >= lower) & (DavLock.root < upper)


def create_lock(
    session: Session, root: str, lock: LockDict, max_timeout: float = MAX_TIMEOUT
) -> LockDict:
    """Store a new lock at ``root``; fills in root, timeout, expire and token (like WsgiDAV)."""
    now = time.time()
    session.execute(delete(DavLock).where(DavLock.expire >= 0, DavLock.expire < now))
    timeout = _clamp(lock.get("timeout"), max_timeout)
    row = DavLock(
        token="opaquelocktoken:" + hex(secrets.randbits(256)),
        root=normalize_root(root),
        lock_type=lock.get("type", "write"),
        scope=lock["scope"],
        depth=lock["depth"],
        owner=lock.get("owner") or b"",
        timeout=timeout,
        expire=now + timeout,
        principal=lock.get("principal") or "",
    )
    session.add(row)
    session.flush()
    lock.update(_as_dict(row))
    return lock


def get_lock(session: Session, token: str) -> LockDict | None:
    """The lock with ``token`` unless it does not exist or has expired."""
    row = session.scalar(select(DavLock).where(DavLock.token == token, _alive(time.time())))
    return None if row is None else _as_dict(row)


def refresh_lock(
    session: Session, token: str, timeout: float | None, max_timeout: float = MAX_TIMEOUT
) -> LockDict | None:
    """Give a live lock a new timeout (§9.10.2); None if it is gone."""
    timeout = _clamp(timeout, max_timeout)
    now = time.time()
    session.execute(
        update(DavLock)
        .where(DavLock.token == token, _alive(now))
        .values(timeout=timeout, expire=now + timeout)
    )
    return get_lock(session, token)


def delete_lock(session: Session, token: str) -> bool:
    result = session.execute(delete(DavLock).where(DavLock.token == token))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def list_locks(
    session: Session, root: str, *, include_root: bool, include_children: bool
) -> list[LockDict]:
    """Live locks whose root is ``root`` and/or below it."""
    root = normalize_root(root)
    conditions = []
    if include_root:
        conditions.append(DavLock.root == root)
    if include_children:
        conditions.append(_below(root))
    if not conditions:
        return []
    rows = session.scalars(
        select(DavLock).where(or_(*conditions), _alive(time.time())).order_by(DavLock.created_at)
    )
    return [_as_dict(row) for row in rows]


_LOCK_FIELDS = {
    "token": DavLock.token,
    "root": DavLock.root,
    "type": DavLock.lock_type,
    "scope": DavLock.scope,
    "depth": DavLock.depth,
    "owner": DavLock.owner,
    "timeout": DavLock.timeout,
    "expire": DavLock.expire,
    "principal": DavLock.principal,
}
_AT_ROOTS = DavLock.root.in_(bindparam("roots", expanding=True))
#: A lock still alive at ``:now`` (``_alive`` for pre-built statements and prepared reads).
PREPARED_ALIVE = or_(DavLock.expire < literal_column("0"), DavLock.expire >= bindparam("now"))
_LOCKS_AT = (
    select(*_LOCK_FIELDS.values()).where(_AT_ROOTS, PREPARED_ALIVE).order_by(DavLock.created_at)
)
_LOCKS_AT_OR_BELOW = (
    select(*_LOCK_FIELDS.values())
    .where(
        or_(
            _AT_ROOTS,
            (DavLock.root >= bindparam("lower")) & (DavLock.root < bindparam("upper")),
        ),
        PREPARED_ALIVE,
    )
    .order_by(DavLock.created_at)
)


def list_locks_at(
    session: Transaction, roots: list[str], below: str | None = None
) -> list[LockDict]:
    """Live locks rooted at one of ``roots``, or strictly below ``below`` (one query)."""
    params: dict[str, object] = {"roots": roots, "now": time.time()}
    stmt = _LOCKS_AT
    if below is not None:
        params["lower"], params["upper"] = _below_bounds(normalize_root(below))
        stmt = _LOCKS_AT_OR_BELOW
    rows = core(session).execute(stmt, params)
    return [dict(zip(_LOCK_FIELDS, row, strict=True)) for row in rows]


def delete_locks(session: Session, root: str, *, recursive: bool = True) -> int:
    """Drop the locks rooted at ``root`` (and below it if ``recursive``)."""
    root = normalize_root(root)
    condition = DavLock.root == root
    if recursive:
        condition = or_(condition, _below(root))
    result = session.execute(delete(DavLock).where(condition))
    return int(result.rowcount)  # type: ignore[attr-defined]


def delete_tokens(session: Transaction, tokens: Iterable[str]) -> int:
    """Drop the locks of ``tokens`` (in the caller's transaction)."""
    chosen = sorted(tokens)
    if not chosen:
        return 0
    result = core(session).execute(delete(DavLock).where(DavLock.token.in_(chosen)))
    return int(result.rowcount)


def delete_expired(session: Session) -> int:
    now = time.time()
    result = session.execute(delete(DavLock).where(DavLock.expire >= 0, DavLock.expire < now))
    return int(result.rowcount)  # type: ignore[attr-defined]


#: WsgiDAV's lock dictionary keys, in the order of ``PREPARED_LOCK_COLUMNS``.
LOCK_KEYS = tuple(_LOCK_FIELDS)
#: ``_LOCK_FIELDS``' columns for a prepared read (``oxidav.db.prepared``): the drivers return
#: ``timeout`` and ``expire`` as floats already, and a ``Float`` result processor would need
#: the cursor's column type on PostgreSQL, which a prepared read does not pass.
PREPARED_LOCK_COLUMNS = tuple(
    type_coerce(column, NullType()).label(key) if key in ("timeout", "expire") else column
    for key, column in _LOCK_FIELDS.items()
)
_AT = DavLock.root == bindparam("root")
_STRICTLY_BELOW = (DavLock.root >= bindparam("lower")) & (DavLock.root < bindparam("upper"))
#: ``read_locks``' statements by ``(include_root, include_children)``.
_READS = {
    flags: PreparedRead(
        select(*PREPARED_LOCK_COLUMNS).where(where, PREPARED_ALIVE).order_by(DavLock.created_at)
    )
    for flags, where in (
        ((True, False), _AT),
        ((False, True), _STRICTLY_BELOW),
        ((True, True), or_(_AT, _STRICTLY_BELOW)),
    )
}


def read_locks(
    db: Database, root: str, *, include_root: bool, include_children: bool
) -> list[LockDict]:
    """``list_locks`` as one prepared read outside any transaction."""
    read = _READS.get((include_root, include_children))
    if read is None:
        return []
    root = normalize_root(root)
    params: dict[str, object] = {"now": time.time()}
    if include_root:
        params["root"] = root
    if include_children:
        params["lower"], params["upper"] = _below_bounds(root)
    return [dict(zip(LOCK_KEYS, row, strict=True)) for row in read.rows(db, params)]
