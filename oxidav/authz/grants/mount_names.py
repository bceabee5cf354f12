"""Stored mount names: the name each recipient sees a share under (Nextcloud's ``file_target``).

A share gets its name in the recipient's share folder the first time his mount table is built
with it (``MountService.table``), and keeps it: a later share of a node with the same name
gets the next free one (``Proj (2)``, ``a (2).txt``), never this one. The rows live in
``mount_names`` (``oxidav.db.models.mount_names``), one per (recipient, shared node).

**Naming** (``assign_names``, pure): mounts that hold a stored name keep it, the oldest row
first; a new mount is named after the shared node (a shared root folder after its owner),
avoiding the recipient's own names in the folder and every name already given, in (name, node
id) order — the rule that computed every name before names were stored, so nothing changes at
upgrade. Should one of the recipient's own nodes come to hold a mount's stored name (a restore
from the trash; a request cannot create one, as the path names the mount), the own node keeps
it and the mount moves to the next free name, stored, as Nextcloud's
``SharedMount::verifyMountPoint`` does. Two rows with one name (concurrent first requests)
resolve the same way: the older row keeps it.

**Leaving and revoking**: a row whose node no longer reaches the recipient is deleted when his
table is next saved, so a share made again is named afresh and cannot reclaim a name another
share has since taken.

**Renaming** (``rename``): MOVE of a mount point within the share folder stores the new name for
that recipient only; the owner's node and the other recipients' names are untouched.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from oxidav.db import Database
from oxidav.db.models.mount_names import MountName
from oxidav.tree.names import MAX_NAME_CHARS
from oxidav.tree.types import NodeInfo

log = logging.getLogger("oxidav.authz")


@dataclass(frozen=True, slots=True)
class StoredName:
    """One ``mount_names`` row: the recipient's name for a node of ``owner_id``."""

    row_id: int
    owner_id: int
    name: str


@dataclass
class NamePlan:
    """What ``assign_names`` found to store: names to write, rows of departed shares."""

    #: (node id, owner id, name) to insert or update.
    upserts: list[tuple[int, int, str]] = field(default_factory=list)
    #: Node ids whose rows no longer name a mount.
    stale: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.stale)


def base_name(node: NodeInfo, owner: str) -> str:
    """What a new mount of ``node`` is named after: its name (a root folder: its owner's)."""
    return node.name or owner


def candidate(name: str, is_folder: bool, n: int) -> str:
    """``name`` with `` (n)`` before a file's extension (Nextcloud's collision names); the
    stem is shortened when the result would be longer than a name may be."""
    if n == 1:
        return name
    suffix = f" ({n})"
    before, dot, ext = name.rpartition(".")
    if is_folder or not dot or not before or len(ext) + len(suffix) >= MAX_NAME_CHARS - 1:
        return name[: MAX_NAME_CHARS - len(suffix)] + suffix
    return f"{before[: MAX_NAME_CHARS - len(suffix) - len(ext) - 1]}{suffix}.{ext}"


def stem(name: str, is_folder: bool) -> str:
    """The part of ``name`` that ``candidate`` numbers."""
    before, dot, _ = name.rpartition(".")
    return name if is_folder or not dot or not before else before


def stored_names(session: Session, user_id: int) -> dict[int, StoredName]:
    """The recipient's stored names by node id."""
    rows = session.execute(
        select(MountName.id, MountName.node_id, MountName.owner_id, MountName.name).where(
            MountName.user_id == user_id
        )
    )
    return {
        int(node_id): StoredName(int(row_id), int(owner_id), str(name))
        for row_id, node_id, owner_id, name in rows
    }


def names_to_check(
    shared: Sequence[tuple[NodeInfo, str]], stored: dict[int, StoredName]
) -> list[tuple[str, bool]]:
    """(name, is folder) of every name a mount could be given, for the own-names query."""
    out: list[tuple[str, bool]] = []
    for node, owner in shared:
        out.append((base_name(node, owner), node.is_folder))
        row = stored.get(node.id)
        if row is not None:
            out.append((row.name, node.is_folder))
    return out


def assign_names(
    shared: Sequence[tuple[NodeInfo, str]], stored: dict[int, StoredName], taken: set[str]
) -> tuple[dict[int, str], NamePlan]:
    """Each shared node's name (by node id) next to the recipient's own ``taken`` names, and
    what to store for it (see the module docstring)."""
    used = set(taken)
    names: dict[int, str] = {}
    plan = NamePlan()
    pending: list[tuple[str, int, NodeInfo]] = []  # (base, first number, node)

    def row_of(node: NodeInfo) -> StoredName | None:
        row = stored.get(node.id)
        return row if row is not None and row.owner_id == node.user_id else None

    def age(item: tuple[NodeInfo, str]) -> float:
        row = row_of(item[0])
        return row.row_id if row is not None else math.inf

    for node, owner in sorted(shared, key=age):
        row = row_of(node)
        if row is not None and row.name not in used:
            names[node.id] = row.name
            used.add(row.name)
        elif row is not None:
            pending.append((row.name, 2, node))  # taken by an own node or an older row
        else:
            pending.append((base_name(node, owner), 1, node))
    for base, first, node in sorted(pending, key=lambda p: (p[0], p[2].id)):
        n = first
        while (name := candidate(base, node.is_folder, n)) in used:
            n += 1
        used.add(name)
        names[node.id] = name
        plan.upserts.append((node.id, node.user_id, name))
    live = {node.id for node, _ in shared}
    plan.stale = sorted(node_id for node_id in stored if node_id not in live)
    return names, plan


def save(db: Database, user_id: int, plan: NamePlan) -> None:
    """Store ``plan`` for the recipient; a concurrent request that stored first wins (the
    next table reads its rows)."""
    try:
        with db.write() as session:
            if plan.stale:
                session.execute(
                    delete(MountName).where(
                        MountName.user_id == user_id, MountName.node_id.in_(plan.stale)
                    )
                )
            _upsert(session, user_id, plan.upserts)
    except IntegrityError as exc:
        log.info("mount names of user %d stored concurrently: %s", user_id, exc.orig)
    except DBAPIError as exc:  # the names still answer this request; the next one retries
        log.warning("mount names of user %d not stored: %s", user_id, exc.orig)


def rename(db: Database, user_id: int, node_id: int, owner_id: int, name: str) -> None:
    """Store ``name`` as the recipient's name of the mount of ``node_id``."""
    with db.write() as session:
        _upsert(session, user_id, [(node_id, owner_id, name)])


def _upsert(session: Session, user_id: int, rows: Iterable[tuple[int, int, str]]) -> None:
    for node_id, owner_id, name in rows:
        row = session.scalar(
            select(MountName).where(MountName.user_id == user_id, MountName.node_id == node_id)
        )
        if row is None:
            session.add(MountName(user_id=user_id, node_id=node_id, owner_id=owner_id, name=name))
        else:
            row.owner_id = owner_id
            row.name = name
    session.flush()
