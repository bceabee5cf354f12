"""Bringing stored reshares in line with what their makers hold, after a grant changed.

The engine already weighs every reshare by what its maker holds on each request (so nothing is
ever allowed through a revoked, reduced or expired grant); ``settle_reshares`` makes the rows
say so too, so that listings and later changes start from the truth: a reshare whose maker no
longer holds the share bit (or read) on its resource is deleted, one that gives more bits than
its maker holds is reduced to theirs, and its expiry is clamped to the maker's. A reshare made
from a reshare is settled in the next round, up to ``MAX_RESHARE_DEPTH`` rounds.

**Cost.** One query for the owner's reshares per round, plus, per reshare, a node lookup and
the maker's grants (a fresh engine per round, so that no cache outlives the transaction).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants import generation
from oxidav.authz.grants.engine import MAX_RESHARE_DEPTH, GrantEngine
from oxidav.authz.grants.grantset import earlier
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Permission
from oxidav.db import Database
from oxidav.db.models.authz import Grant
from oxidav.tree import get_node

_NODE_KINDS = (ResourceKind.FOLDER.value, ResourceKind.FILE.value)


def settle_reshares(session: Session, db: Database, owner_id: int) -> int:
    """Delete or reduce the reshares of ``owner_id``'s files and folders whose makers hold
    less than they gave (module docstring); how many rows changed."""
    changed = 0
    for _ in range(MAX_RESHARE_DEPTH):
        session.flush()
        engine = GrantEngine(db)
        rows = session.scalars(
            select(Grant).where(
                Grant.owner_id == owner_id,
                Grant.resource_kind.in_(_NODE_KINDS),
                Grant.created_by.is_not(None),
                Grant.created_by != owner_id,
            )
        ).all()
        round_changes = 0
        for row in rows:
            node = get_node(session, row.resource_id)
            if node is None or node.user_id != owner_id or row.created_by is None:
                continue
            maker = engine.request(Principal(row.created_by, ""), session)
            held = maker.access(Resource.node(node))
            bits = row.permissions & held.bits
            if not held.bits & Permission.SHARE or not bits & Permission.READ:
                session.delete(row)
                round_changes += 1
                continue
            until = earlier(row.expires_at, held.share_until)
            if bits != row.permissions or until != row.expires_at:
                row.permissions, row.expires_at = bits, until
                round_changes += 1
        if not round_changes:
            break
        generation.bump(session)
        changed += round_changes
    return changed
