"""The engine's reads: a principal's live grants (one query) and a folder's ancestors (one).

``principal_grants`` resolves the user's groups with a recursive CTE and returns every
unexpired grant to the user or to any of those groups in the same statement.
``folder_chains`` returns, for any number of folders, the ids of each folder and all its
ancestors, read through the tree's materialized paths (docs/architecture.md#nodes) in one statement;
it reads the
``nodes`` table but writes nothing there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from oxidav.authz.grants.groups import groups_of_user
from oxidav.authz.grants.resources import ResourceKind, ancestor_paths
from oxidav.db.models.authz import Grant
from oxidav.db.models.tree import Node


@dataclass(frozen=True, slots=True)
class GrantRow:
    kind: ResourceKind
    resource_id: int
    owner_id: int
    permissions: int
    expires_at: datetime | None
    #: Who made the grant (None: an operator).
    created_by: int | None = None


def principal_grants(session: Session, user_id: int, now: datetime) -> list[GrantRow]:
    """Every grant to ``user_id`` or to a group they belong to, unexpired at ``now``."""
    groups = groups_of_user(user_id)
    stmt = select(
        Grant.resource_kind,
        Grant.resource_id,
        Grant.owner_id,
        Grant.permissions,
        Grant.expires_at,
        Grant.created_by,
    ).where(
        or_(Grant.subject_user_id == user_id, Grant.subject_group_id.in_(select(groups.c.gid))),
        or_(Grant.expires_at.is_(None), Grant.expires_at > now),
    )
    return [
        GrantRow(ResourceKind(kind), rid, owner, int(bits), expires, maker)
        for kind, rid, owner, bits, expires, maker in session.execute(stmt)
    ]


@dataclass(frozen=True, slots=True)
class FolderRef:
    """A folder whose ancestors are wanted: its owner, id and materialized path."""

    owner_id: int
    folder_id: int
    path: str


def folder_chains(
    session: Session, folders: Sequence[FolderRef]
) -> dict[FolderRef, tuple[int, ...]]:
    """For each folder, the live node ids at its ancestor paths and its own, root first.

    A folder whose chain is broken (it is no longer at ``path``, or an ancestor is gone: the
    caller's view is stale) maps to ``()``, which grants nothing.
    """
    if not folders:
        return {}
    wanted = {f: ancestor_paths(f.path) for f in folders}
    by_owner: dict[int, set[str]] = {}
    for folder, paths in wanted.items():
        by_owner.setdefault(folder.owner_id, set()).update(paths)
    stmt = select(Node.user_id, Node.path, Node.id).where(
        Node.trashed_at.is_(None),
        or_(
            *(
                and_(Node.user_id == owner, Node.path.in_(sorted(paths)))
                for owner, paths in by_owner.items()
            )
        ),
    )
    found = {(owner, path): node_id for owner, path, node_id in session.execute(stmt)}
    chains: dict[FolderRef, tuple[int, ...]] = {}
    for folder, paths in wanted.items():
        ids = [found.get((folder.owner_id, p)) for p in paths]
        if any(i is None for i in ids) or ids[-1] != folder.folder_id:
            chains[folder] = ()
        else:
            chains[folder] = tuple(i for i in ids if i is not None)
    return chains
