"""``GrantSet``: one principal's unexpired grants, indexed for the engine's in-memory decisions.

Grants on the same resource (to the user and to their groups) are kept as one ``Held``: the
bits of the grants made by the resource's owner (or an operator) added up, and, apart, each
*reshare* — a grant made by another user who held the share bit — with the user who made it.
A reshare is worth only what its maker still holds (the engine asks on every request), so
revoking, reducing or expiring the maker's grant reduces or removes it at once.

A grant counts only for a resource of the owner recorded with it, so a grant on a purged node
can never apply to another user's node that later got the same id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from oxidav.authz.grants.lookup import GrantRow
from oxidav.authz.grants.resources import ResourceKind


@dataclass(frozen=True, slots=True)
class Reshare:
    """A grant made by ``maker`` (not the owner): worth ``bits`` & what ``maker`` holds."""

    maker: int
    bits: int
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class Held:
    """What the principal's grants on one resource give."""

    owner_id: int
    #: The bits of the grants made by the owner or an operator (0: none).
    bits: int = 0
    #: The latest expiry among those grants (None: one of them never expires).
    expires_at: datetime | None = None
    reshares: tuple[Reshare, ...] = ()


def later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later of two ends (None: never ends)."""
    return None if a is None or b is None else max(a, b)


def earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    """The earlier of two ends (None: never ends)."""
    if a is None:
        return b
    return a if b is None else min(a, b)


@dataclass(frozen=True)
class GrantSet:
    #: (kind, resource id) -> what is held there.
    held: dict[tuple[ResourceKind, int], Held] = field(default_factory=dict)
    #: Owners of the folders granted: only their trees need an ancestor walk (the cascade).
    folder_owners: frozenset[int] = frozenset()
    #: The earliest expiry among the grants: the set is true only before it.
    valid_until: datetime | None = None

    @classmethod
    def from_rows(cls, rows: Iterable[GrantRow]) -> GrantSet:
        held: dict[tuple[ResourceKind, int], Held] = {}
        owners: set[int] = set()
        valid_until: datetime | None = None
        for row in rows:
            key = (row.kind, row.resource_id)
            before = held.get(key)
            if before is None or before.owner_id != row.owner_id:
                before = Held(row.owner_id)
            if row.created_by is None or row.created_by == row.owner_id:
                expires = (
                    row.expires_at if not before.bits else later(before.expires_at, row.expires_at)
                )
                held[key] = Held(
                    row.owner_id, before.bits | row.permissions, expires, before.reshares
                )
            else:
                reshare = Reshare(row.created_by, row.permissions, row.expires_at)
                held[key] = Held(
                    row.owner_id, before.bits, before.expires_at, (*before.reshares, reshare)
                )
            if row.kind is ResourceKind.FOLDER:
                owners.add(row.owner_id)
            if row.expires_at is not None and (valid_until is None or row.expires_at < valid_until):
                valid_until = row.expires_at
        return cls(held, frozenset(owners), valid_until)

    def on(self, kind: ResourceKind, resource_id: int, owner_id: int) -> Held | None:
        """The grants made directly on this resource (None: none)."""
        found = self.held.get((kind, resource_id))
        if found is None or found.owner_id != owner_id:
            return None
        return found

    def is_valid_at(self, now: datetime) -> bool:
        return self.valid_until is None or now < self.valid_until
