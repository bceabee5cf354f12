"""Who keeps a WebDAV lock and who may remove one: the lock rules of the authz room.

A lock (RFC 4918 §6) is rooted at the canonical files URL of a node
(``/remote.php/dav/files/<owner>/<path>``) and held by a principal: a user's name, or
``link:<id>`` when it was taken through a public link (``link_principal``, set by the link
middleware under ``ENVIRON_LOCK_HOLDER``; a user name never holds a ``:``, Basic credentials
could not carry it).

- **A lock stands while its holder may still write the node** (``LockHolders.stale``): the
  node's owner always; a user while the grants that reach him (reshares weighed by the engine,
  as on every request) carry the update bit on the node; a link while it exists, has not
  expired, edits, and covers the node. A lock whose holder lost that access — a grant revoked,
  reduced or expired, a recipient who left the share, a reshare settled away, a link deleted
  or expired — is treated as gone by the lock storage, which deletes it on the next request
  that meets it. A lock with an empty principal (taken through a link before links had a
  principal of their own) stands until it times out or is removed.
- **The owner of a node may remove any lock on it** (``may_unlock``), with its token, as in
  Nextcloud/SabreDAV; anyone else only their own.

**Cost.** Nothing for locks held by the node's owner (no query); per lock held by someone
else, a path resolution and the holder's bits there, his grants read once per check (a fresh
engine: no cache outlives the check).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.decision import ALLOW, Decision
from oxidav.authz.grants.engine import GrantEngine, RequestAuthz
from oxidav.authz.grants.resources import Resource
from oxidav.authz.grants.roles import Permission
from oxidav.authz.links.store import LINK_PRINCIPAL_PREFIX, LinkMode
from oxidav.db import Database, utcnow
from oxidav.db.models.links import PublicLink
from oxidav.db.models.users import User
from oxidav.tree import InvalidName, NodeInfo, get_node, normalize_path, resolve
from oxidav.urls import FILES


def node_place(root: str) -> tuple[str, str] | None:
    """``(owner, tree path)`` of a lock root, None if it is not a files URL."""
    path = unquote(root)
    if not path.startswith(FILES + "/"):
        return None
    owner, _, rest = path[len(FILES) + 1 :].partition("/")
    if not owner:
        return None
    try:
        return owner, normalize_path(rest)
    except InvalidName:
        return None


def may_unlock(caller: str, lock: dict[str, Any]) -> Decision:
    """May ``caller`` remove ``lock`` (whose token they sent)? Its holder, or the node's owner."""
    if caller and caller == lock.get("principal"):
        return ALLOW
    place = node_place(str(lock.get("root", "")))
    if caller and place is not None and place[0] == caller:
        return ALLOW
    return Decision(False, 403, "the lock was taken by another user")


class LockHolders:
    """Decides which stored locks still stand (module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def stale(self, locks: Iterable[dict[str, Any]]) -> set[str]:
        """The tokens of ``locks`` whose holders may no longer write the locked node."""
        foreign = [lock for lock in locks if self._needs_check(lock)]
        if not foreign:
            return set()
        gone: set[str] = set()
        with self.db.read() as session:
            engine = GrantEngine(self.db)
            holders: dict[str, RequestAuthz | None] = {}
            for lock in foreign:
                if not self._stands(session, engine, holders, lock):
                    gone.add(str(lock["token"]))
        return gone

    @staticmethod
    def _needs_check(lock: dict[str, Any]) -> bool:
        principal = str(lock.get("principal") or "")
        place = node_place(str(lock.get("root", "")))
        return bool(principal) and place is not None and place[0] != principal

    def _stands(
        self,
        session: Session,
        engine: GrantEngine,
        holders: dict[str, RequestAuthz | None],
        lock: dict[str, Any],
    ) -> bool:
        place = node_place(str(lock["root"]))
        assert place is not None
        owner, tree_path = place
        owner_id = session.scalar(select(User.id).where(User.username == owner))
        if owner_id is None:
            return False
        node = _nearest_node(session, int(owner_id), tree_path)
        if node is None:
            return False
        principal = str(lock["principal"])
        if principal.startswith(LINK_PRINCIPAL_PREFIX):
            return _link_covers(session, principal[len(LINK_PRINCIPAL_PREFIX) :], node)
        if principal not in holders:  # one engine context per holder: his grants read once
            user_id = session.scalar(select(User.id).where(User.username == principal))
            holders[principal] = (
                None
                if user_id is None
                else engine.request(Principal(int(user_id), principal), session)
            )
        holder = holders[principal]
        return holder is not None and bool(holder.bits(Resource.node(node)) & Permission.UPDATE)


def _nearest_node(session: Session, owner_id: int, tree_path: str) -> NodeInfo | None:
    """The node at ``tree_path``, or its nearest existing ancestor (a lock may outlive its
    node for a moment: DELETE and MOVE drop the locks in their own transaction)."""
    while True:
        node = resolve(session, owner_id, tree_path)
        if node is not None or not tree_path:
            return node
        tree_path = tree_path.rsplit("/", 1)[0]


def _link_covers(session: Session, link_id: str, node: NodeInfo) -> bool:
    """Link ``link_id`` exists, is live, edits, and reaches ``node``."""
    if not link_id.isdigit():
        return False
    link = session.get(PublicLink, int(link_id))
    if link is None or link.mode != LinkMode.EDIT.value:
        return False
    if link.expires_at is not None and link.expires_at <= utcnow():
        return False
    top = get_node(session, link.resource_id)
    if top is None or top.user_id != node.user_id or top.user_id != link.owner_id:
        return False
    return node.path == top.path or node.path.startswith(top.path + "/")
