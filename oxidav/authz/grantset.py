"""``GrantSet``: one principal's unexpired grants, indexed for the engine's in-memory decisions.

Several grants on the same resource (to the user and to their groups) collapse into the
strongest role. A grant counts only for a resource of the owner recorded with it, so a grant on
a purged node can never apply to another user's node that later got the same id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from oxidav.authz.lookup import GrantRow
from oxidav.authz.resources import ResourceKind
from oxidav.authz.roles import Role, strongest


@dataclass(frozen=True)
class GrantSet:
    #: (kind, resource id) -> (owner id, strongest role).
    roles: dict[tuple[ResourceKind, int], tuple[int, Role]] = field(default_factory=dict)
    #: Owners of the folders granted: only their trees need an ancestor walk (the cascade).
    folder_owners: frozenset[int] = frozenset()
    #: The earliest expiry among the grants: the set is true only before it.
    valid_until: datetime | None = None

    @classmethod
    def from_rows(cls, rows: Iterable[GrantRow]) -> GrantSet:
        roles: dict[tuple[ResourceKind, int], tuple[int, Role]] = {}
        owners: set[int] = set()
        valid_until: datetime | None = None
        for row in rows:
            key = (row.kind, row.resource_id)
            held = roles.get(key)
            best = strongest(held[1] if held and held[0] == row.owner_id else None, row.role)
            assert best is not None
            roles[key] = (row.owner_id, best)
            if row.kind is ResourceKind.FOLDER:
                owners.add(row.owner_id)
            if row.expires_at is not None and (valid_until is None or row.expires_at < valid_until):
                valid_until = row.expires_at
        return cls(roles, frozenset(owners), valid_until)

    def role(self, kind: ResourceKind, resource_id: int, owner_id: int) -> Role | None:
        """The role granted directly on this resource (None: no grant)."""
        held = self.roles.get((kind, resource_id))
        if held is None or held[0] != owner_id:
            return None
        return held[1]

    def cascade(self, chain: Iterable[int], owner_id: int) -> Role | None:
        """The strongest folder grant on any node of ``chain`` (a folder and its ancestors)."""
        best: Role | None = None
        for node_id in chain:
            best = strongest(best, self.role(ResourceKind.FOLDER, node_id, owner_id))
        return best

    def is_valid_at(self, now: datetime) -> bool:
        return self.valid_until is None or now < self.valid_until
