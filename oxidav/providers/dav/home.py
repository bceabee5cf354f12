"""``CollectionHome``: a user's home of calendars or address books, the same for both rooms.

A home lists the user's own collections (the store creates the default one on first look)
and then the collections of others shared with the user, named ``<uri>_shared_by_<owner>``;
a shared name equal to one of the user's own is skipped, their own comes first. Which shared
collections a user reaches is the grant engine's answer (``oxidav.authz.grants.collections``,
one grant-set read and one store query for a whole listing). A room says only how to make its
resources (``own_resource``, ``shared_resource``) and which kind of resource it shares.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar, Generic, TypeVar

from oxidav.authz.grants.collections import CollectionAccess, Reach
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.providers.dav.collections import CollectionRow, ObjectCollection, OwnedCollection
from oxidav.providers.dav.shared import home_access, parse_shared_name, reachable_rows
from oxidav.providers.dav.users import HomeBackend

BackendT = TypeVar("BackendT", bound=HomeBackend[Any])
#: The store's collection description, the room's resource of an own and of a shared one.
InfoT = TypeVar("InfoT", bound=CollectionRow)
OwnT = TypeVar("OwnT", bound=ObjectCollection[Any])
SharedT = TypeVar("SharedT", bound=ObjectCollection[Any])


class CollectionHome(OwnedCollection[BackendT], Generic[BackendT, InfoT, OwnT, SharedT]):
    """The home of user ``user_id`` (named ``owner_name``) in one room."""

    #: The kind of resource a grant names for a collection of this room.
    shared_kind: ClassVar[ResourceKind]

    def __init__(
        self, path: str, environ: dict[str, Any], backend: BackendT, owner_name: str, user_id: int
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self.user_id = user_id

    def own_resource(self, info: InfoT) -> OwnT:
        """The resource of one of the user's own collections."""
        raise NotImplementedError

    def shared_resource(self, info: InfoT, owner: str, reach: Reach) -> SharedT:
        """The resource of a collection of ``owner`` shared with this user."""
        raise NotImplementedError

    def own_collections(self) -> list[InfoT]:
        """The user's own collections (the default one created on first look)."""
        found: list[InfoT] = self.backend.store.ensure_default(self.user_id)
        return found

    def own_members(self) -> list[OwnT]:
        return [self.own_resource(info) for info in self.own_collections()]

    def _access(self) -> CollectionAccess | None:
        return home_access(self.backend.shares, self.environ, self.user_id)

    def shared_members(self, taken: Collection[str] = ()) -> list[SharedT]:
        """The collections of others shared with this user (one query for all of them; names
        among ``taken``, the user's own, are skipped)."""
        access = self._access()
        if access is None:
            return []
        rows = reachable_rows(
            access, self.shared_kind, self.backend.store.collections_with_owners, taken
        )
        return [self.shared_resource(info, owner, reach) for info, owner, reach in rows]

    def shared_member(self, name: str) -> SharedT | None:
        """The shared collection called ``name`` in this home, if a grant reaches it."""
        parsed = parse_shared_name(name)
        access = self._access()
        if parsed is None or access is None:
            return None
        uri, owner_name = parsed
        owner = self.backend.user(owner_name)
        if owner is None or owner.id == self.user_id:
            return None
        info = self.backend.store.collection(owner.id, uri)
        if info is None:
            return None
        reach = access.visible(Resource(self.shared_kind, info.id, owner.id))
        return None if reach is None else self.shared_resource(info, owner.username, reach)

    def get_member_names(self) -> list[str]:
        return [str(member.name) for member in self.get_member_list()]

    def get_member_list(self) -> list[OwnT | SharedT]:
        own = self.own_members()
        taken = {member.info.uri for member in own}
        return [*own, *self.shared_members(taken)]
