"""Failures of the storage under a request that are not the request's fault.

``storage_failure(exc)`` recognises them anywhere in an exception's chain (``__cause__``,
``__context__`` and a DB-API error's ``orig``) and says how to answer:

- **507 Insufficient Storage**: the disk is full or a file limit was hit (``ENOSPC``,
  ``EDQUOT``, ``EFBIG``), for blob files or the SQLite database (``SQLITE_FULL``). Every write
  path commits its rows only after its bytes are stored, so the previous version stays.
- **503 Service Unavailable** with ``Retry-After``: the database does not answer or dropped the
  connection (the pool discards that connection, so the next request gets a fresh one), SQLite
  stayed locked past its busy timeout, or the blob store stayed unreachable past its retries.

Anything else is a bug: a 500 with its traceback in the log.
"""

from __future__ import annotations

import errno
import sqlite3
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError

from oxidav.blobs.store import TransientBlobStoreError

#: Seconds a client is told to wait after a 503.
RETRY_AFTER_SECONDS = 5
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_SQLITE_FULL = 13
_CHAIN_LIMIT = 16


@dataclass(frozen=True)
class StorageFailure:
    """How to answer a request that storage failed: ``status`` 503 or 507, and why."""

    status: int
    reason: str

    @property
    def status_line(self) -> str:
        return "507 Insufficient Storage" if self.status == 507 else "503 Service Unavailable"

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [("Retry-After", str(RETRY_AFTER_SECONDS))] if self.status == 503 else []


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < _CHAIN_LIMIT:
        current = todo.pop(0)
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        orig = getattr(current, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None]
        todo += [current.__cause__, current.__context__]
    return seen


def _is_postgres_unreachable(exc: BaseException) -> bool:
    kind = type(exc)
    return kind.__module__.startswith("psycopg2") and kind.__name__ in (
        "OperationalError",
        "InterfaceError",
    )


def storage_failure(exc: BaseException) -> StorageFailure | None:
    """The answer ``exc`` calls for when it is a storage failure, else None."""
    for link in _chain(exc):
        if isinstance(link, OSError) and link.errno in _FULL_ERRNOS:
            return StorageFailure(507, f"storage full: {link}")
        if isinstance(link, sqlite3.Error):
            code = getattr(link, "sqlite_errorcode", None)
            text = str(link).lower()
            if code == _SQLITE_FULL or "database or disk is full" in text:
                return StorageFailure(507, f"database storage full: {link}")
            if "database is locked" in text:
                return StorageFailure(503, f"database busy: {link}")
        if isinstance(link, DBAPIError) and link.connection_invalidated:
            return StorageFailure(503, f"database connection lost: {link.orig}")
        if _is_postgres_unreachable(link):
            return StorageFailure(503, f"database unreachable: {str(link).strip()}")
        if isinstance(link, TransientBlobStoreError):
            return StorageFailure(503, f"blob store unreachable: {link}")
    return None


__all__ = ["RETRY_AFTER_SECONDS", "StorageFailure", "storage_failure"]
