"""The process-lived backend state of the DAV rooms: user lookups and first-use homes.

``UserDirectory`` answers "who is user ``name``" from the users table, cached for a few
seconds (WsgiDAV resolves a path several times per request). ``HomeBackend`` adds a room's
store (a ``CollectionStore``), the rule that a home gets its default collection the first time
this process sees it, and the process-wide ``SharedCollections`` through which the room asks
which collections of others a user reaches.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import select

from oxidav.authz.grants.collections import SharedCollections
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.providers.dav.store import CollectionStore
from oxidav.settings import Settings

StoreT = TypeVar("StoreT", bound=CollectionStore[Any, Any, Any])

USER_CACHE_SECONDS = 30.0
#: More cached users than this and the cache starts over.
USER_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class UserRecord:
    id: int
    username: str
    display_name: str
    email: str | None


class UserDirectory:
    """User lookups of one provider instance."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._users: dict[str, tuple[float, UserRecord | None]] = {}
        self._lock = threading.Lock()

    def user(self, username: str) -> UserRecord | None:
        """The user named ``username`` (None if there is none), cached for a few seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._users.get(username)
        if cached is not None and now - cached[0] < USER_CACHE_SECONDS:
            return cached[1]
        with self.db.read() as session:
            row = session.execute(
                select(User.id, User.username, User.display_name, User.email).where(
                    User.username == username
                )
            ).one_or_none()
        record = None if row is None else UserRecord(int(row[0]), row[1], row[2] or "", row[3])
        with self._lock:
            if len(self._users) > USER_CACHE_SIZE:
                self._users.clear()
            self._users[username] = (now, record)
        return record


class HomeBackend(UserDirectory, Generic[StoreT]):
    """A room's backend: its store, user lookups, each home prepared once per process, and
    the collections shared with a user (``oxidav.authz.grants.collections`` decides)."""

    def __init__(self, db: Database, settings: Settings, store: StoreT) -> None:
        super().__init__(db, settings)
        self.store = store
        self._homes_ready: set[int] = set()
        self.shares = SharedCollections(db)

    def display_name(self, username: str) -> str:
        """A user's display name (their user name if they have none or are unknown)."""
        user = self.user(username)
        return (user.display_name if user is not None else "") or username

    def create_default(self, user_id: int) -> None:
        """Create the default collection of ``user_id``'s home if the home is empty
        (idempotent: two threads may both run it for a new home)."""
        self.store.ensure_default(user_id)

    def prepare_home(self, user_id: int) -> None:
        """Give a user the default collection the first time this process sees their home
        (docs/architecture.md#urls), before anything else happens there: a client whose first
        request is an MKCOL still finds the default next to its own collection. One query per
        user."""
        with self._lock:
            if user_id in self._homes_ready:
                return
        self.create_default(user_id)
        with self._lock:
            self._homes_ready.add(user_id)
