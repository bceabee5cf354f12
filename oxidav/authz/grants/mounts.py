"""Mounts: the files and folders shared with a user, as they appear in the user's own tree.

Nextcloud clients only ever talk to ``/remote.php/dav/files/<self>/…``, so every file or folder
grant that reaches a user (a grant to them or to one of their groups, unexpired, on a live node
of another user) appears in their tree as a *mount point*: a member of the folder
``Settings.share_folder`` (the root by default; e.g. ``/Shared``, created on first need) named
like the shared node. Requests below a mount point are served from the owner's tree through a
``TreeView`` (``oxidav.authz.grants.views``) and decided by the grant engine like the owner's URL.

**Names are stored per recipient** (``grants.mount_names``, Nextcloud's ``file_target``):
a share is named when the recipient's table first holds it — after the shared node, made
unique next to the user's own nodes in that folder and his other mounts (``name (2)``,
``name (3)``…, before the extension for files: ``a (2).txt``) — and keeps that name: a later
share with the same name gets the next free one, the owner's renames do not move it, and the
recipient may rename it (MOVE of the mount point within the folder, ``policy``).

**Cost.** ``MountService.table`` reads through the request's ``RequestAuthz``: the grants
generation (one primary-key read) and the principal's grant set (cached per generation). A user
who holds no file or folder grant pays nothing more; otherwise one query loads the shared nodes
with their owners' names (a reshare among them is weighed by what its maker holds: the maker's
grant set and, for a node below a folder share, its ancestor chain), one reads the stored names
and one finds which of those and of the candidate names are the user's own (plus one lookup of
the share folder when it is not the root); a write only when a name is new or changed.
Nothing is cached across requests, so a revocation or a trashed share shows on the very next
request.

A user with no mount at all is remembered as such for ``NO_MOUNTS_SECONDS`` (the common case:
most users hold no share, and most requests then skip even the generation read). This can only
delay a *new* share's appearance in another process by that long; it never lets anything
through, and a grant made in this process shows at once (``generation.local_changes``).

**Etag roll-up.** The folder holding the mounts and each of its ancestors answer with an etag
combined from their own and every mount's (name, id, etag): a change anywhere inside a share
rolls up to the owner's shared node, and from there into the recipient's folders, so sync
clients descend into it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from oxidav.authz.grants.engine import RequestAuthz
from oxidav.authz.grants.generation import local_changes
from oxidav.authz.grants.mount_names import assign_names, names_to_check, save, stem, stored_names
from oxidav.authz.grants.resources import Resource
from oxidav.authz.grants.views import TreeView
from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.db.models.users import User
from oxidav.environ import ENVIRON_MOUNTS
from oxidav.tree import InvalidName, TreeError, ensure_root, make_folder, normalize_path, resolve
from oxidav.tree.types import NODE_COLUMNS, NodeInfo

log = logging.getLogger("oxidav.authz")

#: How long "this user has no mounts" is remembered (see the module docstring).
NO_MOUNTS_SECONDS = 2.0
_NO_MOUNTS_MAX = 10_000


@dataclass(frozen=True, slots=True)
class Mount:
    """One share as the recipient sees it: ``name`` in their mount folder, the owner's node."""

    name: str
    node: NodeInfo
    owner: str


@dataclass(frozen=True)
class MountTable:
    """The mounts of one user, all in the folder at tree path ``folder``."""

    user_id: int
    username: str
    folder: str
    mounts: tuple[Mount, ...] = ()

    def get(self, name: str) -> Mount | None:
        """The mount named ``name`` (NFC-normalized) in the mount folder."""
        wanted = unicodedata.normalize("NFC", name)
        for mount in self.mounts:
            if mount.name == wanted:
                return mount
        return None

    def locate(self, tree_path: str) -> tuple[Mount, str] | None:
        """The mount a path of the user's tree lies at or below, and the owner's path there."""
        if not tree_path.startswith(self.folder + "/"):
            return None
        name, _, below = tree_path[len(self.folder) + 1 :].partition("/")
        mount = self.get(name)
        if mount is None:
            return None
        return mount, mount.node.path + ("/" + below if below else "")

    def views(self, url_folder: str) -> tuple[TreeView, ...]:
        """A view for each mount, the mount folder being at decoded URL path ``url_folder``
        (for a request on a folder above the mounts that serves members inside them)."""
        base = url_folder.rstrip("/")
        return tuple(
            TreeView(m.owner, m.node.user_id, f"{base}/{m.name}", m.node.path) for m in self.mounts
        )

    def is_mount_root(self, node_id: int) -> bool:
        return any(m.node.id == node_id for m in self.mounts)

    def rolls_up(self, tree_path: str) -> bool:
        """Whether the user's folder at ``tree_path`` is the mount folder or above it."""
        return bool(self.mounts) and (
            tree_path == self.folder or self.folder.startswith(tree_path + "/")
        )

    def etag(self, own_etag: str) -> str:
        """The etag of a folder at or above the mount folder: its own and every mount's."""
        digest = hashlib.blake2b(own_etag.encode(), digest_size=8)
        for mount in self.mounts:
            digest.update(f"\0{mount.name}\0{mount.node.id}\0{mount.node.etag}".encode())
        return digest.hexdigest()


def mount_folder(setting: str) -> str:
    """The tree path of ``Settings.share_folder`` (``""``: the root); ValueError if invalid."""
    try:
        return normalize_path(setting.strip() or "/")
    except InvalidName:
        raise ValueError(f"invalid share_folder {setting!r}") from None


