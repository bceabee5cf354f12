"""``CollectionStore``: the one contract the stores behind CalDAV and CardDAV keep.

A store holds collections (calendars, address books) owned by users, each a set of named text
objects (events and tasks, cards) with a change log. The DAV core — homes, shared collections,
object collections, sync-collection, multiget — speaks only this vocabulary; what differs
(creating a collection from MKCALENDAR or MKCOL properties, parsing and checking an object on
PUT, queries) stays with each room. ``oxidav.calendars.CalendarStore`` and
``oxidav.contacts.ContactStore`` implement it; ``CALENDAR_STORE`` / ``CONTACT_STORE`` in the
providers let the type checker prove it.

Invariants every implementation keeps: a collection is named by ``(owner id, uri)`` and known
by its id; ``ensure_default`` creates the user's first collection once and lists them all; a
change to an object or a deletion moves the collection's sync token forward, and
``changes_since(token)`` of a token from another collection or a purged past raises
``oxidav.sync.InvalidSyncToken``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, TypeVar

from oxidav.sync import ChangeSet

#: The store's description of a collection, of an object (no body), of a stored object (body).
CollectionT = TypeVar("CollectionT")
ObjectT = TypeVar("ObjectT")
StoredT = TypeVar("StoredT")


class CollectionStore(Protocol[CollectionT, ObjectT, StoredT]):
    """Collections of text objects per user, with a change log (module docstring)."""

    def collections(self, user_id: int, /) -> list[CollectionT]:
        """The user's own collections."""
        ...

    def collection(self, user_id: int, uri: str, /) -> CollectionT | None:
        """One of the user's collections by its URI segment."""
        ...

    def collections_with_owners(self, ids: Collection[int], /) -> list[tuple[CollectionT, str]]:
        """The collections with these ids and their owners' user names (shared collections)."""
        ...

    def ensure_default(self, user_id: int, /) -> list[CollectionT]:
        """The user's collections, after creating the default one if they had none."""
        ...

    def delete_collection(self, collection_id: int, /) -> None:
        """Delete a collection with its objects and change log."""
        ...

    def sync_token(self, collection_id: int, /) -> str:
        """The collection's current DAV:sync-token."""
        ...

    def changes_since(
        self, collection_id: int, token: str | None, limit: int | None = None, /
    ) -> ChangeSet:
        """The changes since ``token`` (every present object if None), at most ``limit``."""
        ...

    def objects(self, collection_id: int, /) -> list[ObjectT]:
        """Every object of the collection, without bodies."""
        ...

    def object(self, collection_id: int, name: str, /) -> StoredT | None:
        """One object with its body."""
        ...

    def objects_named(self, collection_id: int, names: Collection[str], /) -> dict[str, StoredT]:
        """The objects of these names that exist, with their bodies."""
        ...
