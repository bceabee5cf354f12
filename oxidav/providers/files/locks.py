"""``DbLockStorage``: WsgiDAV's ``LockStorage`` interface on the ``dav_locks`` table, and
``DbLockManager``, WsgiDAV's ``LockManager`` with batched checks.

With the storage, every oxidav process sees the same locks (RFC 4918 §6; WsgiDAV keeps them in
process memory by default). Mount it with ``"lock_storage": DbLockStorage(db)`` in a WsgiDAV
config. WsgiDAV's manager checks a write by asking the storage once per ancestor URL, several
times per request (a PUT costs a dozen queries); ``DbLockManager`` asks once, for all
ancestors together, and the files provider installs it over a ``DbLockStorage`` by itself.

The check of every write (the locks rooted at a URL and its ancestors) is one pre-built
statement per ancestor count, run on a pooled driver connection (``PreparedRead``): no session,
no transaction around a single read.

WsgiDAV's ``LockManager`` checks for conflicts and then calls ``create``; between two processes
that check could race, so ``create`` repeats the conflict rules of
``LockManager._check_lock_permission`` inside one serialized transaction (``BEGIN IMMEDIATE``
on SQLite, a transaction-scoped advisory lock on PostgreSQL) and raises 423 on a conflict.

A lock's ``owner`` (the client's ``DAV:owner`` element) is stored only in the form that
``xml_input.parse_xml`` reads back (``create`` refuses anything else with 400); a stored owner
that does not read back (written before that rule) is blanked, with a WARNING, in the locks
``get`` and ``get_lock_list`` hand to WsgiDAV, so its lock discovery shows the lock without it.

Every lock it hands out still stands: given ``holders`` (``oxidav.authz.lock_holders``, which
decides), a lock whose holder may no longer write the locked node (a share revoked, a link
deleted) is deleted when a read meets it and never returned. A new or refreshed lock's timeout
is at most ``max_timeout`` seconds (``lock_max_timeout``; ``Infinite`` gets the maximum).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    BindParameter,
    Select,
    select,
    text,
)
from sqlalchemy.orm import Session
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_LOCKED,
    DAVError,
    DAVErrorCondition,
    PRECONDITION_CODE_LockConflict,
)
from wsgidav.lock_man.lock_manager import LockManager

from oxidav.authz.lock_holders import LockHolders
from oxidav.db import Database, Transaction, core
from oxidav.db.models.tree import DavLock
from oxidav.db.prepared import PreparedReadsByCount
from oxidav.providers.dav.xml_input import XmlRefused, canonical, parse_xml, stored_xml
from oxidav.tree import locks as rows

#: Key of the PostgreSQL advisory lock that serializes lock creation ("oxiL").
_ADVISORY_KEY = 0x6F78694C
_SHARED_ADVISORY = text("SELECT pg_advisory_xact_lock_shared(:key)")
#: Ancestor counts up to this get a prepared statement; deeper URLs use a session.
PREPARED_DEPTH_MAX = 32


def _locks_at(roots: list[BindParameter[str]]) -> Select[*tuple[Any, ...]]:
    """The live locks rooted at one of ``roots`` (``:root0`` …), oldest first."""
    return (
        select(*rows.PREPARED_LOCK_COLUMNS)
        .where(DavLock.root.in_(roots), rows.PREPARED_ALIVE)
        .order_by(DavLock.created_at)
    )


_LOCKS_AT = PreparedReadsByCount("root", _locks_at)


def _ancestors(root: str) -> list[str]:
    """``"/a/b"`` -> ``["/a/b", "/a", "/"]``."""
    result = [root]
    while root != "/":
        root = "/" + root.strip("/").rpartition("/")[0]
        result.append(root)
    return result


class DbLockStorage:
    """Lock storage in the database (``open``/``close`` are no-ops; the engine is shared)."""

    def __init__(
        self,
        db: Database,
        *,
        max_timeout: float = rows.MAX_TIMEOUT,
        holders: LockHolders | None = None,
    ) -> None:
        self.db = db
        self.max_timeout = max_timeout
        self.holders = holders

    def standing(
        self, locks: list[dict[str, Any]], transaction: Transaction | None = None
    ) -> list[dict[str, Any]]:
        """``locks`` without those whose holders lost write access, which are deleted (in
        ``transaction`` if given, else in a write transaction of their own)."""
        if self.holders is None or not locks:
            return locks
        gone = self.holders.stale(locks)
        if not gone:
            return locks
        if transaction is not None:
            rows.delete_tokens(transaction, gone)
        else:
            with self.db.write() as session:
                rows.delete_tokens(session, gone)
        return [lock for lock in locks if lock["token"] not in gone]

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.db.engine.url.render_as_string()!r})"

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def cleanup(self) -> None:
        """Purge expired locks."""
        with self.db.write() as session:
            rows.delete_expired(session)

    def clear(self) -> None:
        """Delete every lock."""
        with self.db.write() as session:
            rows.delete_locks(session, "/", recursive=True)

    def get(self, token: str) -> dict[str, Any] | None:
        with self.db.read() as session:
            lock = rows.get_lock(session, token)
        if lock is None or not self.standing([lock]):
            return None
        return _readable_owner(lock)

    def create(self, path: str, lock: dict[str, Any]) -> dict[str, Any]:
        root = rows.normalize_root(path)
        if lock.get("owner"):
            lock["owner"] = _storable_owner(lock["owner"])
        with self.db.write() as session:
            self._serialize(session)
            self._check_conflicts(session, root, lock["scope"], lock["depth"], self.standing)
            return rows.create_lock(session, root, lock, self.max_timeout)

    def refresh(self, token: str, *, timeout: float | None) -> dict[str, Any]:
        with self.db.write() as session:
            lock = rows.refresh_lock(session, token, timeout, self.max_timeout)
        if lock is None:
            raise ValueError(f"no such lock {token!r}")
        return _readable_owner(lock)

    def delete(self, token: str) -> bool:
        with self.db.write() as session:
            return rows.delete_lock(session, token)

    def get_lock_list(
        self, path: str, *, include_root: bool, include_children: bool, token_only: bool
    ) -> list[Any]:
        locks = self.standing(
            rows.read_locks(
                self.db, path, include_root=include_root, include_children=include_children
            )
        )
        return (
            [lock["token"] for lock in locks]
            if token_only
            else [_readable_owner(lock) for lock in locks]
        )

    def locks_at(self, roots: list[str], below: str | None = None) -> list[dict[str, Any]]:
        """Live locks rooted at any of ``roots`` (normalized), plus those strictly below
        ``below``, in one query."""
        if below is None and 0 < len(roots) <= PREPARED_DEPTH_MAX:
            found = _LOCKS_AT.for_count(len(roots)).rows(
                self.db, _LOCKS_AT.params(roots, now=time.time())
            )
            return self.standing([dict(zip(rows.LOCK_KEYS, row, strict=True)) for row in found])
        with self.db.read() as session:
            locks = rows.list_locks_at(session, roots, below)
        return self.standing(locks)

    def locks_in(self, transaction: Transaction, roots: list[str]) -> list[dict[str, Any]]:
        """``locks_at(roots)``, read in the caller's write transaction (a PUT that checks and
        writes in one). On SQLite that transaction holds the write lock, so no lock can be
        created between this read and its commit; on PostgreSQL it takes the advisory lock of
        lock creation in shared mode first (``create`` takes it exclusively), with the same
        effect."""
        connection = core(transaction)
        if not self.db.is_sqlite:
            connection.execute(_SHARED_ADVISORY, {"key": _ADVISORY_KEY})
        if 0 < len(roots) <= PREPARED_DEPTH_MAX:
            found = (
                _LOCKS_AT.for_count(len(roots))
                .run(connection, _LOCKS_AT.params(roots, now=time.time()))
                .rows
            )
            locks = [dict(zip(rows.LOCK_KEYS, row, strict=True)) for row in found]
        else:
            locks = rows.list_locks_at(connection, roots)
        return self.standing(locks, transaction)

    def batched_manager(self) -> DbLockManager:
        """The one ``DbLockManager`` of this storage (shared by every provider using it)."""
        manager = getattr(self, "_manager", None)
        if manager is None:
            manager = self._manager = DbLockManager(self)
        return manager

    def _serialize(self, session: Session) -> None:
        if not self.db.is_sqlite:
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_KEY})

    @staticmethod
    def _check_conflicts(
        session: Session,
        root: str,
        scope: str,
        depth: str,
        standing: Callable[[list[dict[str, Any]], Transaction], list[dict[str, Any]]],
    ) -> None:
        """The rules of RFC 4918 §6.1 / ``LockManager._check_lock_permission``, among the
        locks that still stand."""
        condition = DAVErrorCondition(PRECONDITION_CODE_LockConflict)
        for url in _ancestors(root):
            found = rows.list_locks(session, url, include_root=True, include_children=False)
            for other in standing(found, session):
                if url != root and other["depth"] != "infinity":
                    continue
                if other["scope"] == "shared" and scope == "shared":
                    continue
                condition.add_href(other["root"])
        if depth == "infinity":
            found = rows.list_locks(session, root, include_root=False, include_children=True)
            for other in standing(found, session):
                condition.add_href(other["root"])
        if condition.hrefs:
            raise DAVError(HTTP_LOCKED, err_condition=condition)


def _storable_owner(owner: bytes | str) -> bytes:
    """``owner`` in its stored form; 400 unless it is XML that ``parse_xml`` accepts."""
    try:
        element = parse_xml(owner.encode() if isinstance(owner, str) else owner)
    except XmlRefused as error:
        raise DAVError(HTTP_BAD_REQUEST, f"the lock owner cannot be stored: {error}") from None
    return canonical(element)


def _readable_owner(lock: dict[str, Any]) -> dict[str, Any]:
    """``lock`` with its owner blanked if the stored value does not read back (logged)."""
    owner = lock.get("owner")
    if owner and stored_xml(owner, resource=lock["root"], name="lock owner") is None:
        lock["owner"] = b""
    return lock


def _raise_put_conflicts(
    found: list[dict[str, Any]],
    root: str,
    above: list[str],
    token_list: list[str],
    principal: str,
    new_member: bool,
) -> None:
    """423 unless a PUT to ``root`` may go on, given ``found``, the locks rooted at ``root``
    and its ancestors ``above``: the target's own locks, depth-infinity locks above it and,
    for a new member, its parent's own locks conflict, unless the principal holds them and
    sent their token."""
    parent = above[1] if new_member and len(above) > 1 else None
    condition = DAVErrorCondition(PRECONDITION_CODE_LockConflict)
    for lock in found:
        if lock["root"] != root and lock["root"] != parent and lock["depth"] != "infinity":
            continue
        if principal == lock["principal"] and lock["token"] in token_list:
            continue
        condition.add_href(lock["root"])
    if condition.hrefs:
        raise DAVError(HTTP_LOCKED, err_condition=condition)


class DbLockManager(LockManager):  # type: ignore[misc]
    """WsgiDAV's lock manager, with the write checks and the If-header lock list answered by
    one query for all ancestors (same rules as ``LockManager._get_write_conflicts``)."""

    storage: DbLockStorage

    def _get_write_conflicts(
        self, url: str, depth: str, token_list: list[str], principal: str
    ) -> DAVErrorCondition:
        """Locks on ``url``, depth-infinity locks on its ancestors and, for a depth-infinity
        write, locks below it conflict unless the principal owns them and sent their token."""
        root = rows.normalize_root(url)
        above = _ancestors(root)
        condition = DAVErrorCondition(PRECONDITION_CODE_LockConflict)
        below = root if depth == "infinity" else None
        for lock in self.storage.locks_at(above, below):
            if lock["root"] in above and lock["root"] != root and lock["depth"] != "infinity":
                continue
            if principal == lock["principal"] and lock["token"] in token_list:
                continue
            condition.add_href(lock["root"])
        return condition

    @contextmanager
    def put_transaction(
        self, *, url: str, token_list: list[str], principal: str, new_member: bool
    ) -> Iterator[None]:
        """``write_transaction(url)`` of a PUT, with one query. A new member also changes its
        parent, so the parent's own locks conflict too (WsgiDAV's ``check_write_permission``
        of the parent at depth 0, which a PUT of a new file asks first): the locks rooted at
        the parent are among those of ``url``'s ancestors, so one query answers both checks.
        """
        root = rows.normalize_root(url)
        above = _ancestors(root)
        self._lock.acquire_write()
        try:
            _raise_put_conflicts(
                self.storage.locks_at(above), root, above, token_list, principal, new_member
            )
            self._active_writes[root] = self._active_writes.get(root, 0) + 1
        finally:
            self._lock.release()
        try:
            yield
        finally:
            self._end_write_transaction(root)

    def check_put_in(
        self,
        transaction: Transaction,
        *,
        url: str,
        token_list: list[str],
        principal: str,
        new_member: bool,
    ) -> None:
        """``put_transaction``'s check, read in the PUT's own write transaction
        (``DbLockStorage.locks_in``): no lock can be granted between this check and the
        commit, in this process or another, so no write marker is needed."""
        root = rows.normalize_root(url)
        above = _ancestors(root)
        found = self.storage.locks_in(transaction, above)
        _raise_put_conflicts(found, root, above, token_list, principal, new_member)

    def get_indirect_url_lock_list(
        self, url: str, *, principal: str | None = None
    ) -> list[dict[str, Any]]:
        root = rows.normalize_root(url)
        return [
            lock
            for lock in self.storage.locks_at(_ancestors(root))
            if (lock["root"] == root or lock["depth"] == "infinity")
            and (principal is None or principal == lock["principal"])
        ]