def involves_mounts(folder: str, tree_path: str) -> bool:
    """Whether a request on the user's ``tree_path`` may need the mount table."""
    return (
        tree_path == folder
        or folder.startswith(tree_path + "/")
        or tree_path.startswith(folder + "/")
    )


def name_mounts(
    shared: Sequence[tuple[NodeInfo, str]], names: Mapping[int, str]
) -> tuple[Mount, ...]:
    """The mounts of ``shared`` (node, owner) under their ``names`` (by node id), by name."""
    return tuple(
        sorted((Mount(names[node.id], node, owner) for node, owner in shared), key=lambda m: m.name)
    )


class MountService:
    """Builds a user's ``MountTable`` for one request (see the module docstring)."""

    def __init__(self, db: Database, share_folder: str = "") -> None:
        self.db = db
        self.folder = mount_folder(share_folder)
        # user id -> (generation.local_changes() when seen, monotonic deadline)
        self._no_mounts: dict[int, tuple[int, float]] = {}

    def known_without_mounts(self, user_id: int) -> bool:
        """Whether ``user_id`` is remembered as holding no mount, so that ``table`` would
        answer an empty table without a query (see the module docstring)."""
        seen = self._no_mounts.get(user_id)
        return seen is not None and seen[0] == local_changes() and time.monotonic() < seen[1]

    def table(self, authz: RequestAuthz, *, make_folder: bool = True) -> MountTable:
        """The user's mounts; the share folder is created on first need unless
        ``make_folder`` is false (a caller inside a write transaction: the names are the
        same, as a missing folder holds no name of the user's own)."""
        principal = authz.principal
        me = principal.user_id
        empty = MountTable(me, principal.username, self.folder)
        if self.known_without_mounts(me):
            return empty
        table = self._read_table(authz, empty, make_folder)
        if table.mounts:
            self._no_mounts.pop(me, None)
        else:
            if len(self._no_mounts) >= _NO_MOUNTS_MAX:
                self._no_mounts.clear()
            self._no_mounts[me] = (local_changes(), time.monotonic() + NO_MOUNTS_SECONDS)
        return table

    def _read_table(self, authz: RequestAuthz, empty: MountTable, make_folder: bool) -> MountTable:
        principal = authz.principal
        me = principal.user_id
        grants = authz.grant_set()
        wanted = {
            rid: held.owner_id
            for (kind, rid), held in grants.held.items()
            if kind.is_node and held.owner_id != me
        }
        if not wanted:
            return empty
        with self.db.read() as session:
            found = _shared_nodes(session, wanted)
        # A reshare whose maker no longer holds the share bit is worth nothing: no mount.
        shared = [(node, owner) for node, owner in found if authz.granted(Resource.node(node))]
        if not shared:
            return empty
        with self.db.read() as session:
            folder = resolve(session, me, self.folder)
            stored = stored_names(session, me)
        if folder is None and not make_folder:
            names, _ = assign_names(shared, stored, set())
            return MountTable(me, principal.username, self.folder, name_mounts(shared, names))
        if folder is None:
            folder = self._make_folder(me)
        if folder is None or not folder.is_folder:
            return empty
        with self.db.read() as session:
            taken = _taken_names(session, folder.id, names_to_check(shared, stored))
        names, plan = assign_names(shared, stored, taken)
        if plan and make_folder:
            save(self.db, me, plan)
        return MountTable(me, principal.username, self.folder, name_mounts(shared, names))

    def _make_folder(self, user_id: int) -> NodeInfo | None:
        """Create the share folder (and its parents) in the user's tree, as Nextcloud does."""
        ensure_root(self.db, user_id)
        parts = self.folder.split("/")[1:]
        for depth in range(1, len(parts) + 1):
            path = "/" + "/".join(parts[:depth])
            try:
                with self.db.write() as session:
                    if resolve(session, user_id, path) is None:
                        make_folder(session, user_id, path)
            except TreeError as exc:  # made by a concurrent request, or a file is in the way
                log.info("share folder %r of user %d: %s", path, user_id, exc)
        with self.db.read() as session:
            return resolve(session, user_id, self.folder)


def _shared_nodes(session: Session, wanted: dict[int, int]) -> list[tuple[NodeInfo, str]]:
    """The live shared nodes (each of the owner recorded in its grant) and owner names."""
    rows = session.execute(
        select(*NODE_COLUMNS, User.username)
        .join(User, User.id == Node.user_id)
        .where(Node.id.in_(sorted(wanted)), Node.trashed_at.is_(None))
    )
    found: list[tuple[NodeInfo, str]] = []
    for row in rows:
        node = NodeInfo.from_row(tuple(row)[:-1])
        if wanted.get(node.id) == node.user_id:
            found.append((node, str(row[-1])))
    return found


def _taken_names(session: Session, folder_id: int, names: Sequence[tuple[str, bool]]) -> set[str]:
    """The user's own names in the mount folder that a mount's name could collide with."""
    conditions: list[Any] = []
    for name, is_folder in names:
        conditions.append(Node.name == name)
        conditions.append(Node.name.startswith(stem(name, is_folder) + " (", autoescape=True))
    stmt = select(Node.name).where(
        Node.parent_id == folder_id, Node.trashed_at.is_(None), or_(*conditions)
    )
    return {str(name) for name in session.scalars(stmt)}


def mounts_of(environ: Mapping[str, Any]) -> MountTable | None:
    """The caller's mount table the authz middleware left for this request, if any."""
    table = environ.get(ENVIRON_MOUNTS)
    return table if isinstance(table, MountTable) else None
