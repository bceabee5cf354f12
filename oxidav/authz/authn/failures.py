"""Where the login throttles keep the failed password checks they count.

``LocalFailures``: in this process's memory, bounded (least recently used keys go first).
``DatabaseFailures``: in the ``login_failures`` table, so that every process behind a balancer
counts the failures made through any of them — an attacker spreading guesses over N processes
gets no more guesses than through one. Keys are stored as digests (no user name in the table);
times are wall-clock seconds, the one clock processes share. It is read and written only on the
slow path of a login (a credential not in the cache, about to cost an argon2 run). A key's rows
older than the window are deleted with its next failure; ``purge_old`` (the server's sweep)
deletes every row older than the window, so the table holds one window of failures.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Protocol

from sqlalchemy import delete, insert, select

from oxidav.db import Database
from oxidav.db.models.users import LoginFailure


class FailureStore(Protocol):
    """Failure times per key within a sliding window."""

    def times(self, key: str, now: float, window: float) -> list[float]:
        """The failures of ``key`` within ``window`` seconds before ``now``, oldest first."""
        ...

    def add(self, keys: Iterable[str], now: float, window: float) -> None:
        """Record one failure at ``now`` for each of ``keys``."""
        ...

    def clear(self, key: str) -> None:
        """Forget the failures of ``key`` (a successful login)."""
        ...


class LocalFailures:
    """Failure times in this process (for one process, and for tests)."""

    def __init__(self, max_per_key: int, max_keys: int = 100_000) -> None:
        self._max_per_key = max_per_key
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._times: OrderedDict[str, deque[float]] = OrderedDict()

    def times(self, key: str, now: float, window: float) -> list[float]:
        with self._lock:
            found = self._times.get(key)
            if found is None:
                return []
            while found and found[0] <= now - window:
                found.popleft()
            if not found:
                del self._times[key]
                return []
            return list(found)

    def add(self, keys: Iterable[str], now: float, window: float) -> None:
        with self._lock:
            for key in keys:
                found = self._times.get(key)
                if found is None:
                    found = self._times[key] = deque(maxlen=self._max_per_key)
                found.append(now)
                self._times.move_to_end(key)
            while len(self._times) > self._max_keys:
                self._times.popitem(last=False)

    def clear(self, key: str) -> None:
        with self._lock:
            self._times.pop(key, None)


class DatabaseFailures:
    """Failure times in the database, shared by every process (module docstring). ``scope``
    keeps the key spaces of two throttles apart (user logins, link passwords)."""

    def __init__(self, db: Database, scope: str) -> None:
        self._db = db
        self._scope = scope

    def _digest(self, key: str) -> str:
        return hashlib.sha256(f"{self._scope}\0{key}".encode()).hexdigest()

    def times(self, key: str, now: float, window: float) -> list[float]:
        with self._db.read() as session:
            found = session.scalars(
                select(LoginFailure.failed_at)
                .where(LoginFailure.key == self._digest(key), LoginFailure.failed_at > now - window)
                .order_by(LoginFailure.failed_at)
            )
            return [float(at) for at in found]

    def add(self, keys: Iterable[str], now: float, window: float) -> None:
        digests = [self._digest(key) for key in keys]
        with self._db.write() as session:
            session.execute(
                delete(LoginFailure).where(
                    LoginFailure.key.in_(digests), LoginFailure.failed_at <= now - window
                )
            )
            if digests:
                session.execute(
                    insert(LoginFailure), [{"key": d, "failed_at": now} for d in digests]
                )

    def clear(self, key: str) -> None:
        with self._db.write() as session:
            session.execute(delete(LoginFailure).where(LoginFailure.key == self._digest(key)))


def purge_old(db: Database, window: float, now: float | None = None) -> int:
    """Delete the failures older than ``window`` seconds (no throttle counts them any more);
    how many rows went."""
    cutoff = (time.time() if now is None else now) - window
    with db.write() as session:
        result = session.execute(delete(LoginFailure).where(LoginFailure.failed_at <= cutoff))
        return int(getattr(result, "rowcount", 0) or 0)
